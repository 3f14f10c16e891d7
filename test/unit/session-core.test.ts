// The session core — Session, its Turns, SessionService — driven in-process: a real session over a real bead store
// and event log in a temporary city, its program an in-memory one (the `runtimes` seam of SessionContext) that
// records what it was handed and says what the test makes it say. What the process tier proves with real
// programs, this proves in milliseconds; a remote host's runtime is held to the same behaviours here.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import { resolveCityProviders } from '../../controller/providers/resolve.js';
import type {
  ProgramExit,
  RuntimeCapabilities,
  RuntimeOptions,
  RuntimeSink,
  SessionRuntime,
} from '../../controller/sessions/runtime.js';
import type { SessionContext } from '../../controller/sessions/session-context.js';
import { SessionService } from '../../controller/sessions/session-service.js';
import { SessionStore } from '../../controller/sessions/session-store.js';
import { Session } from '../../controller/sessions/session.js';
import { SessionWorktrees } from '../../controller/worktrees/session-worktrees.js';
import type { PendingInteraction } from '../../shared/dto/sessions.js';
import { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitUntil } from '../helpers/wait.js';

const logger = pino({ level: 'silent' });
const { resolved: PROVIDERS } = resolveCityProviders({}, {}, 'city.toml');

/** A program in memory: what it was handed, and the sink through which the test makes it speak. */
class FakeProgram implements SessionRuntime {
  static pids = 1000;
  readonly capabilities: RuntimeCapabilities = {
    interrupt: true,
    pending: true,
    liveModeChange: true,
    concurrentTurns: false,
  };
  readonly pid = FakeProgram.pids++;
  readonly delivered: string[] = [];
  readonly answers: { requestId: string; action: string; text?: string }[] = [];
  interrupts = 0;
  private running = false;
  private inTurn = false;

  constructor(
    readonly options: RuntimeOptions,
    private readonly sink: RuntimeSink,
  ) {}

  start(): Promise<void> {
    this.running = true;
    return Promise.resolve();
  }
  deliver(message: { id: string; text: string }): Promise<void> {
    if (!this.running) return Promise.reject(new Error('the program is gone'));
    this.delivered.push(message.text);
    this.inTurn = true;
    return Promise.resolve();
  }
  interrupt(): Promise<boolean> {
    if (!this.inTurn) return Promise.resolve(false);
    this.interrupts++;
    // A program interrupted ends its turn, as it says so.
    this.endTurn({ interrupted: true });
    return Promise.resolve(true);
  }
  respond(requestId: string, answer: { action: string; text?: string }): Promise<void> {
    this.answers.push({ requestId, ...answer });
    this.sink.pendingCleared(requestId, answer.action);
    return Promise.resolve();
  }
  setPermissionMode(): Promise<boolean> {
    return Promise.resolve(true);
  }
  stop(): Promise<void> {
    if (this.running) this.exit({ code: null, signal: 'SIGTERM', requested: true, stderrTail: '' });
    return Promise.resolve();
  }
  isRunning(): boolean {
    return this.running;
  }

  // ---- what the test makes the program say

  ready(key?: string): void {
    if (key) this.sink.sessionKey(key);
    this.sink.ready();
  }
  reply(text: string): void {
    this.sink.output('assistant', text);
  }
  endTurn(data?: Record<string, unknown>): void {
    this.inTurn = false;
    this.sink.turnEnded(data);
  }
  ask(interaction: PendingInteraction): void {
    this.sink.pending(interaction);
  }
  exit(exit: ProgramExit): void {
    this.running = false;
    this.inTurn = false;
    this.sink.exited(exit);
  }
  crash(code = 1): void {
    this.exit({ code, signal: null, requested: false, stderrTail: 'boom' });
  }
}

/** A city in a temporary directory: its bead store, event log and sessions, every program a FakeProgram. */
class City {
  readonly root = tempDir('ctl-session-core-');
  readonly programs: FakeProgram[] = [];
  readonly beads = JournalBeadStore.open(this.root, 'tc');
  readonly log = EventLog.at(join(this.root, 'events.jsonl'), join(this.root, 'events.lock'));
  readonly ctx: SessionContext = {
    cityName: 'core',
    cityRoot: this.root,
    sessionsDir: join(this.root, 'sessions'),
    store: new SessionStore(this.beads),
    log: this.log,
    logger,
    provider: (name) => PROVIDERS.get(name),
    env: {},
    runtimes: (options, sink) => {
      const program = new FakeProgram(options, sink);
      this.programs.push(program);
      return program;
    },
    stopGraceMs: 1000,
    startTimeoutMs: 60_000,
    worktrees: new SessionWorktrees(join(this.root, 'worktrees'), logger),
  };

  /** A new provider session of claude, not started. */
  record() {
    return this.ctx.store.create(
      {
        title: 't',
        state: 'start-pending',
        template: 'claude',
        kind: 'provider',
        provider: 'claude',
        work_dir: this.root,
      },
      (id) => `claude-${id}`,
    );
  }

  /** A session started, its program ready (having said its conversation key). */
  async running(key = 'conv-1'): Promise<{ session: Session; program: FakeProgram }> {
    const session = new Session(this.record(), this.ctx);
    await session.wake('start', 'created');
    const program = this.programs.at(-1)!;
    program.ready(key);
    await waitUntil('the session to be active', () => session.state === 'active' && session.isReady, 5000, 1);
    return { session, program };
  }

  /** Events of `type` on the city log. */
  events(type: string): EventRecord[] {
    return this.log.after(0, 10_000).filter((r) => r.type === type);
  }

  close(): void {
    this.beads.close();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The texts of a session's transcript entries of `type`, oldest first. */
function texts(session: Session, type: string): string[] {
  return session.transcript
    .tail(1000)
    .entries.filter((e) => e.type === type)
    .map((e) => (e.payload as { text?: string }).text ?? '');
}

const until = (what: string, check: () => boolean) => waitUntil(what, check, 5000, 1);

describe('session core: a session over an in-memory program', function () {
  let city: City;
  beforeEach(function () {
    city = new City();
  });
  afterEach(function () {
    city.close();
  });

  it('queueing: messages sent while a turn runs wait, and go one turn at a time in order', async function () {
    const { session, program } = await city.running();
    session.enqueue('first', 'default');
    await until('the first delivered', () => program.delivered.length === 1);
    session.enqueue('second', 'default');
    session.enqueue('third', 'follow_up');
    // Nothing more goes in while the first turn runs.
    await new Promise((resolve) => setImmediate(resolve));
    expect(program.delivered).to.deep.equal(['first']);
    expect(session.view().queued).to.equal(2);
    expect(session.inTurn).to.equal(true);
    program.reply('one');
    program.endTurn();
    await until('the second delivered', () => program.delivered.length === 2);
    expect(program.delivered).to.deep.equal(['first', 'second']);
    program.endTurn();
    await until('the third delivered', () => program.delivered.length === 3);
    program.endTurn();
    await until('the session idle', () => session.idle);
    expect(program.delivered).to.deep.equal(['first', 'second', 'third']);
    expect(texts(session, 'user')).to.deep.equal(['first', 'second', 'third']);
    expect(session.view().last_output).to.equal('one');
  });

  it('wake: a message to a sleeping session starts its program and is its first turn', async function () {
    const { session, program } = await city.running();
    await session.sleep('idle');
    await until('the session asleep', () => session.state === 'asleep' && !session.changing);
    expect(program.isRunning()).to.equal(false);
    session.enqueue('wake up', 'default', { wake: 'woken by a message' });
    await until('a second program', () => city.programs.length === 2);
    const woken = city.programs[1];
    expect(session.state).to.equal('creating');
    expect(woken.delivered).to.deep.equal([]); // not before it is ready
    woken.ready();
    await until('the message delivered', () => woken.delivered.length === 1);
    expect(woken.delivered).to.deep.equal(['wake up']);
    expect(session.state).to.equal('active');
    expect(city.events('session.woke')).to.have.length(2);
  });

  it('wake: without `wake`, a message to a sleeping session waits for whoever wakes it', async function () {
    const { session } = await city.running();
    await session.sleep('idle');
    await until('the session asleep', () => session.state === 'asleep' && !session.changing);
    session.enqueue('later', 'default');
    await new Promise((resolve) => setImmediate(resolve));
    expect(city.programs).to.have.length(1);
    expect(session.view().queued).to.equal(1);
  });

  it('interrupt: interrupt_now ends the turn in progress and goes next', async function () {
    const { session, program } = await city.running();
    session.enqueue('long task', 'default');
    await until('the task delivered', () => program.delivered.length === 1);
    session.enqueue('stop that', 'interrupt_now');
    await until('the program interrupted', () => program.interrupts === 1);
    await until('the interrupting message delivered', () => program.delivered.length === 2);
    expect(program.delivered).to.deep.equal(['long task', 'stop that']);
    const ends = session.transcript.tail(100).entries.filter((e) => e.type === 'turn_end');
    expect(ends.map((e) => (e.payload as { interrupted?: boolean }).interrupted)).to.deep.equal([true]);
  });

  it('interrupt: interrupt_now behind a waiting message ends the turn in progress and goes ahead of it', async function () {
    const { session, program } = await city.running();
    session.enqueue('long task', 'default');
    await until('the task delivered', () => program.delivered.length === 1);
    session.enqueue('after it', 'follow_up');
    session.enqueue('stop that', 'interrupt_now');
    await until('the program interrupted', () => program.interrupts === 1);
    await until('the interrupting message delivered', () => program.delivered.length === 2);
    expect(program.delivered).to.deep.equal(['long task', 'stop that']);
    program.endTurn();
    await until('the waiting message delivered', () => program.delivered.length === 3);
    program.endTurn();
    const turnEnds = () => session.transcript.tail(100).entries.filter((e) => e.type === 'turn_end');
    await until('three turns ended', () => turnEnds().length === 3);
    expect(program.delivered).to.deep.equal(['long task', 'stop that', 'after it']);
    // Only the turn in progress was interrupted, never the one after the interrupting message.
    expect(program.interrupts).to.equal(1);
    const ends = turnEnds();
    expect(ends.map((e) => (e.payload as { interrupted?: boolean }).interrupted ?? false)).to.deep.equal([
      true,
      false,
      false,
    ]);
  });

  it('interrupt: a default message waits for the turn; it interrupts nothing', async function () {
    const { session, program } = await city.running();
    session.enqueue('long task', 'default');
    await until('the task delivered', () => program.delivered.length === 1);
    session.enqueue('after it', 'default');
    await new Promise((resolve) => setImmediate(resolve));
    expect(program.interrupts).to.equal(0);
    program.endTurn();
    await until('the next delivered', () => program.delivered.length === 2);
    expect(program.interrupts).to.equal(0);
  });

  it('interrupt: `interrupt` ends the current turn; false when none is in progress', async function () {
    const { session, program } = await city.running();
    expect(await session.interrupt()).to.equal(false);
    session.enqueue('work', 'default');
    await until('the work delivered', () => program.delivered.length === 1);
    expect(await session.interrupt()).to.equal(true);
    await until('the session idle', () => session.idle);
    const ends = session.transcript.tail(100).entries.filter((e) => e.type === 'turn_end');
    expect((ends.at(-1)!.payload as { interrupted?: boolean }).interrupted).to.equal(true);
  });

  for (const action of ['allow', 'deny'] as const) {
    it(`respond: a pending permission answered ${action} reaches the program; the queue waits for it`, async function () {
      const { session, program } = await city.running();
      session.enqueue('edit the file', 'default');
      await until('delivered', () => program.delivered.length === 1);
      program.ask({ request_id: 'perm-1', kind: 'tool-approval', prompt: 'Edit foo.ts?' });
      await until('the session pending', () => session.pending?.request_id === 'perm-1');
      program.endTurn();
      session.enqueue('next', 'default');
      await new Promise((resolve) => setImmediate(resolve));
      // A question open holds the next message back.
      expect(program.delivered).to.deep.equal(['edit the file']);
      await expectProblem(session.respond({ action: 'maybe' }), 'validation-failed');
      await expectProblem(session.respond({ action, request_id: 'perm-2' }), 'conflict-wrong-state');
      expect(await session.respond({ action })).to.equal('perm-1');
      expect(program.answers).to.deep.equal([{ requestId: 'perm-1', action }]);
      await until('the next delivered', () => program.delivered.length === 2);
      expect(session.pending).to.equal(undefined);
      expect(
        city.events('session.pending_cleared').map((e) => (e.payload as { action?: string }).action),
      ).to.deep.equal([action]);
    });
  }

  it('respond: nothing pending is a 409', async function () {
    const { session } = await city.running();
    await expectProblem(session.respond({ action: 'allow' }), 'conflict-wrong-state');
  });

  it('drain: a draining session finishes its turn and takes no other', async function () {
    const { session, program } = await city.running();
    session.enqueue('finish this', 'default');
    await until('delivered', () => program.delivered.length === 1);
    session.transition('drain');
    session.enqueue('not this', 'default');
    program.endTurn();
    await until('the turn ended', () => !session.inTurn);
    await new Promise((resolve) => setImmediate(resolve));
    expect(program.delivered).to.deep.equal(['finish this']);
    expect(session.state).to.equal('draining');
    expect(session.view().queued).to.equal(1);
    expect(program.isRunning()).to.equal(true);
  });

  it('crash: the program exits unasked — asleep, the crash recorded, what waited failed', async function () {
    const { session, program } = await city.running();
    const ended: { crashed: boolean }[] = [];
    session.on('ended', (e) => ended.push(e));
    session.enqueue('in flight', 'default', { request: { id: 'req-1', operation: 'session.message' } });
    await until('delivered', () => program.delivered.length === 1);
    session.enqueue('waiting', 'default', { request: { id: 'req-2', operation: 'session.message' } });
    program.crash(3);
    await until('the exit settled', () => ended.length === 1);
    expect(ended[0].crashed).to.equal(true);
    expect(session.state).to.equal('asleep');
    expect(session.running).to.equal(false);
    expect(session.inTurn).to.equal(false);
    expect(session.record.reason).to.equal('its program exited with code 3');
    expect(city.ctx.store.get(session.id)!.state).to.equal('asleep');
    expect(city.events('session.crashed')).to.have.length(1);
    // The message in flight was delivered (its request ended); the one waiting fails with the session.
    expect(city.events('request.result.session.message').map((e) => e.payload)).to.have.length(1);
    const failed = city.events('request.failed').map((e) => e.payload as { request_id?: string; error_code?: string });
    expect(failed.map((f) => f.request_id)).to.deep.equal(['req-2']);
    expect(session.view().queued).to.equal(0);
    expect(texts(session, 'exit')).to.deep.equal(['exited with code 3']);
  });

  it('lost: a program whose host stopped answering ends as lost, not a crash, with its fence; no message wakes it', async function () {
    const { session, program } = await city.running();
    const ended: { crashed: boolean }[] = [];
    session.on('ended', (e) => ended.push(e));
    const before = Date.now();
    program.exit({ code: null, signal: 'SIGHUP', requested: false, stderrTail: '', hostLost: 'keep-alive timed out' });
    await until('the exit settled', () => ended.length === 1);
    expect(ended[0].crashed).to.equal(false);
    expect(session.state).to.equal('lost');
    expect(session.record.reason).to.equal('its host stopped answering: keep-alive timed out');
    expect(city.events('session.crashed')).to.have.length(0);
    const [lost] = city.events('session.lost').map((e) => e.payload as { fence_until: string; host: string });
    expect(Date.parse(lost.fence_until)).to.be.at.least(before - 1000);
    expect(city.ctx.store.get(session.id)!.lost_until).to.equal(lost.fence_until);
    // Nothing starts it behind anyone's back: a message waits for a person's wake.
    session.enqueue('are you there', 'default', { request: { id: 'req-3', operation: 'session.message' } });
    expect(session.state).to.equal('lost');
    expect(session.running).to.equal(false);
  });

  it('crash: an exit asked for is no crash', async function () {
    const { session } = await city.running();
    const ended: { crashed: boolean }[] = [];
    session.on('ended', (e) => ended.push(e));
    await session.kill();
    await until('the exit settled', () => ended.length === 1);
    expect(ended[0].crashed).to.equal(false);
    expect(session.state).to.equal('asleep');
    expect(city.events('session.crashed')).to.have.length(0);
  });

  it('crash: a program that ends before it is ready fails the create', async function () {
    const session = new Session(city.record(), city.ctx);
    await session.wake('start', 'created');
    city.programs[0].crash(2);
    await until('the start failed', () => session.state === 'failed-create' && !session.changing);
    expect(session.record.reason).to.match(/^its program exited with code 2 before it was ready: boom$/);
  });

  it('crash: a program not ready within startTimeoutMs is stopped, and the create waiting on it fails', async function () {
    // The start timeout is the core's one timer: a short one is a real wait of milliseconds, no clock needed.
    const record = city.record();
    const session = new Session({ ...record, create_request: 'req-create' }, { ...city.ctx, startTimeoutMs: 5 });
    await session.wake('start', 'created');
    await until('the create failed', () => city.events('request.failed').length === 1);
    expect(city.programs[0].isRunning()).to.equal(false);
    const failed = city.events('request.failed')[0].payload as { request_id?: string; error_code?: string };
    expect(failed).to.include({ request_id: 'req-create', error_code: 'session_start_failed' });
    // A start that timed out failed: not left creating, and a crash, never a stop someone asked for.
    await until('the session failed', () => session.state === 'failed-create');
    expect(session.record.reason).to.equal('its program was not ready within 5 ms');
    expect(city.events('session.crashed')).to.have.length(1);
    expect(city.events('session.stopped')).to.have.length(0);
  });

  it('restart: a crashed session woken again resumes its conversation by its key', async function () {
    const { session, program } = await city.running('conv-42');
    expect(program.options.resumeKey).to.equal(undefined);
    program.crash();
    await until('asleep', () => session.state === 'asleep' && !session.changing);
    session.enqueue('carry on', 'default', { wake: 'woken by a message' });
    await until('a second program', () => city.programs.length === 2);
    const resumed = city.programs[1];
    expect(resumed.options.resumeKey).to.equal('conv-42');
    resumed.ready();
    await until('the message delivered', () => resumed.delivered.length === 1);
    expect(texts(session, 'start').at(-1)).to.match(/, resuming conv-42$/);
  });

  it('restart: `restart` ends the program and starts the next on the same conversation', async function () {
    const { session, program } = await city.running('conv-7');
    await session.restart('its configuration changed', {});
    expect(program.isRunning()).to.equal(false);
    expect(city.programs).to.have.length(2);
    expect(city.programs[1].options.resumeKey).to.equal('conv-7');
    city.programs[1].ready();
    await until('active', () => session.state === 'active');
  });

  it('restart: a new controller takes the open sessions on, resuming each with what waited', async function () {
    const options = { agent: () => undefined, promptOf: () => undefined, defaultProvider: () => 'claude' };
    const before = new SessionService(city.ctx, options);
    await before.start();
    const created = before.create({ name: 'claude', message: 'hello' });
    await until('a program', () => city.programs.length === 1);
    city.programs[0].ready('conv-9');
    await until('hello delivered', () => city.programs[0].delivered.length === 1);
    before.send(created.session_id, 'after the restart', 'default', 'session.message');
    await before.shutdown();
    expect(city.programs[0].isRunning()).to.equal(false);
    expect(city.ctx.store.get(created.session_id)!.state).to.equal('active');

    const after = new SessionService(city.ctx, options);
    await after.start();
    expect(city.programs).to.have.length(2);
    const next = city.programs[1];
    expect(next.options.resumeKey).to.equal('conv-9');
    next.ready();
    await until('the waiting message delivered', () => next.delivered.length === 1);
    expect(next.delivered).to.deep.equal(['after the restart']);
    // The create ended once, with the first controller.
    expect(city.events('request.result.session.create')).to.have.length(1);
    await after.shutdown();
  });
});

async function expectProblem(promise: Promise<unknown>, code: string): Promise<void> {
  try {
    await promise;
  } catch (err) {
    expect((err as { code?: string }).code, (err as Error).message).to.equal(code);
    return;
  }
  expect.fail(`expected a ${code} problem`);
}
