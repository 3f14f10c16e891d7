import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectFailure, expectSuccess, runCtl, type CliResult } from './helpers/cli.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import { tempDir, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// The CLI's time-outs (decisions: a `ctl` command never hangs on a supervisor that does not answer) and
// `ctl supervisor stop --force`, against a real supervisor frozen with SIGSTOP: the kernel still accepts
// connections on its port, but nothing answers them.

/** Long enough for any command to end on its own; a command still running then has hung. */
const HUNG_MS = 20_000;

describe('ctl against a frozen supervisor (SIGSTOP)', function () {
  this.timeout(60_000);

  let sup: TestSupervisor;
  let frozen = false;

  /** Runs ctl against the frozen supervisor with a 1 s answer time-out. */
  function ctl(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
    return runCtl(args, {
      env: { ...sup.env, CTL_CITY: undefined, CTL_TIMEOUT: '1s', ...env },
      cwd: sup.root,
      timeoutMs: HUNG_MS,
    });
  }

  before(async function () {
    sup = await TestSupervisor.start();
    await sup.createCity('alpha');
    process.kill(sup.pid, 'SIGSTOP');
    frozen = true;
  });

  after(async function () {
    if (!sup) return;
    // A frozen supervisor cannot shut down: kill it, and cleanup takes whatever it left.
    if (frozen && isAlive(sup.pid)) await sup.kill9();
    await sup.cleanup();
  });

  it('every command ends with one line naming the supervisor, its pid and what to do', async function () {
    const commands = [
      ['cities'],
      ['status'],
      ['supervisor', 'status'],
      ['bead', 'list', '--city', 'alpha'],
      ['mail', 'inbox', '--city', 'alpha'],
      ['events'],
      ['events', '--seq'],
      ['events', '--follow'],
    ];
    const results = await Promise.all(commands.map((args) => ctl(args)));
    results.forEach((result, i) => {
      const command = commands[i].filter((w) => !w.startsWith('-') && w !== 'alpha').join(' ');
      expect(result.code, `ctl ${commands[i].join(' ')} hung`).to.not.equal(-1);
      const message = expectFailure(result, command);
      expect(message).to.include(`the supervisor (pid ${sup.pid}) at ${sup.base} did not answer within`);
      expect(message).to.include('ctl supervisor stop --force');
    });
  });

  it('CTL_TIMEOUT sets the time-out, and the line says it', async function () {
    expectFailure(await ctl(['cities'], { CTL_TIMEOUT: '1500ms' }), 'cities', 'did not answer within 1.5s');
  });

  it('an invalid CTL_TIMEOUT or CTL_CONNECT_TIMEOUT is refused in one line', async function () {
    expectFailure(await ctl(['cities'], { CTL_TIMEOUT: 'soon' }), 'cities', 'CTL_TIMEOUT');
    expectFailure(await ctl(['cities'], { CTL_CONNECT_TIMEOUT: '0' }), 'cities', 'CTL_CONNECT_TIMEOUT');
  });

  it('without a pid to name (another home), the line still says what did not answer', async function () {
    const otherHome = join(sup.root, 'other-home');
    mkdirSync(otherHome);
    const message = expectFailure(await ctl(['cities'], { CTL_HOME: otherHome }), 'cities');
    expect(message).to.include(`the supervisor at ${sup.base} did not answer within 1s`);
    expect(message).to.include('CTL_TIMEOUT');
  });

  it('a stream is not bound by the answer time-out: --watch waits out its own --timeout, printing nothing', async function () {
    const result = await ctl(['events', '--watch', '--after-cursor', '0', '--timeout', '2s'], {
      CTL_TIMEOUT: '200ms',
    });
    expect(expectSuccess(result)).to.deep.equal([]);
  });

  it('ctl supervisor stop without --force: one line saying it did not exit, suggesting --force', async function () {
    const message = expectFailure(
      await ctl(['supervisor', 'stop', '--timeout', '1']),
      'supervisor stop',
      `supervisor (pid ${sup.pid}) did not exit within 1s`,
    );
    expect(message).to.include('--force');
    expect(isAlive(sup.pid)).to.equal(true);
  });

  it('ctl supervisor stop --force kills it and its city controllers: nothing of the test is left running', async function () {
    const controllers = processesMentioning(sup.root);
    expect(controllers, 'the city controller runs').to.have.length.greaterThan(0);
    const out = expectSuccess(await ctl(['supervisor', 'stop', '--force', '--timeout', '1']));
    expect(out).to.have.length(1);
    expect(out[0]).to.include(`pid ${sup.pid}`);
    expect(out[0]).to.include('1 city controller');
    frozen = false;
    await sup.process;
    expect(isAlive(sup.pid)).to.equal(false);
    await waitUntil('no process mentioning the test root', () => processesMentioning(sup.root).length === 0);
  });
});

describe('ctl against a listener whose accept queue is full', function () {
  this.timeout(60_000);

  let listener: ChildProcess | undefined;
  const fillers: Socket[] = [];
  let port = 0;
  let home: string;

  /** Runs ctl against the listener, from a home of its own (no supervisor, so no pid to name). */
  function ctl(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
    return runCtl(args, {
      env: { CTL_API: `http://127.0.0.1:${port}`, CTL_HOME: home, CTL_CITY: undefined, ...env },
      cwd: home,
      timeoutMs: HUNG_MS,
    });
  }

  /** Connects to the listener; true once connected, false when the kernel does not complete it in time. */
  function fill(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      fillers.push(socket);
      socket.on('error', () => resolve(false));
      const timer = setTimeout(() => resolve(false), 1_000);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  before(async function () {
    home = tempDir();
    // A process listening with a backlog of 1, then frozen: it never accepts, so once its queue is full the
    // kernel drops further connection attempts and a client waits on its SYN retries.
    listener = spawn(
      process.execPath,
      [
        '-e',
        `require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, function () {
          console.log(this.address().port);
        });`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    port = await new Promise<number>((resolve) => listener!.stdout!.once('data', (d: Buffer) => resolve(Number(d))));
    process.kill(listener.pid!, 'SIGSTOP');
    for (let i = 0; i < 8; i++) if (!(await fill())) return;
    // Every attempt connected: this kernel does not drop connections to a full queue, so no test here.
    this.skip();
  });

  after(function () {
    for (const socket of fillers) socket.destroy();
    if (listener?.pid) process.kill(listener.pid, 'SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  it('a command gives up after the connect time-out, in one line', async function () {
    const result = await ctl(['cities'], { CTL_CONNECT_TIMEOUT: '1s', CTL_TIMEOUT: '30s' });
    expect(result.code, 'ctl cities hung').to.not.equal(-1);
    expectFailure(result, 'cities', `could not connect to the supervisor at http://127.0.0.1:${port} within 1s`);
  });

  it('so does a stream: --watch fails then, not at its own --timeout', async function () {
    const result = await ctl(['events', '--watch', '--after-cursor', '0', '--timeout', '1m'], {
      CTL_CONNECT_TIMEOUT: '1s',
    });
    expect(result.code, 'ctl events --watch hung').to.not.equal(-1);
    expectFailure(result, 'events', 'could not connect to the supervisor');
  });
});
