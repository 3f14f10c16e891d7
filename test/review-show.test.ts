// `ctl review show` as a person and as a script see it: the real CLI against a real city whose agent
// (`merge = "review"`, the echo example agent running shell commands in its worktree) finished two rounds of work;
// on a terminal (a pty from util-linux `script`) the diff goes through the pager `CTL_PAGER` names — a tiny shell
// script that keeps what it is given — coloured; to a pipe it is plain, unless `--color=always`.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectFailure, expectSuccess, runCtlOnTerminal } from './helpers/cli.js';
import { createSession, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

const ESC = '\u001b[';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

function repository(): string {
  const repo = join(tempDir('ctl-review-show-rig-'), 'web');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'dev@example.invalid');
  git(repo, 'config', 'user.name', 'dev');
  writeFileSync(join(repo, 'README'), 'hello\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  return repo;
}

const CITY = `
[[rigs]]
name = "web"
path = "RIG"

[[agent]]
name = "coder"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0
`;

describe('ctl review show: pager and colour', function () {
  this.timeout(90_000);
  let city: SessionCity;
  /** A review in its second round: feature.txt added in the first, its line two changed in the second. */
  let bead: string;
  /** A review in its first round. */
  let first: string;
  let dir: string;

  const showWith = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    city.sup.ctl(['--city', 'shown', 'review', 'show', ...args], { env });
  const show = (...args: string[]) => showWith({}, ...args);
  /** `ctl review show` with stdout and stderr on a terminal. */
  const onTerminal = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    runCtlOnTerminal(['--city', 'shown', 'review', 'show', ...args], {
      env: { ...city.sup.env, PAGER: undefined, CTL_PAGER: undefined, LESS: undefined, ...env },
      cwd: city.sup.root,
      columns: 120,
    });
  /** A pager that keeps its input, and the LESS it was given, in files named after it. */
  const recordingPager = (name: string): { path: string; read: () => string; less: () => string } => {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\nprintf '%s' "$LESS" > '${path}.less'\ncat > '${path}.out'\n`);
    chmodSync(path, 0o755);
    return { path, read: () => readFileSync(`${path}.out`, 'utf8'), less: () => readFileSync(`${path}.less`, 'utf8') };
  };

  before(async function () {
    dir = tempDir('ctl-review-show-');
    city = await startSessionCity('shown', CITY.replace('RIG', repository()));
    const run = async (id: string, command: string): Promise<void> => {
      const mark = `${Date.now()}-${Math.random()}`;
      await city.api.post(`/session/${id}/messages`, { message: `run ${command}; echo done-${mark}` });
      await waitForTurn(city.api, id, 'assistant', new RegExp(`done-${mark}`));
    };
    const closeForReview = async (id: string): Promise<void> => {
      expect((await city.api.post(`/bead/${id}/close`)).status).to.equal(200);
      await waitUntil('the review to be pending', async () => {
        const r = await city.api.get<{ state: string }>(`/reviews/${id}`);
        return r.status === 200 && r.body.state === 'pending' ? true : undefined;
      });
    };
    const session = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await run(session, `printf 'one\\ntwo\\nthree\\n' > feature.txt && git add . && git commit -q -m 'add feature'`);
    bead = (await city.api.create({ title: 'a feature', metadata: { 'ctl.assigned_session': session } })).id;
    await closeForReview(bead);
    expect((await city.api.post(`/reviews/${bead}/request-changes`, { text: 'say deux' })).status).to.equal(200);
    await waitForTurn(city.api, session, 'assistant', /Changes were requested/);
    await run(session, `printf 'one\\ndeux\\nthree\\n' > feature.txt && git commit -q -am 'say deux'`);
    await closeForReview(bead);

    const other = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await run(other, `printf 'x\\n' > other.txt && git add . && git commit -q -m 'add other'`);
    first = (await city.api.create({ title: 'another', metadata: { 'ctl.assigned_session': other } })).id;
    await closeForReview(first);
  });
  after(async () => city?.sup.cleanup());

  it('to a pipe: the plain diff, no pager run even when one is named', async function () {
    const pager = recordingPager('piped');
    const plain = expectSuccess(await showWith({ CTL_PAGER: pager.path }, bead));
    expect(plain).to.include('+deux');
    expect(plain).to.include('diff --git a/feature.txt b/feature.txt');
    expect(plain.some((l) => l.startsWith('@@ '))).to.equal(true);
    expect(plain.join('\n')).to.not.include(ESC);
    expect(existsSync(`${pager.path}.out`), 'the pager was not run').to.equal(false);
  });

  it('--color=always colours a pipe in git’s colours; --color=never and NO_COLOR leave a terminal plain', async function () {
    const coloured = expectSuccess(await show(bead, '--color=always')).join('\n');
    expect(coloured).to.include(`${ESC}32m+deux${ESC}39m`);
    expect(coloured).to.include(`${ESC}36m@@ -0,0 +1,3 @@`);
    expect(coloured).to.include(`${ESC}1mdiff --git a/feature.txt b/feature.txt${ESC}22m`);
    // Even with NO_COLOR: the flag is the person's word for this run.
    expect(expectSuccess(await showWith({ NO_COLOR: '1' }, bead, '--color=always')).join('\n')).to.include(
      `${ESC}32m+`,
    );

    const never = await onTerminal([bead, '--color=never', '--no-pager']);
    expect(never.code, never.stdout).to.equal(0);
    expect(never.stdout).to.include('+deux');
    expect(never.stdout).to.not.include(ESC);
    const noColor = await onTerminal([bead, '--no-pager'], { NO_COLOR: '1' });
    expect(noColor.stdout).to.include('+deux');
    expect(noColor.stdout).to.not.include(ESC);
    expectFailure(await show(bead, '--color=sometimes'), 'review show', 'expected one of auto, always, never');
  });

  it('on a terminal: through CTL_PAGER (before PAGER), coloured, LESS=FRX unless set; --no-pager prints it', async function () {
    const pager = recordingPager('ctl-pager');
    const ignored = recordingPager('plain-pager');
    const paged = await onTerminal([bead], { CTL_PAGER: pager.path, PAGER: ignored.path });
    expect(paged.code, paged.stdout).to.equal(0);
    // The pager had the whole review, in colour (auto, on a terminal); nothing of it went past the pager.
    const text = pager.read();
    expect(text).to.include(`${ESC}32m+deux${ESC}39m`);
    expect(text).to.include('Bead:');
    expect(paged.stdout).to.not.include('deux');
    expect(pager.less()).to.equal('FRX');
    expect(existsSync(`${ignored.path}.out`), 'PAGER yields to CTL_PAGER').to.equal(false);

    // PAGER when CTL_PAGER is not set; a LESS of the person's own is left as it is.
    const paged2 = await onTerminal([bead], { PAGER: ignored.path, LESS: '-S' });
    expect(paged2.code, paged2.stdout).to.equal(0);
    expect(ignored.read()).to.include('+deux');
    expect(ignored.less()).to.equal('-S');

    const direct = await onTerminal([bead, '--no-pager'], { CTL_PAGER: recordingPager('unused').path });
    expect(direct.code, direct.stdout).to.equal(0);
    expect(direct.stdout).to.include(`${ESC}32m+deux`);
    expect(existsSync(join(dir, 'unused.out'))).to.equal(false);
    // `cat` (or empty) means no pager, as in git.
    const cat = await onTerminal([bead], { CTL_PAGER: 'cat' });
    expect(cat.stdout).to.include('+deux');
  });

  it('a pager that cannot be run is one line naming it, exit 1', async function () {
    const result = await onTerminal([bead], { CTL_PAGER: join(dir, 'no-such-pager') });
    expect(result.code).to.equal(1);
    expect(result.stdout.split('\n').at(-1)).to.match(/^ctl review show: the pager ".*no-such-pager" could not be run/);
  });

  it('--since-last shows only what changed since the round before; in a first round it is refused', async function () {
    const since = expectSuccess(await show(bead, '--since-last'));
    expect(since).to.include('-two');
    expect(since).to.include('+deux');
    expect(since).to.not.include('+one');
    expect(since.some((l) => l.startsWith('(the diff since round 1, '))).to.equal(true);
    const whole = expectSuccess(await show(bead));
    expect(whole).to.include('+one');
    expect(whole).to.not.include('-two');
    expectFailure(await show(first, '--since-last'), 'review show', 'first round');
  });
});
