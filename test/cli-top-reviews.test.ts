import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ctlEntryPath } from '../shared/paths.js';
import { createSession, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { hasTmux } from './helpers/tmux-installed.js';
import { TmuxPane } from './helpers/tmux-pane.js';
import { waitUntil } from './helpers/wait.js';

// `ctl top`'s pending reviews on a real terminal (a detached tmux pane) against a real city whose agent
// (`merge = "review"`, the echo example agent running shell commands in its worktree) finishes work for review:
// the count and the oldest's wait in the REVIEWS heading, the reviews listed when there is room, all live on the
// review events, with nothing asked on a timer.

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

function repository(): string {
  const repo = join(tempDir('ctl-top-reviews-rig-'), 'web');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'dev@example.invalid');
  git(repo, 'config', 'user.name', 'dev');
  writeFileSync(join(repo, 'README'), 'hello\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  return repo;
}

describe('ctl top: pending reviews', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let pane: TmuxPane | undefined;

  before(async function () {
    if (!hasTmux()) this.skip();
    city = await startSessionCity(
      'reviewing',
      `
[[rigs]]
name = "web"
path = "${repository()}"

[[agent]]
name = "coder"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0
`,
    );
    pane = TmuxPane.start([process.execPath, ctlEntryPath(), 'top', `--api=${city.sup.base}`], {
      columns: 110,
      rows: 30,
      cwd: city.dir,
      env: { CTL_HOME: city.sup.home, NO_COLOR: undefined, CI: 'true' },
    });
  });

  after(async () => {
    pane?.close();
    await city?.sup.cleanup();
  });

  /** A session of web/coder commits `file` and closes a bead for it: a pending review. */
  async function finishForReview(file: string): Promise<string> {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const mark = `${Date.now()}-${Math.random()}`;
    await city.api.post(`/session/${id}/messages`, {
      message: `run printf 'x\\n' > ${file} && git add . && git commit -q -m 'add ${file}'; echo done-${mark}`,
    });
    await waitForTurn(city.api, id, 'assistant', new RegExp(`done-${mark}`));
    const bead = (await city.api.create({ title: `add ${file}`, metadata: { 'ctl.assigned_session': id } })).id;
    expect((await city.api.post(`/bead/${bead}/close`)).status).to.equal(200);
    await waitUntil('the review to be pending', async () => {
      const r = await city.api.get<{ state: string }>(`/reviews/${bead}`);
      return r.status === 200 && r.body.state === 'pending' ? true : undefined;
    });
    return bead;
  }

  it('counts the pending reviews with the oldest’s wait and lists them, live as they come and go', async () => {
    await pane!.waitFor(/ctl top — city reviewing .*● live/);
    await pane!.waitFor(/^REVIEWS +none pending$/m);

    const first = await finishForReview('one.txt');
    const screen = await pane!.waitFor(/^REVIEWS +1 pending, oldest \d+s$/m);
    expect(screen).to.match(new RegExp(`^  ${first} +web/coder +\\d+s +1 file, 1 commit · ctl/web/coder/\\S+$`, 'm'));
    expect(screen).to.match(/review\.requested +/);

    const second = await finishForReview('two.txt');
    const both = await pane!.waitFor(/^REVIEWS +2 pending, oldest \d+s$/m);
    // Longest waiting first.
    const listed = both.split('\n').filter((l) => l.startsWith(`  ${first} `) || l.startsWith(`  ${second} `));
    expect(listed.map((l) => l.trim().split(/\s+/)[0])).to.deep.equal([first, second]);

    // Approved and merged: it waits no more, and the screen says so without being asked.
    expect((await city.api.post<{ state: string }>(`/reviews/${first}/approve`)).body.state).to.equal('approved');
    const after = await pane!.waitFor(/^REVIEWS +1 pending, oldest \d+s$/m);
    expect(after).to.not.match(new RegExp(`^  ${first} `, 'm'));
    expect(after).to.match(new RegExp(`^  ${second} `, 'm'));
  });

  it('on a short terminal keeps the count and leaves the list out', async () => {
    pane!.resize(110, 12);
    const screen = await pane!.waitFor(/^REVIEWS +1 pending, oldest \d+s\n(?! {2}\S+ +web\/coder)/m);
    expect(screen).to.match(/^EVENTS/m);
    pane!.resize(110, 30);
    await pane!.waitFor(/^REVIEWS +1 pending.*\n {2}\S+ +web\/coder /m);
  });
});
