import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { runCtl } from './helpers/cli.js';
import { CityApi } from './helpers/city-api.js';
import { isAlive, processesWithEnvironment } from './helpers/processes.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// A pack's commands, run as `ctl <binding> <command> [args…]` (the reference's `gc <binding> <command>`): listed by
// `GET /commands`, run by the city's controller as its child (in the city's directory, bounded in time), their
// output and exit status handed back — the CLI never reads the city's files.
// Twice: with each program in a cgroup of its own (where this machine allows it), and without (CTL_NO_CGROUPS=1,
// a user with no cgroups delegated), where what a program started is found by the marker in its environment.
for (const [mode, env] of [
  ['cgroups', {}],
  ['no cgroups', { CTL_NO_CGROUPS: '1' }],
] as const)
  describe(`pack commands (real supervisor, real CLI; ${mode})`, function () {
    this.timeout(60_000);
    let sup: TestSupervisor;
    let api: CityApi;
    let dir: string;
    const write = (path: string, text: string, mode = 0o644) => {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
      chmodSync(join(dir, path), mode);
    };
    const ctl = (...args: string[]) => runCtl(['--city', 'cmds', ...args], { env: sup.env });

    before(async function () {
      sup = await TestSupervisor.start({ env });
      dir = sup.cityDir('cmds');
      write('city.toml', '[workspace]\nname = "cmds"\n\n[imports.tools]\nsource = "./packs/tools"\n');
      write(
        'packs/tools/pack.toml',
        '[pack]\nname = "tools"\ndescription = "Operator tools"\n\n' +
          '[[commands]]\nname = "where"\ndescription = "Say where it runs"\nscript = "scripts/where.sh"\n',
      );
      write('packs/tools/scripts/where.sh', 'echo "city=$CTL_CITY path=$GC_CITY_PATH pack=$CTL_PACK_DIR cwd=$(pwd)"\n');
      write('packs/tools/commands/greet/run.sh', 'echo "hello $1"\necho "to stderr" >&2\nexit 3\n');
      write('packs/tools/commands/greet/command.toml', 'description = "Greet someone"\n');
      write('packs/tools/commands/db/slow/run.sh', `echo $$ > "${join(dir, 'slow.pid')}"\nexec sleep 60\n`);
      // Leaves its process group with the pipes held: `escape wait` runs on past its time-out, `escape leave` exits.
      write(
        'packs/tools/commands/escape/run.sh',
        'echo started\nCTL_TEST_ESCAPEE="$2" setsid sleep 300 &\nif [ "$1" = wait ]; then exec sleep 60; fi\n',
      );
      const res = await fetch(`${sup.base}/v0/cities/register`, {
        method: 'POST',
        headers: { ...CSRF, 'Content-Type': 'application/json' },
        body: JSON.stringify({ path: dir }),
      });
      expect(res.status, await res.text()).to.equal(201);
      await waitUntil('cmds to run', async () => (await sup.city('cmds'))?.running === true);
      api = new CityApi(sup, 'cmds');
    });

    after(async function () {
      await sup?.cleanup();
    });

    it('lists each command under its binding, and the pack with its description and commands', async function () {
      const { body } = await api.get<{ items: { binding: string; command: string; description?: string }[] }>(
        '/commands',
      );
      expect(body.items.map((c) => [c.binding, c.command, c.description ?? null])).to.deep.equal([
        ['tools', 'where', 'Say where it runs'],
        ['tools', 'db slow', null],
        ['tools', 'escape', null],
        ['tools', 'greet', 'Greet someone'],
      ]);
      const packs = (await api.get<{ packs: { name: string; description?: string; commands?: string[] }[] }>('/packs'))
        .body.packs;
      expect(packs).to.have.length(1);
      expect(packs[0]).to.deep.include({
        name: 'tools',
        description: 'Operator tools',
        commands: ['where', 'db slow', 'escape', 'greet'],
      });
    });

    it('ctl <binding> <command> runs it in the city with its arguments: its output, its exit status', async function () {
      const greet = await ctl('tools', 'greet', 'world');
      expect(greet.stdout).to.equal('hello world\nto stderr');
      expect(greet.code).to.equal(3);
      const where = await ctl('tools', 'where');
      expect(where.code, where.stderr).to.equal(0);
      expect(where.stdout).to.equal(`city=cmds path=${dir} pack=${join(dir, 'packs', 'tools')} cwd=${dir}`);
      const listed = await ctl('tools');
      expect(listed.code).to.equal(0);
      expect(listed.stdout).to.match(/greet\s+Greet someone/);
      const all = await ctl('pack', 'commands');
      expect(all.code, all.stderr).to.equal(0);
      expect(all.stdout).to.match(/ctl tools db slow\s+tools\s+-/);
    });

    it('a command past its time-out is killed with what it started, and says so', async function () {
      const { body } = await api.post<{ timed_out: boolean; exit_code: number | null; command: string }>(
        '/commands/run',
        { binding: 'tools', argv: ['db', 'slow'], timeout: '1s' },
      );
      expect(body).to.include({ timed_out: true, exit_code: null, command: 'db slow' });
      const pid = Number(readFileSync(join(dir, 'slow.pid'), 'utf8'));
      await waitUntil('the timed-out command to be gone', () => !isAlive(pid));
    });

    it('a descendant that left the group (setsid) holding the pipes neither delays the answer nor outlives it', async function () {
      const tag = `escapee-${process.pid}-${Date.now()}`;
      const asked = Date.now();
      const timedOut = await api.post<{ timed_out: boolean; exit_code: number | null; output: string }>(
        '/commands/run',
        { binding: 'tools', argv: ['escape', 'wait', `${tag}-wait`], timeout: '2s' },
      );
      // Figures for the report, not a timed assertion: without the fix this waited on the sleep's 300 s.
      console.log(`      answered a 2 s time-out after ${Date.now() - asked} ms`);
      expect(timedOut.body).to.include({ timed_out: true, exit_code: null });
      expect(timedOut.body.output).to.include('started');
      await waitUntil(
        'the escaped sleep to be gone',
        () => processesWithEnvironment('CTL_TEST_ESCAPEE', `${tag}-wait`).length === 0,
      );
      const left = await api.post<{ timed_out: boolean; exit_code: number | null }>('/commands/run', {
        binding: 'tools',
        argv: ['escape', 'leave', `${tag}-leave`],
        timeout: '2m',
      });
      expect(left.body).to.include({ timed_out: false, exit_code: 0 });
      await waitUntil(
        'the sleep it left to be gone',
        () => processesWithEnvironment('CTL_TEST_ESCAPEE', `${tag}-leave`).length === 0,
      );
    });

    it('an unknown binding stays an unknown command; an unknown command of a binding is named with what it has', async function () {
      const bogus = await ctl('bogus', 'x');
      expect(bogus.code).to.equal(1);
      expect(bogus.stderr).to.match(/^ctl: unknown command "bogus"/);
      const nope = await ctl('tools', 'nope');
      expect(nope.code).to.equal(1);
      expect(nope.stderr).to.equal(
        'ctl tools nope: not_found: tools has no command "nope" (it has: where, db slow, escape, greet)',
      );
      const { status } = await api.post('/commands/run', { binding: 'tools', argv: ['greet'], timeout: 'soon' });
      expect(status).to.equal(422);
      expect(existsSync(join(dir, 'packs', 'tools'))).to.equal(true);
    });

    it('a command whose script is a link leading out of the pack is named by validate, not listed, not run', async function () {
      write('outside/steal.sh', 'echo STOLEN\n');
      mkdirSync(join(dir, 'packs', 'tools', 'commands', 'leak'), { recursive: true });
      symlinkSync(join(dir, 'outside', 'steal.sh'), join(dir, 'packs', 'tools', 'commands', 'leak', 'run.sh'));
      try {
        type Validate = { warnings: { file: string; message: string }[] };
        // The pack's files are watched: the link is heard and the configuration read again.
        const warning = await waitUntil(
          'validate to name the linked command',
          async () =>
            (await api.get<Validate>('/config/validate')).body.warnings.find(
              (w) => w.file === 'pack:tools/commands/leak/run.sh',
            ),
          20_000,
        );
        expect(warning.message).to.match(/leading out of the pack: skipped, not read \(command leak skipped\)$/);
        const { body } = await api.get<{ items: { command: string }[] }>('/commands');
        expect(body.items.map((c) => c.command)).to.deep.equal(['where', 'db slow', 'escape', 'greet']);
        const run = await api.post<{ detail: string }>('/commands/run', { binding: 'tools', argv: ['leak'] });
        expect(run.status).to.equal(404);
        expect(run.body.detail).to.match(/^not_found: tools has no command "leak"/);
      } finally {
        rmSync(join(dir, 'packs', 'tools', 'commands', 'leak'), { recursive: true, force: true });
      }
    });
  });
