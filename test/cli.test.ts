import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { expect } from 'chai';
import { createApiClient } from '../shared/api-client.js';
import { ctlEntryPath, packageRoot } from '../shared/paths.js';
import { findOnPath } from '../shared/readiness.js';
import { VERSION } from '../shared/version.js';
import { listCityTree } from './helpers/city-tree.js';
import {
  expectFailure,
  expectSuccess,
  lines,
  runCtl,
  runCtlOnTerminal,
  runCtlWithTerminal,
  type CliResult,
} from './helpers/cli.js';
import { isAlive, killAllMentioning } from './helpers/processes.js';
import { freePort, tempDir, TestSupervisor } from './helpers/supervisor.js';
import { WAIT_MS, waitUntil } from './helpers/wait.js';

// The `ctl` client, run as the real built binary (dist/cli/main.js) against real supervisor processes.
// Contract (decisions.md, "The `ctl` client"): a failure is exactly one human line on stderr, `ctl <command>: …`,
// exit status 1, and nothing on stdout; progress goes to stderr only when it is a terminal (never here).

/** The current process's PATH minus every directory that holds one of `binaries`. */
function pathWithout(...binaries: string[]): string {
  const dirs = (process.env.PATH ?? '/usr/bin:/bin')
    .split(delimiter)
    .filter((dir) => dir && binaries.every((b) => !findOnPath(b, dir)));
  const nodeDir = dirname(process.execPath);
  if (!dirs.includes(nodeDir)) dirs.unshift(nodeDir);
  return dirs.join(delimiter);
}

/** Live processes whose `CTL_HOME` lies under `root` (a backgrounded supervisor names no path in its argv). */
function processesWithHomeUnder(root: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (environ.some((v) => v.startsWith(`CTL_HOME=${root}`)) && isAlive(Number(entry))) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

interface CityJson {
  name: string;
  path: string;
  running: boolean;
  status?: string;
  error?: string;
  pid?: number;
  phases_completed?: string[];
}

const CITY_KEYS = ['name', 'path', 'running', 'status', 'error', 'phases_completed', 'pid'];

describe('ctl CLI (real binary, real supervisor)', function () {
  this.timeout(60_000);

  let sup: TestSupervisor;
  let deadApi: string;
  const supervisorPath = pathWithout('claude');

  /** Runs ctl against the shared supervisor; CTL_CITY is never inherited unless given. */
  function ctl(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliResult> {
    return sup.ctl(args, { cwd: options.cwd, env: { CTL_CITY: undefined, ...options.env } });
  }

  async function citiesJson(): Promise<{ items: CityJson[]; total: number }> {
    const out = expectSuccess(await ctl(['cities', '--json']));
    expect(out).to.have.length(1);
    return JSON.parse(out[0]) as { items: CityJson[]; total: number };
  }

  async function cityNamed(name: string): Promise<CityJson | undefined> {
    return (await citiesJson()).items.find((c) => c.name === name);
  }

  before(async function () {
    // The supervisor's PATH lacks `claude`, so a city with that provider is refused as not ready (503).
    sup = await TestSupervisor.start({ env: { PATH: supervisorPath } });
    deadApi = `http://127.0.0.1:${await freePort()}`;
  });

  after(async function () {
    if (sup) await sup.cleanup();
  });

  describe('ctl init', function () {
    it('creates a city and waits for it: exit 0, one stdout line naming it, empty stderr', async function () {
      const dir = sup.cityDir('alpha');
      const out = expectSuccess(await ctl(['init', dir, '--start-command', 'sleep 3600']));
      expect(out, 'one line on stdout').to.have.length(1);
      expect(out[0]).to.include('alpha');
      expect(out[0]).to.include(dir);
      expect(existsSync(join(dir, 'city.toml'))).to.equal(true);
      // init returns only once the city is running (it waited for request.result.city.create).
      const city = await sup.city('alpha');
      expect(city).to.include({ name: 'alpha', path: dir, running: true });
    });

    it('lists the new city as running in `ctl cities`', async function () {
      const out = expectSuccess(await ctl(['cities']));
      expect(out[0]).to.match(/^NAME\s+STATUS\s+PID\s+PATH/);
      const row = out.find((l) => l.startsWith('alpha '));
      expect(row, `a row for alpha in ${JSON.stringify(out)}`).to.not.equal(undefined);
      const [name, status, pid, path] = row!.split(/\s+/);
      expect(name).to.equal('alpha');
      expect(status).to.equal('running');
      expect(pid).to.match(/^\d+$/);
      expect(path).to.equal(sup.cityDir('alpha'));
    });

    it('`ctl cities --json` prints the API body {items, total} on one line', async function () {
      const result = await ctl(['cities', '--json']);
      const out = expectSuccess(result);
      expect(out).to.have.length(1);
      const body = JSON.parse(out[0]) as Record<string, unknown>;
      expect(Object.keys(body).sort()).to.deep.equal(['items', 'total']);
      const items = body.items as CityJson[];
      expect(items).to.be.an('array');
      expect(body.total).to.equal(items.length);
      for (const item of items) {
        expect(item.name).to.be.a('string');
        expect(item.path).to.be.a('string');
        expect(item.running).to.be.a('boolean');
        for (const key of Object.keys(item)) expect(CITY_KEYS, `city member ${key}`).to.include(key);
      }
      const alpha = items.find((c) => c.name === 'alpha');
      expect(alpha).to.include({ name: 'alpha', path: sup.cityDir('alpha'), running: true });
      expect(alpha!.pid).to.be.a('number');
      expect(Number.isInteger(alpha!.pid)).to.equal(true);
      expect(alpha).to.not.have.property('ok');
    });

    it('parses flags given before the directory (reaching the server: 409 for an existing city)', async function () {
      const dir = sup.cityDir('alpha');
      expectFailure(await ctl(['init', '--start-command', 'sleep 3600', dir]), 'init', /^conflict: /);
    });

    it('resolves a relative DIR against the working directory', async function () {
      const out = expectSuccess(await ctl(['init', 'delta', '--start-command', 'sleep 3600'], { cwd: sup.citiesDir }));
      expect(out).to.have.length(1);
      expect(out[0]).to.include('delta');
      expect(await cityNamed('delta')).to.include({ path: sup.cityDir('delta'), running: true });
    });

    it('fails when another directory already uses the city name (409)', async function () {
      const dir = join(sup.root, 'elsewhere', 'alpha');
      expectFailure(await ctl(['init', dir, '--start-command', 'sleep 1']), 'init', /^conflict: .*alpha/);
      expect(existsSync(join(dir, 'city.toml'))).to.equal(false);
    });

    it('fails without --start-command or --provider', async function () {
      const dir = sup.cityDir('none');
      expectFailure(await ctl(['init', dir]), 'init', /--start-command.*--provider|--provider.*--start-command/);
      expect(existsSync(dir)).to.equal(false);
    });

    it('fails with both --start-command and --provider', async function () {
      const dir = sup.cityDir('both');
      expectFailure(
        await ctl(['init', dir, '--start-command', 'sleep 3600', '--provider', 'codex']),
        'init',
        /--start-command.*--provider|--provider.*--start-command/,
      );
      expect(existsSync(dir)).to.equal(false);
    });

    it('fails on an already initialised directory with the 409 conflict detail', async function () {
      const dir = sup.cityDir('alpha');
      const before = readFileSync(join(dir, 'city.toml'), 'utf8');
      expectFailure(
        await ctl(['init', dir, '--start-command', 'sleep 1']),
        'init',
        `conflict: city already initialized at ${dir}`,
      );
      expect(readFileSync(join(dir, 'city.toml'), 'utf8')).to.equal(before);
    });

    it('fails on a directory holding an unregistered city.toml (409)', async function () {
      const dir = sup.cityDir('loose');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'city.toml'), '[workspace]\nstart_command = "sleep 3600"\n');
      expectFailure(
        await ctl(['init', dir, '--start-command', 'sleep 1']),
        'init',
        `conflict: city already initialized at ${dir}`,
      );
      rmSync(dir, { recursive: true, force: true });
    });

    it('fails on an unknown provider (422) and creates nothing', async function () {
      const dir = sup.cityDir('unknownprov');
      const message = expectFailure(await ctl(['init', dir, '--provider', 'no-such-provider']), 'init');
      // The API's 422 names body.provider; the CLI names the flag that carried it.
      expect(message).to.match(/^invalid --provider: /);
      expect(message).to.include('no-such-provider');
      expect(existsSync(dir)).to.equal(false);
    });

    it('fails when the provider is not installed for the supervisor (503 provider_not_ready:)', async function () {
      expect(findOnPath('claude', supervisorPath), 'precondition: claude is not on the supervisor PATH').to.equal(
        undefined,
      );
      const dir = sup.cityDir('noclaude');
      const message = expectFailure(await ctl(['init', dir, '--provider', 'claude']), 'init');
      expect(message).to.match(/^provider_not_ready: /);
      expect(message).to.include('claude');
      expect(existsSync(dir)).to.equal(false);
    });

    it('fails when the supervisor cannot be reached, and says so', async function () {
      const dir = sup.cityDir('unreachable');
      const message = expectFailure(
        await ctl(['init', dir, '--start-command', 'sleep 3600'], { env: { CTL_API: deadApi } }),
        'init',
      );
      expect(message).to.match(/cannot reach the supervisor/);
      expect(message).to.include(deadApi);
      expect(existsSync(dir)).to.equal(false);
    });

    it('fails without the directory argument, naming the command', async function () {
      expectFailure(await ctl(['init', '--start-command', 'sleep 3600']), 'init', /DIR/);
    });

    it('rejects a --timeout that is not a duration', async function () {
      const dir = sup.cityDir('badtimeout');
      expectFailure(
        await ctl(['init', dir, '--start-command', 'sleep 1', '--timeout', 'soon']),
        'init',
        /^invalid --timeout "soon": expected a duration such as 90s, 5m, 1h30m or 1d/,
      );
      expectFailure(await ctl(['init', dir, '--start-command', 'sleep 1', '--timeout', '0']), 'init', /must be more/);
      expect(existsSync(dir)).to.equal(false);
    });

    it('--json prints the outcome {request_id, name, path}; --timeout takes a duration (2m) or seconds (90)', async function () {
      const dir = sup.cityDir('jsoninit');
      const out = expectSuccess(await ctl(['init', dir, '--start-command', 'sleep 3600', '--json', '--timeout', '2m']));
      expect(out).to.have.length(1);
      const body = JSON.parse(out[0]) as { request_id: string; name: string; path: string };
      expect(Object.keys(body).sort()).to.deep.equal(['name', 'path', 'request_id']);
      expect(body).to.include({ name: 'jsoninit', path: dir });
      // It is the outcome the supervisor recorded for that request.
      expect((await sup.terminalEvent(body.request_id)).type).to.equal('request.result.city.create');
      const seconds = sup.cityDir('secondsinit');
      expectSuccess(await ctl(['init', seconds, '--start-command', 'sleep 3600', '--timeout', '90']));
      expect(await cityNamed('secondsinit')).to.include({ running: true });
    });

    it('--start-command examples/agents/echo.sh (as in the README) is kept absolute in city.toml', async function () {
      const dir = sup.cityDir('echo');
      expectSuccess(await ctl(['init', dir, '--start-command', 'examples/agents/echo.sh'], { cwd: packageRoot }));
      const program = join(packageRoot, 'examples', 'agents', 'echo.sh');
      expect(readFileSync(join(dir, 'city.toml'), 'utf8')).to.include(`start_command = "${program}"`);
      // The example agent answers each line it reads.
      expect(execFileSync(program, { input: 'hello\nworld\n', encoding: 'utf8' })).to.equal(
        'echo: hello\necho: world\n',
      );
    });
  });

  describe('argument errors', function () {
    it('an unknown flag: exit 1, one stderr line, empty stdout', async function () {
      expectFailure(await ctl(['cities', '--bogus']), 'cities', '--bogus');
    });

    it('an unknown flag on a nested command names the nested command', async function () {
      expectFailure(await ctl(['city', 'start', 'alpha', '--bogus']), 'city start', '--bogus');
    });

    it('an unexpected extra positional argument', async function () {
      expectFailure(await ctl(['cities', 'extra']), 'cities', 'extra');
      expectFailure(await ctl(['city', 'stop', 'alpha', 'beta']), 'city stop', 'beta');
    });

    it('an unknown command', async function () {
      expectFailure(await ctl(['frobnicate']), '', 'frobnicate');
    });

    it('an unknown subcommand', async function () {
      const result = await ctl(['city', 'explode']);
      expect(result.stdout).to.equal('');
      expect(result.code).to.equal(1);
      expect(lines(result.stderr)).to.have.length(1);
      expect(result.stderr).to.match(/^ctl( city)?: /);
      expect(result.stderr).to.include('explode');
    });

    it('a missing required positional names the command', async function () {
      expectFailure(await ctl(['city', 'start']), 'city start', /NAME/);
    });

    it('an invalid --api URL', async function () {
      expectFailure(await ctl(['cities', '--api', 'not a url']), 'cities', /invalid API URL/);
    });
  });

  describe('API address resolution', function () {
    it('--api wins over CTL_API', async function () {
      expectFailure(await ctl(['cities', '--api', deadApi]), 'cities', /cannot reach the supervisor/);
      const out = expectSuccess(await ctl(['cities', '--json', '--api', sup.base], { env: { CTL_API: deadApi } }));
      expect(JSON.parse(out[0])).to.have.property('items');
    });

    it('without --api or CTL_API, reads the port from $CTL_HOME/supervisor.toml', async function () {
      const out = expectSuccess(await ctl(['cities', '--json'], { env: { CTL_API: undefined } }));
      const body = JSON.parse(out[0]) as { items: CityJson[] };
      expect(body.items.map((c) => c.name)).to.include('alpha');
    });
  });

  describe('ctl status', function () {
    it('with no city in scope: the supervisor summary', async function () {
      const out = expectSuccess(await ctl(['status'], { cwd: sup.root }));
      expect(out[0]).to.match(/^Supervisor \w+ \(pid \d+, up \d+s\) at \S+: \d+\/\d+ cities running$/);
      expect(out[0]).to.include(`pid ${sup.pid}`);
      expect(out[0]).to.include(sup.base);
      expect(out.some((l) => l.startsWith('alpha ') && l.includes('running'))).to.equal(true);
    });

    it('with no city in scope, --json: {supervisor, cities}', async function () {
      const out = expectSuccess(await ctl(['status', '--json'], { cwd: sup.root }));
      expect(out).to.have.length(1);
      const body = JSON.parse(out[0]) as { supervisor: { pid: number; home: string }; cities: CityJson[] };
      expect(Object.keys(body).sort()).to.deep.equal(['cities', 'supervisor']);
      expect(body.supervisor.pid).to.equal(sup.pid);
      expect(body.supervisor.home).to.equal(sup.home);
      expect(body.cities.find((c) => c.name === 'alpha')).to.include({ running: true });
    });

    it('ctl status NAME: the city', async function () {
      const out = expectSuccess(await ctl(['status', 'alpha'], { cwd: sup.root }));
      expect(out[0]).to.match(/^City alpha is running \(pid \d+, up \d+s\)$/);
      expect(out.join('\n')).to.include(sup.cityDir('alpha'));
    });

    it('ctl status NAME --json: the city status body', async function () {
      const out = expectSuccess(await ctl(['status', 'alpha', '--json'], { cwd: sup.root }));
      expect(out).to.have.length(1);
      const body = JSON.parse(out[0]) as { name: string; path: string; agents: { total: number } };
      expect(body).to.include({ name: 'alpha', path: sup.cityDir('alpha') });
      expect(body.agents.total).to.be.a('number');
    });

    it('ctl status PATH: the city at that directory', async function () {
      const out = expectSuccess(await ctl(['status', sup.cityDir('alpha')], { cwd: sup.root }));
      expect(out[0]).to.match(/^City alpha is running/);
    });

    it('with the working directory inside a city: that city', async function () {
      const sub = join(sup.cityDir('alpha'), 'deep', 'sub');
      mkdirSync(sub, { recursive: true });
      try {
        const out = expectSuccess(await ctl(['status'], { cwd: sub }));
        expect(out[0]).to.match(/^City alpha is running/);
        const json = expectSuccess(await ctl(['status', '--json'], { cwd: sup.cityDir('alpha') }));
        expect(JSON.parse(json[0])).to.include({ name: 'alpha' });
      } finally {
        rmSync(join(sup.cityDir('alpha'), 'deep'), { recursive: true, force: true });
      }
    });

    it('--city and CTL_CITY select the city too', async function () {
      expect(expectSuccess(await ctl(['status', '--city', 'alpha'], { cwd: sup.root }))[0]).to.match(
        /^City alpha is running/,
      );
      expect(expectSuccess(await ctl(['status'], { cwd: sup.root, env: { CTL_CITY: 'alpha' } }))[0]).to.match(
        /^City alpha is running/,
      );
    });

    it('a positional and a different --city conflict', async function () {
      expectFailure(await ctl(['status', 'alpha', '--city', 'delta'], { cwd: sup.root }), 'status', /--city/);
    });

    it('an unknown city name fails', async function () {
      expectFailure(await ctl(['status', 'nosuchcity'], { cwd: sup.root }), 'status', 'nosuchcity');
    });

    it('inside a directory with an unregistered city.toml fails, saying it is not registered', async function () {
      const dir = join(sup.root, 'unregistered-city');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'city.toml'), '[workspace]\nstart_command = "sleep 3600"\n');
      try {
        expectFailure(await ctl(['status'], { cwd: dir }), 'status', /not registered/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('fails when the supervisor cannot be reached', async function () {
      expectFailure(
        await ctl(['status'], { cwd: sup.root, env: { CTL_API: deadApi } }),
        'status',
        /cannot reach the supervisor/,
      );
    });
  });

  describe('ctl city stop / start', function () {
    it('ctl city stop NAME: exit 0 and the city is listed stopped', async function () {
      const out = expectSuccess(await ctl(['city', 'stop', 'alpha']));
      expect(out).to.have.length(1);
      expect(out[0]).to.include('alpha');
      const city = await cityNamed('alpha');
      expect(city).to.include({ running: false, status: 'stopped' });
      expect(city).to.not.have.property('pid');
      const table = expectSuccess(await ctl(['cities']));
      const row = table.find((l) => l.startsWith('alpha '));
      expect(row!.split(/\s+/)[1]).to.equal('stopped');
    });

    it('ctl status NAME of a stopped city says it is not running (exit 0)', async function () {
      const out = expectSuccess(await ctl(['status', 'alpha'], { cwd: sup.root }));
      expect(out[0]).to.match(/^City alpha is not running: stopped/);
    });

    it('ctl city start NAME: exit 0 and the city is running again', async function () {
      const out = expectSuccess(await ctl(['city', 'start', 'alpha']));
      expect(out).to.have.length(1);
      expect(out[0]).to.match(/^City alpha is running \(pid \d+\)$/);
      const city = await cityNamed('alpha');
      expect(city).to.include({ running: true });
      expect(out[0]).to.include(`pid ${city!.pid}`);
    });

    it('--json: each prints the city as the API answers it', async function () {
      const stopped = JSON.parse(expectSuccess(await ctl(['city', 'stop', 'alpha', '--json']))[0]) as CityJson;
      expect(stopped).to.include({ name: 'alpha', running: false, status: 'stopped' });
      const started = JSON.parse(expectSuccess(await ctl(['city', 'start', 'alpha', '--json']))[0]) as CityJson;
      expect(started).to.include({ name: 'alpha', running: true });
      expect(started.pid).to.be.a('number');
    });

    it('ctl city stop on an unknown city fails', async function () {
      expectFailure(await ctl(['city', 'stop', 'nosuchcity']), 'city stop', /^not_found: .*nosuchcity/);
    });

    it('ctl city start on an unknown city fails', async function () {
      expectFailure(await ctl(['city', 'start', 'nosuchcity']), 'city start', /^not_found: .*nosuchcity/);
    });

    it('ctl city stop when the supervisor cannot be reached fails', async function () {
      expectFailure(
        await ctl(['city', 'stop', 'alpha'], { env: { CTL_API: deadApi } }),
        'city stop',
        /cannot reach the supervisor/,
      );
      expect(await cityNamed('alpha')).to.include({ running: true });
    });
  });

  describe('ctl register / unregister', function () {
    let betaDir: string;
    let config: string;
    let tree: string[];

    before(function () {
      betaDir = sup.cityDir('beta');
      mkdirSync(betaDir, { recursive: true });
      config = '# hand-written\n[workspace]\nstart_command = "sleep 3600"\n';
      writeFileSync(join(betaDir, 'city.toml'), config);
      writeFileSync(join(betaDir, 'notes.txt'), 'keep me\n');
    });

    it('ctl register PATH (relative to the working directory) attaches and starts the city', async function () {
      const out = expectSuccess(await ctl(['register', 'beta'], { cwd: sup.citiesDir }));
      expect(out).to.have.length(1);
      expect(out[0]).to.include('beta');
      expect(out[0]).to.include(betaDir);
      const city = await cityNamed('beta');
      expect(city).to.include({ name: 'beta', path: betaDir, running: true });
      tree = listCityTree(betaDir);
    });

    it('ctl unregister NAME detaches it and leaves the directory intact', async function () {
      const out = expectSuccess(await ctl(['unregister', 'beta']));
      expect(out).to.have.length(1);
      expect(out[0]).to.include('beta');
      expect(await cityNamed('beta')).to.equal(undefined);
      expect(readFileSync(join(betaDir, 'city.toml'), 'utf8')).to.equal(config);
      expect(readFileSync(join(betaDir, 'notes.txt'), 'utf8')).to.equal('keep me\n');
      expect(listCityTree(betaDir)).to.deep.equal(tree);
    });

    it('ctl register PATH --name NAME registers it under that name', async function () {
      const out = expectSuccess(await ctl(['register', betaDir, '--name', 'gamma']));
      expect(out).to.have.length(1);
      expect(out[0]).to.include('gamma');
      const city = await cityNamed('gamma');
      expect(city).to.include({ name: 'gamma', path: betaDir, running: true });
      expect(await cityNamed('beta')).to.equal(undefined);
    });

    it('ctl unregister PATH detaches the city at that directory, leaving it intact', async function () {
      const out = expectSuccess(await ctl(['unregister', betaDir]));
      expect(out).to.have.length(1);
      expect(out[0]).to.include('gamma');
      expect(await cityNamed('gamma')).to.equal(undefined);
      expect(readFileSync(join(betaDir, 'city.toml'), 'utf8')).to.equal(config);
      expect(listCityTree(betaDir)).to.deep.equal(tree);
    });

    it('ctl register with no argument registers the city the working directory is in', async function () {
      const sub = join(betaDir, 'src');
      mkdirSync(sub, { recursive: true });
      const out = expectSuccess(await ctl(['register'], { cwd: sub }));
      expect(out[0]).to.include('beta');
      expect(await cityNamed('beta')).to.include({ path: betaDir, running: true });
      // and unregister with no argument, from inside it
      const gone = expectSuccess(await ctl(['unregister'], { cwd: sub }));
      expect(gone[0]).to.include('beta');
      expect(await cityNamed('beta')).to.equal(undefined);
      rmSync(sub, { recursive: true, force: true });
    });

    it('ctl register of a city already registered under that name is a no-op success', async function () {
      const pidBefore = (await cityNamed('alpha'))!.pid;
      const out = expectSuccess(await ctl(['register', sup.cityDir('alpha')]));
      expect(out).to.have.length(1);
      expect(out[0]).to.include('alpha');
      expect(await cityNamed('alpha')).to.include({ running: true, pid: pidBefore });
    });

    it('ctl register DIR --name NEW of a city registered under another name: refused without --rename', async function () {
      await sup.createCity('rho');
      const dir = sup.cityDir('rho');
      expectFailure(
        await ctl(['register', dir, '--name', 'rho2']),
        'register',
        `${dir} is registered as rho; pass --rename to rename it to rho2 (its controller restarts)`,
      );
      expect(await cityNamed('rho')).to.include({ path: dir, running: true });
      expect(await cityNamed('rho2')).to.equal(undefined);
      expectFailure(await ctl(['register', dir, '--rename']), 'register', '--rename needs --name, the new name');
    });

    it('… with --rename it renames the city, says so, and waits until it runs under the new name', async function () {
      const dir = sup.cityDir('rho');
      const out = expectSuccess(await ctl(['register', dir, '--name', 'rho2', '--rename']));
      expect(out).to.deep.equal([`Renamed city rho to rho2 (${dir}); it is running`]);
      expect(await cityNamed('rho2')).to.include({ path: dir, running: true });
      expect(await cityNamed('rho')).to.equal(undefined);
      // Registering it again without a name keeps the name it has (not the one city.toml declares).
      const again = JSON.parse(expectSuccess(await ctl(['register', dir, '--json']))[0]) as CityJson;
      expect(again).to.include({ name: 'rho2', path: dir, running: true });
    });

    it('ctl unregister --json prints the outcome {request_id, name, path}', async function () {
      const out = expectSuccess(await ctl(['unregister', 'rho2', '--json']));
      const body = JSON.parse(out[0]) as { request_id: string; name: string; path: string };
      expect(body).to.include({ name: 'rho2', path: sup.cityDir('rho') });
      expect((await sup.terminalEvent(body.request_id)).type).to.equal('request.result.city.unregister');
      expect(await cityNamed('rho2')).to.equal(undefined);
    });

    it('ctl register under a name another directory holds fails (409)', async function () {
      expectFailure(await ctl(['register', betaDir, '--name', 'alpha']), 'register', /^conflict: /);
      expect(await cityNamed('alpha')).to.include({ path: sup.cityDir('alpha'), running: true });
    });

    it('ctl register of a directory with an invalid city.toml fails', async function () {
      const bad = join(sup.root, 'bad-city');
      mkdirSync(bad, { recursive: true });
      writeFileSync(join(bad, 'city.toml'), '[workspace\nname = \n');
      expectFailure(await ctl(['register', bad]), 'register', /city\.toml/);
      expect((await citiesJson()).items.map((c) => c.path)).to.not.include(bad);
    });

    it('ctl register of a directory without city.toml fails, mentioning no city.toml', async function () {
      const plain = join(sup.root, 'plain-dir');
      mkdirSync(plain, { recursive: true });
      expectFailure(await ctl(['register', plain]), 'register', /no city\.toml/);
      expect(readdirSync(plain)).to.deep.equal([]);
    });

    it('ctl register with no argument outside any city fails', async function () {
      expectFailure(await ctl(['register'], { cwd: sup.root }), 'register', /not inside a city/);
    });

    it('ctl register with an invalid --name fails', async function () {
      expectFailure(await ctl(['register', betaDir, '--name', 'bad/name']), 'register', /name/);
      expect(await cityNamed('beta')).to.equal(undefined);
    });

    it('ctl unregister of an unknown city fails with one line', async function () {
      expectFailure(await ctl(['unregister', 'nosuchcity']), 'unregister', 'nosuchcity');
    });

    it('ctl unregister with no argument outside any city fails', async function () {
      expectFailure(await ctl(['unregister'], { cwd: sup.root }), 'unregister', /not inside a city/);
    });

    it('ctl register / unregister fail when the supervisor cannot be reached', async function () {
      expectFailure(
        await ctl(['register', betaDir], { env: { CTL_API: deadApi } }),
        'register',
        /cannot reach the supervisor/,
      );
      expectFailure(
        await ctl(['unregister', 'alpha'], { env: { CTL_API: deadApi } }),
        'unregister',
        /cannot reach the supervisor/,
      );
    });
  });

  describe('tables on a terminal', function () {
    /** `ctl cities`, its stdout on a terminal `columns` wide. */
    async function citiesOnTerminal(columns: number, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
      const result = await runCtlOnTerminal(['cities'], {
        env: { ...sup.env, CTL_CITY: undefined, ...env },
        cwd: sup.root,
        columns,
      });
      expect(result.code, result.stdout).to.equal(0);
      return lines(result.stdout);
    }

    it('fit the width: the widest free text (PATH) is cut with …, names never; no column empty in every row', async function () {
      const out = await citiesOnTerminal(44, { NO_COLOR: '1' });
      expect(out[0].split(/\s+/)).to.deep.equal(['NAME', 'STATUS', 'PID', 'PATH']);
      const names = (await citiesJson()).items.map((c) => c.name);
      expect(out.slice(1).map((l) => l.split(/\s+/)[0])).to.deep.equal(names);
      for (const row of out) expect(row.length, row).to.be.at.most(44);
      const alpha = out.find((l) => l.startsWith('alpha '))!;
      const path = alpha.split(/\s+/)[3];
      expect(path.endsWith('…'), path).to.equal(true);
      expect(sup.cityDir('alpha').startsWith(path.slice(0, -1))).to.equal(true);
    });

    it('colour status words on a terminal (running green), never with NO_COLOR or when piped, unless FORCE_COLOR', async function () {
      const coloured = await citiesOnTerminal(200);
      const alpha = coloured.find((l) => l.startsWith('alpha '))!;
      expect(alpha).to.include('\u001b[32mrunning');
      expect((await citiesOnTerminal(200, { NO_COLOR: '1' })).join('\n')).to.not.include('\u001b[');
      const piped = expectSuccess(await ctl(['cities']));
      expect(piped.join('\n')).to.not.include('\u001b[');
      expect(piped.join('\n')).to.include(sup.cityDir('alpha'));
      const forced = expectSuccess(await ctl(['cities'], { env: { FORCE_COLOR: '1' } }));
      expect(forced.find((l) => l.startsWith('alpha '))).to.include('\u001b[32mrunning\u001b[39m');
    });
  });

  describe('ctl supervisor status', function () {
    it('exit 0 and one line when the supervisor is up', async function () {
      const out = expectSuccess(await ctl(['supervisor', 'status']));
      expect(out).to.have.length(1);
      expect(out[0]).to.match(/^Supervisor is running \(pid \d+\)/);
      expect(out[0]).to.include(`pid ${sup.pid}`);
    });

    it('--json prints the health document', async function () {
      const out = expectSuccess(await ctl(['supervisor', 'status', '--json']));
      expect(out).to.have.length(1);
      const health = JSON.parse(out[0]) as { pid: number; home: string; status: string };
      expect(health).to.include({ pid: sup.pid, home: sup.home });
    });

    it('exit 1, one stderr line and empty stdout when nothing answers at CTL_API', async function () {
      expectFailure(
        await ctl(['supervisor', 'status'], { env: { CTL_API: deadApi } }),
        'supervisor status',
        /not running/,
      );
    });
  });
});

describe('ctl init, register and unregister wait on the event stream, not by polling', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;

  before(async function () {
    // Every request in the supervisor's log (debug), and controllers slow to start (5 phases of 300 ms): a command
    // that polled while it waited would show a request every 100 ms.
    sup = await TestSupervisor.start({ env: { CTL_LOG_LEVEL: 'debug', CTL_CONTROLLER_PHASE_DELAY_MS: '300' } });
  });

  after(async function () {
    if (sup) await sup.cleanup();
  });

  /** The requests the supervisor has answered since `from` lines of its log: `GET /v0/cities`, … */
  function requestsSince(from: number): string[] {
    return readFileSync(join(sup.home, 'supervisor.log'), 'utf8')
      .split('\n')
      .slice(from)
      .filter((l) => l.includes('"requestId"'))
      .map((l) => JSON.parse(l) as { method: string; path: string })
      .map((r) => `${r.method} ${r.path}`);
  }

  function logLength(): number {
    return readFileSync(join(sup.home, 'supervisor.log'), 'utf8').split('\n').length - 1;
  }

  /** The requests a command made, once its stream's request is logged too (when the stream has ended). */
  async function requestsOf(from: number): Promise<string[]> {
    return waitUntil('the stream request in the log', () => {
      const requests = requestsSince(from);
      return requests.includes('GET /v0/events/stream') && requests;
    });
  }

  const count = (requests: string[], request: string) => requests.filter((r) => r === request).length;

  it('ctl init: POST, then one stream from the 202 cursor until the outcome; on a terminal, the events of the city', async function () {
    const from = logLength();
    const dir = sup.cityDir('slow');
    const result = await runCtlWithTerminal(['init', dir, '--start-command', 'sleep 3600'], {
      env: sup.env,
      cwd: sup.root,
    });
    const person = result ?? (await sup.ctl(['init', dir, '--start-command', 'sleep 3600']));
    expect(person.code, person.stderr).to.equal(0);
    expect(person.stdout).to.equal(`City slow is running at ${dir}`);
    const requests = await requestsOf(from);
    expect(count(requests, 'POST /v0/city')).to.equal(1);
    expect(count(requests, 'GET /v0/events/stream')).to.equal(1);
    expect(count(requests, 'GET /v0/cities'), requests.join(', ')).to.equal(0);
    expect(count(requests, 'GET /v0/events'), requests.join(', ')).to.equal(0);
    if (result) {
      const progress = lines(result.stderr);
      expect(progress[0]).to.match(/^Creating city slow at .* \(request req-[0-9a-f]{24}\)$/);
      expect(progress).to.include.members(['  city.created', '  controller.started']);
    }
  });

  it('ctl init of a city whose controller cannot start: the request.failed on the stream, in one line', async function () {
    const dir = sup.cityDir('broken');
    const init = sup.ctl(['init', dir, '--start-command', 'sleep 3600']);
    // Break the config before the controller reads it: it reports its first phase, then waits (the delay) before
    // reading city.toml. Waiting for the phase, not for the file, keeps a slow controller start out of the race.
    await waitUntil(
      'the controller to be loading its config',
      async () => (await sup.city('broken'))?.status === 'loading_config',
      WAIT_MS,
      5,
    );
    writeFileSync(join(dir, 'city.toml'), '[workspace\nbroken = ');
    expectFailure(await init, 'init', /city\.toml.* \(city_init_failed\)$/);
  });

  it('ctl register: one look at the cities, then the stream until controller.started', async function () {
    expectSuccess(await sup.ctl(['unregister', 'slow']));
    const from = logLength();
    const out = expectSuccess(await sup.ctl(['register', sup.cityDir('slow')]));
    expect(out).to.deep.equal([`City slow is running at ${sup.cityDir('slow')}`]);
    const requests = await requestsOf(from);
    expect(count(requests, 'GET /v0/events/stream')).to.equal(1);
    // Before the register (is it registered?), once after it, and the city as it runs, for the answer.
    expect(count(requests, 'GET /v0/cities'), requests.join(', ')).to.be.at.most(6);
    expect(count(requests, 'GET /v0/events'), requests.join(', ')).to.equal(1);
  });

  it('ctl register of a city that cannot start: the crash on the stream, in one line', async function () {
    const dir = sup.cityDir('badagents');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'city.toml'),
      '[workspace]\nstart_command = "sleep 3600"\n[[agent]]\nname = "a"\n[[agent]]\nname = "a"\n',
    );
    expectFailure(await sup.ctl(['register', dir, '--timeout', '20s']), 'register', /^badagents failed to start: /);
  });

  it('ctl unregister: POST, then one stream from the 202 cursor until the outcome', async function () {
    const from = logLength();
    const out = expectSuccess(await sup.ctl(['unregister', 'slow']));
    expect(out[0]).to.match(/^Unregistered city slow /);
    const requests = await requestsOf(from);
    expect(count(requests, 'POST /v0/city/slow/unregister')).to.equal(1);
    expect(count(requests, 'GET /v0/events/stream')).to.equal(1);
    expect(count(requests, 'GET /v0/cities'), requests.join(', ')).to.equal(1); // which city the words name
    expect(count(requests, 'GET /v0/events'), requests.join(', ')).to.equal(0);
  });
});

describe('ctl supervisor run: its log', function () {
  this.timeout(60_000);
  let root: string;

  before(function () {
    root = tempDir('ctl-cli-run-');
  });

  after(function () {
    killPids(processesWithHomeUnder(root));
    killAllMentioning(root);
    rmSync(root, { recursive: true, force: true });
  });

  it('on a terminal: readable lines (pino-pretty); in the log file, JSON lines; one pid key in every line', async function () {
    const home = join(root, 'home');
    const port = await freePort();
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'supervisor.toml'), `[supervisor]\nport = ${port}\npatrol_interval = "1s"\n`);
    const env = { ...process.env, CTL_HOME: home, HOME: root, CTL_API: undefined, NO_COLOR: '1' };
    const command = `exec ${process.execPath} ${ctlEntryPath()} supervisor run`;
    const terminal = spawn('script', ['-qefc', command, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let screen = '';
    terminal.stdout.on('data', (chunk: Buffer) => (screen += chunk.toString()));
    try {
      await waitUntil('the supervisor to listen', () => screen.includes('supervisor listening'));
      // A city, so that the supervisor logs about its controller (whose pid is not the supervisor's).
      const sup = createApiClient(`http://127.0.0.1:${port}`);
      const { data } = await sup.POST('/v0/city', {
        params: { header: { 'X-CTL-Request': 'test' } },
        body: { dir: join(root, 'cities', 'logged'), start_command: 'sleep 3600' },
      });
      expect(data).to.not.equal(undefined);
      await waitUntil('the controller to be ready', () => screen.includes('controller ready'));
    } finally {
      terminal.kill('SIGTERM');
      await once(terminal, 'exit');
    }
    const shown = screen.replace(/\r\n/g, '\n');
    expect(shown).to.match(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(supervisor\/\d+\): supervisor listening$/m);
    expect(shown).to.not.match(/^\{"level"/m);
    const logLines = readFileSync(join(home, 'supervisor.log'), 'utf8').trim().split('\n');
    const records = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => r.msg)).to.include.members(['supervisor listening', 'controller starting']);
    for (const line of logLines) expect(line.match(/"pid":/g)?.length ?? 0, line).to.equal(1);
    const starting = records.find((r) => r.msg === 'controller starting')!;
    expect(starting.controllerPid).to.be.a('number');
    expect(starting.controllerPid).to.not.equal(starting.pid);
  });
});

describe('ctl controller run: failures', function () {
  let root: string;

  before(function () {
    root = tempDir('ctl-cli-controller-');
  });

  after(function () {
    killAllMentioning(root);
    rmSync(root, { recursive: true, force: true });
  });

  const run = (args: string[]) =>
    runCtl(['controller', 'run', ...args], { env: { CTL_HOME: join(root, 'home') }, cwd: root, timeoutMs: 20_000 });

  it('a directory without city.toml, or with a broken one: exit 1, one line, nothing written', async function () {
    const plain = join(root, 'plain');
    mkdirSync(plain);
    expectFailure(await run(['--city', plain]), 'controller run', `${plain}/city.toml: no city.toml found`);
    expect(readdirSync(plain)).to.deep.equal([]);
    expectFailure(await run(['--city', join(root, 'nowhere')]), 'controller run', /no city\.toml found/);
    expect(existsSync(join(root, 'nowhere')), 'no directory created').to.equal(false);
    const broken = join(root, 'broken');
    mkdirSync(broken);
    writeFileSync(join(broken, 'city.toml'), '[workspace\n');
    expectFailure(await run(['--city', broken]), 'controller run', /city\.toml/);
  });

  it('flags: exit 1, one line', async function () {
    expectFailure(await run([]), 'controller run', 'missing --city');
    expectFailure(await run(['--city', root, '--listen', '99999']), 'controller run', '--listen 99999: not a port');
  });

  it('a city another controller holds: exit 1, one line naming it, no stack trace', async function () {
    const city = join(root, 'held');
    mkdirSync(city);
    writeFileSync(join(city, 'city.toml'), '[workspace]\nstart_command = "sleep 3600"\n');
    const port = await freePort();
    const first = spawn(
      process.execPath,
      [ctlEntryPath(), 'controller', 'run', '--city', city, '--listen', String(port)],
      {
        stdio: 'ignore',
      },
    );
    try {
      await waitUntil('the first controller to answer', async () => {
        try {
          return (await fetch(`http://127.0.0.1:${port}/openapi.json`)).ok;
        } catch {
          return false;
        }
      });
      const second = await run(['--city', city, '--listen', String(await freePort())]);
      expect(second.stdout).to.equal('');
      // (75, which a supervisor reads as "locked", only for a supervisor: it spawns controllers over IPC.)
      expect(second.code).to.equal(1);
      expect(lines(second.stderr)).to.deep.equal([
        `ctl controller run: another controller is already running for ${city} (pid ${first.pid})`,
      ]);
    } finally {
      first.kill('SIGTERM');
      await once(first, 'exit');
    }
  });
});

describe('ctl supervisor start / stop (background supervisor)', function () {
  this.timeout(40_000);

  let root: string;
  let home: string;
  let port: number;
  let env: NodeJS.ProcessEnv;
  const idlers: number[] = [];

  /** A process of ours that does nothing: stands in for an unrelated process that got a stale pid. */
  function spawnIdler(): number {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)', root], { stdio: 'ignore' });
    child.unref();
    idlers.push(child.pid!);
    return child.pid!;
  }

  const sctl = (args: string[]) => runCtl(args, { env, cwd: root, timeoutMs: 30_000 });

  function supervisorPidFile(): number | undefined {
    try {
      const pid = Number(readFileSync(join(home, 'supervisor.pid'), 'utf8').trim());
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  async function health(): Promise<{ pid: number } | undefined> {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      return res.ok ? ((await res.json()) as { pid: number }) : undefined;
    } catch {
      return undefined;
    }
  }

  before(async function () {
    root = tempDir('ctl-cli-sup-');
    home = join(root, 'home');
    mkdirSync(home, { recursive: true });
    port = await freePort();
    writeFileSync(join(home, 'supervisor.toml'), `[supervisor]\nport = ${port}\n`);
    env = { CTL_HOME: home, HOME: root, CTL_API: undefined, CTL_CITY: undefined };
  });

  after(function () {
    const pid = supervisorPidFile();
    if (pid && isAlive(pid)) killPids([pid]);
    for (const pid of idlers) killPids([pid]);
    killPids(processesWithHomeUnder(root));
    killAllMentioning(root);
    rmSync(root, { recursive: true, force: true });
  });

  let startedPid: number;

  it('ctl supervisor start returns once the API answers (exit 0, one line)', async function () {
    const out = expectSuccess(await sctl(['supervisor', 'start']));
    expect(out).to.have.length(1);
    const h = await health();
    expect(h, 'the API answers as soon as start returns').to.not.equal(undefined);
    startedPid = h!.pid;
    expect(out[0]).to.include(`pid ${startedPid}`);
    expect(out[0]).to.include(String(port));
    expect(isAlive(startedPid)).to.equal(true);
    expect(supervisorPidFile()).to.equal(startedPid);
  });

  it('ctl supervisor status finds it through $CTL_HOME/supervisor.toml', async function () {
    const out = expectSuccess(await sctl(['supervisor', 'status']));
    expect(out[0]).to.include(`pid ${startedPid}`);
    const health = JSON.parse(expectSuccess(await sctl(['supervisor', 'status', '--json']))[0]) as { pid: number };
    expect(health.pid).to.equal(startedPid);
  });

  it('ctl cities on a supervisor with no cities: a hint, and {items: [], total: 0} as JSON', async function () {
    const out = expectSuccess(await sctl(['cities']));
    expect(out).to.have.length(1);
    expect(out[0]).to.match(/no cities/i);
    const json = expectSuccess(await sctl(['cities', '--json']));
    expect(JSON.parse(json[0])).to.deep.equal({ items: [], total: 0 });
  });

  it('a second ctl supervisor start fails: already running', async function () {
    expectFailure(await sctl(['supervisor', 'start']), 'supervisor start', /already running/);
    expect((await health())?.pid, 'the first supervisor is untouched').to.equal(startedPid);
  });

  it('ctl supervisor stop exits 0 once the process is gone', async function () {
    const out = expectSuccess(await sctl(['supervisor', 'stop']));
    expect(out).to.have.length(1);
    expect(isAlive(startedPid)).to.equal(false);
    expect(await health()).to.equal(undefined);
  });

  it('ctl supervisor stop again fails: not running', async function () {
    expectFailure(await sctl(['supervisor', 'stop']), 'supervisor stop', /not running/);
  });

  it('ctl supervisor status now fails', async function () {
    expectFailure(await sctl(['supervisor', 'status']), 'supervisor status', /not running/);
  });

  it('ctl supervisor start rejects a bad --port', async function () {
    expectFailure(await sctl(['supervisor', 'start', '--port', 'http']), 'supervisor start', 'http');
    expect(await health()).to.equal(undefined);
  });

  it('--json: start prints {pid, api, log}, stop {pid, killed, controllers_stopped}; --timeout takes durations', async function () {
    const started = JSON.parse(
      expectSuccess(await sctl(['supervisor', 'start', '--json', '--timeout', '20s']))[0],
    ) as Record<string, unknown>;
    expect(started).to.deep.equal({
      pid: (await health())!.pid,
      api: `http://127.0.0.1:${port}`,
      log: join(home, 'supervisor.log'),
    });
    const stopped = JSON.parse(
      expectSuccess(await sctl(['supervisor', 'stop', '--json', '--timeout', '1m']))[0],
    ) as Record<string, unknown>;
    expect(stopped).to.deep.equal({ pid: started.pid, killed: false, controllers_stopped: 0 });
    expect(isAlive(started.pid as number)).to.equal(false);
    expectFailure(
      await sctl(['supervisor', 'stop', '--timeout', 'later']),
      'supervisor stop',
      /invalid --timeout "later"/,
    );
  });

  it('ctl supervisor stop with a stale pid file (pid reused by another process) leaves that process alone', async function () {
    const idler = spawnIdler();
    writeFileSync(join(home, 'supervisor.pid'), `${idler}\n`);
    expectFailure(await sctl(['supervisor', 'stop']), 'supervisor stop', /not running/);
    expect(isAlive(idler), 'the unrelated process that happens to hold the old pid is alive').to.equal(true);
  });

  it('ctl supervisor start with a stale pid file (pid reused by another process) starts the supervisor', async function () {
    const idler = spawnIdler();
    writeFileSync(join(home, 'supervisor.pid'), `${idler}\n`);
    const out = expectSuccess(await sctl(['supervisor', 'start']));
    const h = await health();
    expect(h, 'the API answers').to.not.equal(undefined);
    expect(out[0]).to.include(`pid ${h!.pid}`);
    expect(isAlive(idler)).to.equal(true);
    expectSuccess(await sctl(['supervisor', 'stop']));
    expect(isAlive(h!.pid)).to.equal(false);
    expect(isAlive(idler)).to.equal(true);
  });

  describe('when the port is taken', function () {
    let home2: string;
    let env2: NodeJS.ProcessEnv;
    let busyPort: number;

    beforeEach(async function () {
      home2 = join(root, `home-busy-${Math.random().toString(16).slice(2)}`);
      mkdirSync(home2, { recursive: true });
      busyPort = await freePort();
      writeFileSync(join(home2, 'supervisor.toml'), `[supervisor]\nport = ${busyPort}\n`);
      env2 = { ...env, CTL_HOME: home2 };
    });

    async function withListener<T>(server: Server, body: () => Promise<T>): Promise<T> {
      const sockets = new Set<Socket>();
      server.on('connection', (s: Socket) => sockets.add(s));
      await new Promise<void>((resolve) => server.listen(busyPort, '127.0.0.1', resolve));
      try {
        return await body();
      } finally {
        for (const s of sockets) s.destroy();
        await new Promise((resolve) => server.close(resolve));
      }
    }

    it('by an HTTP server: start fails with one line saying why', async function () {
      const http = createHttpServer((_req, res) => {
        res.statusCode = 404;
        res.end();
      });
      const result = await withListener(http, () =>
        runCtl(['supervisor', 'start', '--timeout', '3'], { env: env2, cwd: root, timeoutMs: 12_000 }),
      );
      expectFailure(result, 'supervisor start', /EADDRINUSE|exited during startup|cannot listen/);
    });

    it('by a listener that never answers: start still fails with one line saying why (does not hang)', async function () {
      const silent = createNetServer(() => undefined);
      const result = await withListener(silent, () =>
        runCtl(['supervisor', 'start', '--timeout', '3'], { env: env2, cwd: root, timeoutMs: 12_000 }),
      );
      expect(
        result.code,
        'ctl supervisor start (--timeout 3) was still running when killed after 12 s: it hung',
      ).to.not.equal(-1);
      expectFailure(result, 'supervisor start', /EADDRINUSE|exited during startup|cannot listen/);
    });
  });
});

describe('ctl supervisor install', function () {
  let root: string;
  let env: NodeJS.ProcessEnv;

  before(function () {
    root = tempDir('ctl-cli-install-');
    env = { CTL_HOME: join(root, 'home'), HOME: root, XDG_CONFIG_HOME: join(root, 'config'), CTL_API: undefined };
  });

  after(function () {
    rmSync(root, { recursive: true, force: true });
  });

  const unitFile = () => join(root, 'config', 'systemd', 'user', 'ctl-supervisor.service');

  it('--print prints a systemd user unit and writes nothing', async function () {
    const result = await runCtl(['supervisor', 'install', '--print'], { env, cwd: root });
    const out = expectSuccess(result);
    expect(out).to.include(`ExecStart=${process.execPath} ${ctlEntryPath()} supervisor run`);
    expect(out).to.include('Restart=always');
    expect(out.some((l) => /^TimeoutStopSec=\d+/.test(l))).to.equal(true);
    // Signals to the supervisor alone: a reload (SIGHUP) leaves its controllers and their sessions running.
    expect(out).to.include('KillMode=process');
    expect(out).to.include('ExecReload=/bin/kill -HUP $MAINPID');
    expect(out).to.include(`Environment=CTL_HOME=${join(root, 'home')}`);
    expect(out).to.include('[Service]');
    expect(out).to.include('[Install]');
    // Its Documentation= is the systemd guide that is really there.
    const docs = out.find((l) => l.startsWith('Documentation=file://'));
    expect(docs).to.not.equal(undefined);
    expect(existsSync(docs!.slice('Documentation=file://'.length)), docs).to.equal(true);
    expect(existsSync(unitFile())).to.equal(false);
  });

  it('writes $XDG_CONFIG_HOME/systemd/user/ctl-supervisor.service', async function () {
    const printed = (await runCtl(['supervisor', 'install', '--print'], { env, cwd: root })).stdout;
    const out = expectSuccess(await runCtl(['supervisor', 'install'], { env, cwd: root }));
    expect(out.join('\n')).to.include(unitFile());
    expect(readFileSync(unitFile(), 'utf8').trimEnd()).to.equal(printed.trimEnd());
  });

  it('--json: {path, unit} when written, {unit} with --print', async function () {
    const printed = JSON.parse(
      expectSuccess(await runCtl(['supervisor', 'install', '--print', '--json'], { env, cwd: root }))[0],
    );
    expect(Object.keys(printed)).to.deep.equal(['unit']);
    expect(printed.unit).to.include('supervisor run');
    const written = JSON.parse(
      expectSuccess(await runCtl(['supervisor', 'install', '--force', '--json'], { env, cwd: root }))[0],
    );
    expect(written).to.deep.equal({ path: unitFile(), unit: printed.unit });
  });

  it('refuses to overwrite an existing unit without --force, and overwrites with it', async function () {
    writeFileSync(unitFile(), '# my own unit\n');
    expectFailure(await runCtl(['supervisor', 'install'], { env, cwd: root }), 'supervisor install', /--force/);
    expect(readFileSync(unitFile(), 'utf8')).to.equal('# my own unit\n');
    expectSuccess(await runCtl(['supervisor', 'install', '--force'], { env, cwd: root }));
    expect(readFileSync(unitFile(), 'utf8')).to.include('supervisor run');
  });
});

describe('ctl --help and --version', function () {
  it('ctl --help exits 0 and prints usage listing the commands', async function () {
    const out = expectSuccess(await runCtl(['--help']));
    const text = out.join('\n');
    expect(text).to.match(/USAGE/i);
    for (const command of ['init', 'cities', 'register', 'unregister', 'city', 'status', 'supervisor']) {
      expect(text).to.include(command);
    }
    expect(text).to.not.include('\u001b[');
  });

  it('spells every flag in usage as it is typed (kebab-case), and accepts the camelCase spelling too', async function () {
    const usage = async (...command: string[]) => expectSuccess(await runCtl([...command, '--help'])).join('\n');
    const flags = [
      ...[await usage('init'), await usage('events'), await usage('bead', 'create')].join('\n').matchAll(/--[\w-]+/g),
    ].map((m) => m[0]);
    expect(flags).to.include.members(['--start-command', '--payload-match', '--after-cursor', '--idempotency-key']);
    expect(flags.filter((f) => /[A-Z]/.test(f))).to.deep.equal([]);
    expect(await usage('bead', 'update')).to.include('--add-label');
    // Both spellings pass the unknown-flag check (here it fails later, on the supervisor that is not there).
    for (const flag of ['--start-command', '--startCommand']) {
      const result = await runCtl(['init', join(tempDir(), 'c'), flag, 'true', '--timeout', '1'], {
        env: { CTL_API: 'http://127.0.0.1:9' },
      });
      expect(result.stderr).to.not.include('unknown flag');
      expect(result.code).to.equal(1);
    }
  });

  it('ctl city start --help exits 0 and prints the usage of that command', async function () {
    const out = expectSuccess(await runCtl(['city', 'start', '--help']));
    const text = out.join('\n');
    expect(text).to.match(/USAGE/i);
    expect(text).to.include('ctl city start');
    expect(text).to.include('NAME');
    expect(text).to.not.include('frobnicate');
  });

  it('ctl --version prints the version', async function () {
    const out = expectSuccess(await runCtl(['--version']));
    expect(out).to.deep.equal([VERSION]);
  });
});
