import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'smol-toml';
import { packageRoot } from '../shared/paths.js';
import { expectFailure, expectSuccess, runCtl } from './helpers/cli.js';
import { isAlive, killAllMentioning } from './helpers/processes.js';
import { freePort, tempDir, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// What a new user hit following the README on a terminal (issue 19, part C): the real `ctl` against a real
// supervisor, as a person runs it.

describe('a supervisor started on another port is found by every command (no CTL_API)', function () {
  this.timeout(60_000);
  let root: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  const ctl = (...args: string[]) => runCtl(args, { env, cwd: root, timeoutMs: 40_000 });

  before(function () {
    root = tempDir('ctl-cli-port-');
    home = join(root, 'home');
    mkdirSync(home, { recursive: true });
    // supervisor.toml says nothing: without what the supervisor records, clients would go to 8372.
    env = { CTL_HOME: home, HOME: root, CTL_API: undefined, CTL_CITY: undefined };
  });

  after(function () {
    const pid = Number(readFileSync(join(home, 'supervisor.pid'), { encoding: 'utf8', flag: 'a+' }).trim());
    if (pid > 0 && isAlive(pid)) process.kill(pid, 'SIGKILL');
    killAllMentioning(root);
    rmSync(root, { recursive: true, force: true });
  });

  it('start --port N; status, cities and init reach it; restart keeps N; stop', async function () {
    const port = await freePort();
    const started = JSON.parse(
      expectSuccess(await ctl('supervisor', 'start', '--port', String(port), '--json'))[0],
    ) as {
      pid: number;
      api: string;
    };
    expect(started.api).to.equal(`http://127.0.0.1:${port}`);
    expect(expectSuccess(await ctl('supervisor', 'status'))[0]).to.include(`at http://127.0.0.1:${port}`);
    expect(expectSuccess(await ctl('cities'))[0]).to.match(/no cities/i);
    const dir = join(root, 'cities', 'porty');
    expectSuccess(await ctl('init', dir, '--start-command', 'sleep 3600'));
    expect(expectSuccess(await ctl('status', 'porty'))[0]).to.match(/^City porty is running/);

    const restarted = await ctl('supervisor', 'restart', '--json');
    expect(restarted.code, restarted.stderr).to.equal(0);
    const again = JSON.parse(restarted.stdout) as { pid: number; api: string };
    expect(again.api, 'restart listens where the last one did').to.equal(`http://127.0.0.1:${port}`);
    expect(again.pid).to.not.equal(started.pid);
    expect(isAlive(started.pid)).to.equal(false);
    await waitUntil('porty to run under the new supervisor', async () =>
      /^City porty is running/.test((await ctl('status', 'porty')).stdout),
    );
    expectSuccess(await ctl('supervisor', 'stop'));
    expect(isAlive(again.pid)).to.equal(false);
    // Gone: the recorded address goes with it, and the next client looks where supervisor.toml says.
    expectFailure(await ctl('supervisor', 'status'), 'supervisor status', 'not running at http://127.0.0.1:8372');
  });
});

describe('broken config, bad flags and README drift (a running demo city)', function () {
  this.timeout(90_000);
  let sup: TestSupervisor;
  const env = { CTL_CITY: 'demo' };
  const ctl = (...args: string[]) => sup.ctl(args, { env });

  before(async function () {
    sup = await TestSupervisor.start();
    expectSuccess(await sup.ctl(['init', sup.cityDir('demo'), '--template', 'demo']));
  });
  after(async () => sup?.cleanup());

  it('the README demo: its hint `ctl mail inbox human` works, and agent output prints the lines it shows', async function () {
    const created = JSON.parse(expectSuccess(await ctl('bead', 'create', 'reverse: hello world', '--json'))[0]) as {
      id: string;
    };
    expectSuccess(await ctl('sling', 'worker', created.id));
    const inbox = await waitUntil('the result in the mail', async () => {
      const out = expectSuccess(await ctl('mail', 'inbox', 'human'));
      return out.some((l) => l.includes(`${created.id} done`)) ? out : undefined;
    });
    expect(inbox[0]).to.match(/^ID\s/);
    expectFailure(await ctl('mail', 'inbox', 'human', '--agent', 'ann'), 'mail inbox', /argument or with --agent/);
    const output = expectSuccess(await ctl('agent', 'output', 'worker'));
    // As README.md shows them.
    const shown = [
      `user: Work on bead ${created.id}: reverse: hello world (details: ctl bead show ${created.id}; `,
      `tool: ctl {"command":"ctl bead close ${created.id}"}`,
      `tool: Closed ${created.id}`,
      `assistant: Closed ${created.id}: dlrow olleh`,
    ];
    for (const l of shown)
      expect(
        output.some((o) => o.startsWith(l)),
        `${l} in ${output.join('\n')}`,
      ).to.equal(true);
    // README.md shows the same lines (its bead is dem-1), and the hint that works.
    const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');
    expect(created.id).to.equal('dem-1');
    expect(readme).to.include('ctl mail inbox human ');
    for (const l of shown) expect(readme).to.include(`#   ${l}`);
    // Its IRC example binds #ops to an agent of the city it names: the demo's worker.
    const irc = /irc-adapter\.mjs --city (\S+) [^]*?--bind '#ops=(\S+)'/.exec(readme);
    expect(irc?.slice(1)).to.deep.equal(['demo', 'worker']);
    expect(expectSuccess(await ctl('agent', 'list')).some((l) => /^worker\s/.test(l))).to.equal(true);
  });

  it('ctl config show prints the composed configuration as TOML; --json the API answer', async function () {
    const text = (await ctl('config', 'show')).stdout;
    const shown = parse(text) as { workspace: { name: string }; agents: { name: string; provider?: string }[] };
    expect(shown.workspace.name).to.equal('demo');
    expect(shown.agents.map((a) => a.name)).to.include('worker');
    const api = JSON.parse(expectSuccess(await ctl('config', 'show', '--json'))[0]) as { agents: unknown[] };
    expect(shown.agents).to.have.length(api.agents.length);
  });

  it('a --var the API refuses is named as the flag, not as body.vars', async function () {
    const message = expectFailure(await ctl('sling', 'worker', '--formula', 'shout-back'), 'sling');
    expect(message).to.include('--var');
    expect(message).to.not.include('body.');
  });

  it('a TOML error: validate gives file:line:column and the line with a caret, --json prints it; status shows the last good config', async function () {
    const file = join(sup.cityDir('demo'), 'city.toml');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, `${good}\n[extra]\nbroken = = 3\n`);
    const line = good.split('\n').length + 2;
    try {
      const status = await waitUntil('status to show the reload failure', async () => {
        const out = expectSuccess(await ctl('status'));
        return out.find((l) => l.includes('last good config')) ? out : undefined;
      });
      expect(status.find((l) => l.includes('last good config'))).to.match(
        new RegExp(`^  config  last good config \\(reload failed: .*city\\.toml:${line}:10: `),
      );
      const body = JSON.parse(expectSuccess(await ctl('status', '--json'))[0]) as { config_reload_error?: string };
      expect(body.config_reload_error).to.match(new RegExp(`city\\.toml:${line}:10: `));

      const result = await ctl('config', 'validate');
      expect(result.code).to.equal(1);
      const out = result.stdout.split('\n');
      expect(out[0]).to.match(/^not valid: 1 error/);
      const at = out.findIndex((l) => new RegExp(`city\\.toml:${line}:10: `).test(l));
      expect(at, result.stdout).to.be.greaterThan(0);
      expect(out[at + 1]).to.equal('    broken = = 3');
      expect(out[at + 2]).to.equal(`    ${' '.repeat(9)}^`);

      const json = await ctl('config', 'validate', '--json');
      expect(json.code).to.equal(1);
      const report = JSON.parse(json.stdout) as {
        valid: boolean;
        errors: { line?: number; column?: number; excerpt?: string }[];
      };
      expect(report.valid).to.equal(false);
      expect(report.errors[0]).to.include({ line, column: 10, excerpt: `broken = = 3\n${' '.repeat(9)}^` });
    } finally {
      writeFileSync(file, good);
    }
    await waitUntil('the fixed file to be taken', async () => {
      const out = expectSuccess(await ctl('status'));
      return !out.some((l) => l.includes('last good config'));
    });
    expect(expectSuccess(await ctl('config', 'validate'))[0]).to.match(/^valid/);
  });
});
