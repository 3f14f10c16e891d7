import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type {
  PendingInteraction,
  SessionLifecyclePayload,
  SessionResponse,
  SessionState,
  SubmitIntent,
} from '../../shared/dto/sessions.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';
import { usageOf, type UsageFact } from '../usage/usage-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { reapLeftover } from './pipe/child-program.js';
import { MessageQueue, type QueuedMessage } from './queue.js';
import type { ProgramExit, RuntimeSink, SessionRuntime } from './runtime.js';
import { canResume, createRuntime } from './runtimes.js';
import { nextState, requireTransition, wakesOnMessage, type SessionCommand } from './session-states.js';
import type { SessionRecord, SessionStore } from './session-store.js';
import { Transcript, type NewEntry } from './transcript.js';
import { categoryOf } from './turn-failure.js';

/** How much of its latest output a session keeps in memory for `last_output`. */
const LAST_OUTPUT_CHARS = 2000;
/** Transcript entries waiting to be written past which the program's output is no longer read until they are. */
const MAX_WRITES_WAITING = 64;

/** What every session of a city shares. */
export interface SessionContext {
  cityName: string;
  cityRoot: string;
  /** `<city>/.ctl/sessions`: one directory per session. */
  sessionsDir: string;
  store: SessionStore;
  /** The city's event log. */
  log: EventLog;
  logger: Logger;
  /** The provider called `name` as the city's configuration resolves it now. */
  provider(name: string): ResolvedProvider | undefined;
  env: NodeJS.ProcessEnv;
  /** How long a program gets between SIGTERM and SIGKILL. */
  stopGraceMs: number;
  /** A program that is not ready this long after it started is taken to have failed. */
  startTimeoutMs: number;
  /** Keeps what a turn used, as its provider reported it. */
  usage?: (fact: UsageFact) => void;
}

/** What the session stream hears, besides transcript entries. */
export interface SessionEvents {
  entry: [EventRecord];
  activity: ['idle' | 'in-turn'];
  pending: [PendingInteraction];
  pending_cleared: [string];
  state: [SessionState];
  /** Its program ended: `crashed` when nobody asked (or it never became ready); `ran_ms` since it was ready. */
  ended: [{ crashed: boolean; ran_ms: number }];
}

/** How a message is queued: `wake` wakes a sleeping session for it (the reason recorded); `request` ends with it. */
export interface EnqueueOptions {
  wake?: string;
  request?: { id: string; operation: 'session.message' | 'session.submit' };
}

/** A turn the provider's service failed, as the tick weighs it (rate limits and refused keys are not crashes). */
export interface TurnFailureNote {
  category: string;
  message: string;
  at: number;
}

/**
 * One session: its record (the session bead), its transcript, its queue of messages, and — while it runs — its
 * program's runtime. Every change of state goes through the transition table; every delivery, reply, question,
 * start and exit is a transcript entry; every lifecycle change is an event on the city log.
 */
export class Session extends EventEmitter<SessionEvents> {
  readonly dir: string;
  readonly transcript: Transcript;
  private readonly queue: MessageQueue;
  private runtime: SessionRuntime | undefined;
  /** The program can take a turn. */
  private ready = false;
  private activity: 'idle' | 'in-turn' = 'idle';
  private pendingInteraction: PendingInteraction | undefined;
  /** The number of the last turn opened (one per delivered message). */
  private turn = 0;
  /** Turns delivered and not yet ended, oldest first: output belongs to the first. */
  private openTurns: number[] = [];
  private lastOutput = '';
  /** The turn `lastOutput` ends with. */
  private lastOutputTurn = 0;
  /** Why the program could not resume its conversation, when it said so: its end that follows is not a crash. */
  private resumeRefusal: string | undefined;
  private delivering = false;
  private interruptWanted = false;
  private startTimer: NodeJS.Timeout | undefined;
  /** Entries being written, in order: the stream sees them in the order they happened. */
  private writes: Promise<unknown> = Promise.resolve();
  /** How many entries are waiting to be written. */
  private writesWaiting = 0;
  /** When the program last became ready (ms since the epoch), or 0. */
  private readyAt = 0;
  /** When the session last went idle: no turn, nothing queued, nothing asked. */
  private idleAt = Date.now();
  /** Open session streams: a person watching (or typing into) it. */
  private watchers = 0;
  /** The last turn the provider's service failed. */
  private lastFailure: TurnFailureNote | undefined;
  private restarting = false;
  /** The handling of the program's last exit (a restart waits for it before it starts the next program). */
  private exiting: Promise<void> = Promise.resolve();

  constructor(
    public record: SessionRecord,
    private readonly ctx: SessionContext,
  ) {
    super();
    this.setMaxListeners(0);
    this.dir = join(ctx.sessionsDir, record.id);
    mkdirSync(this.dir, { recursive: true });
    this.transcript = new Transcript(this.dir);
    this.queue = new MessageQueue(this.dir);
    this.restoreFromTranscript();
  }

  get id(): string {
    return this.record.id;
  }

  get state(): SessionState {
    return this.record.state;
  }

  get running(): boolean {
    return this.runtime?.isRunning() === true;
  }

  get pending(): PendingInteraction | undefined {
    return this.pendingInteraction;
  }

  /** Its program runs, is ready, and has nothing to do: no turn, nothing queued, nothing asked. */
  get idle(): boolean {
    return (
      this.running &&
      this.ready &&
      this.activity === 'idle' &&
      this.openTurns.length === 0 &&
      this.queue.length === 0 &&
      !this.delivering &&
      this.pendingInteraction === undefined
    );
  }

  /** Its program is in a turn. */
  get inTurn(): boolean {
    return this.activity === 'in-turn' || this.openTurns.length > 0;
  }

  /** Ready to take a turn (whether or not it has one). */
  get isReady(): boolean {
    return this.running && this.ready;
  }

  /** When it last became idle (ms since the epoch). */
  get idleSince(): number {
    return this.idleAt;
  }

  /** Someone has its stream open: a person is attached to it. */
  get attached(): boolean {
    return this.watchers > 0;
  }

  /** The last turn the provider's service failed, if any. */
  get lastTurnFailure(): TurnFailureNote | undefined {
    return this.lastFailure;
  }

  /** A stream opened on it (closed by the function returned). */
  watch(): () => void {
    this.watchers++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.watchers--;
    };
  }

  /** Its provider now, or a 409 when the city no longer has it. */
  provider(): ResolvedProvider {
    const provider = this.ctx.provider(this.record.provider);
    if (!provider) {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: session ${this.id}'s provider ${this.record.provider} is no longer configured`,
      );
    }
    return provider;
  }

  view(): SessionResponse {
    const r = this.record;
    const provider = this.ctx.provider(r.provider);
    const pid = this.running ? this.runtime?.pid : undefined;
    const view: SessionResponse = {
      id: r.id,
      template: r.template,
      title: r.title,
      provider: r.provider,
      session_name: r.session_name,
      state: r.state,
      running: this.running,
      attached: this.attached,
      created_at: r.created_at,
      kind: r.kind,
      work_dir: r.work_dir,
      queued: this.queue.length,
      submission_capabilities: { supports_follow_up: true, supports_interrupt_now: true },
    };
    if (r.alias) view.alias = r.alias;
    if (this.running) view.activity = this.activity;
    if (r.last_active) view.last_active = r.last_active;
    if (this.lastOutput) view.last_output = this.lastOutput;
    if (r.reason) view.reason = r.reason;
    const mode = r.permission_mode ?? provider?.default_permission_mode;
    if (mode) view.permission_mode = mode;
    if (this.pendingInteraction) view.pending = this.pendingInteraction;
    if (pid !== undefined) view.pid = pid;
    if (r.provider_session_key) view.provider_session_key = r.provider_session_key;
    if (this.running && this.runtime?.attach) view.attach = this.runtime.attach;
    return view;
  }

  /**
   * The view with what the program shows now (`peek`): a terminal's screen, its last `lines` lines, as
   * `last_output`; for the others, the last `lines` lines of its latest output.
   */
  async peekView(lines: number): Promise<SessionResponse> {
    const view = this.view();
    const screen = this.running && this.runtime?.peek ? await this.runtime.peek(lines) : undefined;
    const text = screen ? screen.join('\n') : this.lastOutput.split('\n').slice(-lines).join('\n');
    if (text) view.last_output = text;
    else delete view.last_output;
    return view;
  }

  /** A controller that starts finds this session: whatever the last one left running is ended first. */
  adopt(): void {
    reapLeftover(this.dir);
  }

  // ---------------------------------------------------------------------------------------------------------
  // Lifecycle

  /**
   * Starts its program (resuming the provider's conversation where it can). `command` is `start` for a new
   * session and `wake` for a dormant one; `restart` is the controller's own, for a session that was running when
   * the last controller stopped. Resolves once it is started (not yet ready); failures end as `failed-create`
   * or `asleep`, with the reason recorded.
   */
  async wake(command: 'start' | 'wake' | 'restart', reason: string): Promise<void> {
    if (command !== 'restart') this.transition(command);
    else this.setState('creating');
    this.record.reason = reason;
    this.save({ reason });
    let provider: ResolvedProvider;
    try {
      provider = this.provider();
      this.ensureWorkDir();
      const resumeKey = canResume(provider) ? this.record.provider_session_key : undefined;
      const first = provider.prompt_mode !== 'stdin' ? this.queue.peek() : undefined;
      this.runtime = createRuntime(
        {
          sessionId: this.id,
          provider,
          workDir: this.record.work_dir,
          env: this.environment(provider),
          stateDir: this.dir,
          resumeKey,
          permissionMode: this.record.permission_mode,
          firstMessage: first?.text,
          startTimeoutMs: this.ctx.startTimeoutMs,
        },
        this.sink(),
      );
      await this.runtime.start();
      if (first) await this.delivered(this.queue.shift()!);
      await this.write({
        kind: 'start',
        actor: 'ctl',
        text: `${provider.display_name} started${this.runtime.pid !== undefined ? ` (pid ${this.runtime.pid})` : ''}${resumeKey ? `, resuming ${resumeKey}` : ''}`,
        data: { pid: this.runtime.pid, command: provider.command, ...(resumeKey ? { resumed: resumeKey } : {}) },
      });
    } catch (err) {
      this.runtime = undefined;
      const why = err instanceof Problem ? err.detail : (err as Error).message;
      await this.startFailed(why);
      this.emit('ended', { crashed: true, ran_ms: 0 });
      return;
    }
    this.startTimer = setTimeout(() => {
      if (this.state === 'creating') void this.runtime?.stop(this.ctx.stopGraceMs);
    }, this.ctx.startTimeoutMs);
  }

  /**
   * Ends its program at a person's request (kill, suspend, close) or the controller's shutdown; the caller has
   * moved the state already (a shutdown leaves it, so the next controller starts the program again).
   */
  async stopProgram(reason: string): Promise<void> {
    this.record.reason = reason;
    this.save({ reason });
    const runtime = this.runtime;
    if (runtime?.isRunning()) await runtime.stop(this.ctx.stopGraceMs);
  }

  /** `kill`: its program ends; the session sleeps until a message or `wake`. */
  async kill(): Promise<void> {
    if (!this.runtime?.isRunning()) {
      throw new Problem('conflict-wrong-state', `conflict: session ${this.id} is not running`);
    }
    await this.sleep('killed');
  }

  /** Its program ends and the session sleeps until a message or `wake` (the controller's idle sleep, a kill). */
  async sleep(reason: string): Promise<void> {
    this.setState(nextState(this.state, 'exited') ?? nextState(this.state, 'fail-create') ?? this.state);
    await this.stopProgram(reason);
  }

  /** Its program ends and starts again at once, on what the configuration says now (`changes`). */
  async restart(reason: string, changes: Partial<SessionRecord>): Promise<void> {
    this.restarting = true;
    try {
      await this.sleep(reason);
      await this.exiting;
      Object.assign(this.record, changes);
      this.save(changes);
      await this.wake('wake', reason);
    } finally {
      this.restarting = false;
    }
  }

  /** A restart is under way: between its stop and its start the session only looks asleep. */
  get changing(): boolean {
    return this.restarting;
  }

  // ---------------------------------------------------------------------------------------------------------
  // Messages

  /**
   * Queues a message: delivered as soon as the program can take it (after the messages before it), or — for a
   * dormant session — once it has woken. With `wake` (the reason), a session asleep is woken for it (one
   * quarantined is not: only an explicit wake starts it); without, it waits for whoever wakes it (the tick).
   * Returns the message id.
   */
  enqueue(text: string, intent: SubmitIntent, options: EnqueueOptions = {}): string {
    const { request } = options;
    const message: QueuedMessage = {
      message_id: `msg-${randomBytes(8).toString('hex')}`,
      text,
      intent,
      queued:
        !this.ready ||
        this.delivering ||
        this.queue.length > 0 ||
        this.activity === 'in-turn' ||
        this.pending !== undefined,
      accepted_at: new Date().toISOString(),
      ...(request ? { request_id: request.id, operation: request.operation } : {}),
    };
    this.queue.push(message);
    if (intent === 'interrupt_now' && this.activity === 'in-turn') this.interruptWanted = true;
    void this.deliverNext();
    if (options.wake !== undefined && wakesOnMessage(this.state)) {
      this.wake('wake', options.wake).catch((err: unknown) =>
        this.ctx.logger.error({ err, session: this.id }, 'could not wake the session for a message'),
      );
    }
    return message.message_id;
  }

  /** Hands queued messages to the program, one at a time, in order, as it becomes able to take them. */
  async deliverNext(): Promise<void> {
    if (this.delivering) return;
    this.delivering = true;
    try {
      for (;;) {
        const next = this.queue.peek();
        if (!next || !this.ready || !this.runtime || this.pendingInteraction) return;
        // A draining session finishes the turn it has and takes no other.
        if (this.state === 'draining') return;
        const busy = this.openTurns.length > 0;
        if (next.intent === 'interrupt_now' && busy) {
          if (this.interruptWanted) {
            this.interruptWanted = false;
            await this.runtime.interrupt();
          }
          return; // delivered when the turn has ended
        }
        // A program that takes one turn at a time gets the next message when it has answered the last.
        if (busy && (next.intent === 'follow_up' || !this.runtime.capabilities.concurrentTurns)) return;
        try {
          await this.runtime.deliver({ id: next.message_id, text: next.text });
        } catch {
          return; // the program went away: its exit fails what is left
        }
        await this.delivered(this.queue.shift()!);
      }
    } finally {
      this.delivering = false;
    }
  }

  // ---------------------------------------------------------------------------------------------------------
  // Commands

  /** Ends the current turn. False when none was in progress. */
  async interrupt(): Promise<boolean> {
    if (!this.runtime?.isRunning()) {
      throw new Problem('conflict-wrong-state', `conflict: session ${this.id} is not running`);
    }
    return this.runtime.interrupt();
  }

  async respond(answer: { action: string; request_id?: string; text?: string }): Promise<string> {
    const pending = this.pendingInteraction;
    if (!pending || !this.runtime?.isRunning()) {
      throw new Problem('conflict-wrong-state', `conflict: session ${this.id} has no pending interaction`);
    }
    if (answer.request_id !== undefined && answer.request_id !== pending.request_id) {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: session ${this.id} is waiting on ${pending.request_id}, not ${answer.request_id}`,
      );
    }
    if (pending.kind === 'tool-approval' && answer.action !== 'allow' && answer.action !== 'deny') {
      const message = 'a permission request is answered with allow or deny';
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.action', message, value: answer.action }],
      });
    }
    if (pending.kind === 'question' && answer.text === undefined && answer.action !== 'answer') {
      const message = 'a question is answered with action "answer" and the answer in text';
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.action', message, value: answer.action }],
      });
    }
    await this.runtime.respond(pending.request_id, answer);
    return pending.request_id;
  }

  async setPermissionMode(mode: string): Promise<void> {
    const provider = this.provider();
    if (!(mode in provider.permission_modes)) {
      const known = Object.keys(provider.permission_modes);
      const message = known.length
        ? `${mode} is not a permission mode of ${provider.name} (${known.join(', ')})`
        : `${provider.name} has no permission modes`;
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.permission_mode', message, value: mode }],
      });
    }
    this.record.permission_mode = mode;
    let reason = `permission mode ${mode}`;
    if (this.runtime?.isRunning() && !(await this.runtime.setPermissionMode(mode))) {
      reason += ' (takes effect when the program next starts)';
    }
    this.record.reason = reason;
    this.save({ permission_mode: mode, reason });
    await this.recordLifecycle('session.updated', reason);
  }

  rename(changes: { title?: string; alias?: string }): void {
    if (changes.title !== undefined) this.record.title = changes.title;
    if (changes.alias !== undefined) this.record.alias = changes.alias || undefined;
    this.save(changes);
  }

  transition(command: SessionCommand): void {
    this.setState(requireTransition(this.id, this.state, command));
  }

  /** Fails every undelivered message's request (the program is gone, or the session closed). */
  async failQueued(code: string, message: string): Promise<void> {
    for (const queued of this.queue.drain()) {
      if (!queued.request_id) continue;
      await this.ctx.log.append({
        type: 'request.failed',
        actor: 'ctl',
        subject: this.id,
        message,
        payload: {
          request_id: queued.request_id,
          operation: queued.operation!,
          error_code: code,
          error_message: message,
        },
      });
    }
  }

  async recordLifecycle(
    type:
      | 'session.created'
      | 'session.woke'
      | 'session.stopped'
      | 'session.suspended'
      | 'session.closed'
      | 'session.updated'
      | 'session.draining'
      | 'session.quarantined'
      | 'session.restart_pending',
    reason?: string,
  ): Promise<void> {
    const payload: SessionLifecyclePayload = {
      session_id: this.id,
      template: this.record.template,
      provider: this.record.provider,
      state: this.state,
      ...(reason ? { reason } : {}),
      ...(type === 'session.woke' && this.runtime?.pid !== undefined ? { pid: this.runtime.pid } : {}),
    };
    await this.ctx.log.append({
      type,
      actor: 'ctl',
      subject: this.id,
      ...(reason ? { message: reason } : {}),
      payload,
    });
  }

  // ---------------------------------------------------------------------------------------------------------

  /** What the runtime tells us, turned into transcript entries, state, events and stream frames. */
  private sink(): RuntimeSink {
    return {
      ready: () => void this.becameReady(),
      output: (kind, text, data) => {
        const now = new Date().toISOString();
        this.record.last_active = now;
        if (kind === 'assistant') {
          // A streamed chunk continues the reply of its turn; anything else starts a line.
          const continues = data?.chunk === true && this.lastOutputTurn === this.currentTurn();
          const separator = this.lastOutput && !continues ? '\n' : '';
          this.lastOutput = (this.lastOutput + separator + text).slice(-LAST_OUTPUT_CHARS);
          this.lastOutputTurn = this.currentTurn();
        }
        void this.write({
          kind,
          actor: kind === 'error' ? 'ctl' : 'assistant',
          text,
          data: { turn: this.currentTurn(), ...data },
        });
      },
      turnEnded: (data, failure) => {
        const ended = this.openTurns.shift() ?? this.turn;
        if (data) this.recordUsage(data);
        if (this.openTurns.length === 0) this.setActivity('idle');
        this.save({ last_active: this.record.last_active });
        const category = failure ? categoryOf(failure) : undefined;
        if (failure) this.lastFailure = { category: category!, message: failure.message, at: Date.now() };
        void this.write({
          kind: 'turn_end',
          actor: 'ctl',
          data: { turn: ended, ...data, ...(failure ? { error: failure.message, error_category: category } : {}) },
        }).then(() => this.deliverNext());
        if (failure) {
          void this.ctx.log.append({
            type: 'session.turn_failed',
            actor: 'ctl',
            subject: this.id,
            message: failure.message,
            payload: {
              session_id: this.id,
              template: this.record.template,
              provider: this.record.provider,
              turn: ended,
              category: category!,
              error: failure.message,
              ...(failure.status !== undefined ? { status: failure.status } : {}),
            },
          });
        }
      },
      pending: (interaction) => {
        this.pendingInteraction = interaction;
        this.inOrder(() => this.emit('pending', interaction));
        void this.write({
          kind: 'pending',
          actor: 'assistant',
          text: interaction.prompt ?? interaction.kind,
          data: {
            turn: this.currentTurn(),
            request_id: interaction.request_id,
            pending_kind: interaction.kind,
            options: interaction.options,
            metadata: interaction.metadata,
          },
        });
        void this.ctx.log.append({
          type: 'session.pending',
          actor: 'ctl',
          subject: this.id,
          message: interaction.prompt,
          payload: {
            session_id: this.id,
            request_id: interaction.request_id,
            kind: interaction.kind,
            ...(interaction.prompt ? { prompt: interaction.prompt } : {}),
          },
        });
      },
      pendingCleared: (requestId, action) => {
        if (this.pendingInteraction?.request_id === requestId) this.pendingInteraction = undefined;
        this.inOrder(() => this.emit('pending_cleared', requestId));
        void this.write({
          kind: 'pending_cleared',
          actor: action === 'abandoned' ? 'ctl' : 'user',
          text: action,
          data: { turn: this.currentTurn(), request_id: requestId, action },
        });
        void this.ctx.log.append({
          type: 'session.pending_cleared',
          actor: 'ctl',
          subject: this.id,
          payload: { session_id: this.id, request_id: requestId, action },
        });
        void this.deliverNext();
      },
      sessionKey: (key) => {
        if (this.record.provider_session_key === key) return;
        this.record.provider_session_key = key;
        this.save({ provider_session_key: key });
      },
      resumeRefused: (reason) => {
        const key = this.record.provider_session_key;
        const refusal = `could not resume conversation ${key ?? ''}: ${reason}; the next start begins a new one`;
        this.resumeRefusal = refusal;
        this.record.provider_session_key = undefined;
        this.save({ provider_session_key: undefined });
        void this.write({ kind: 'error', actor: 'ctl', text: refusal });
        void this.recordLifecycle('session.updated', refusal);
      },
      exited: (exit) => {
        this.exiting = this.programExited(exit);
      },
      behind: () => (this.writesWaiting > MAX_WRITES_WAITING ? this.writes.then(() => undefined) : undefined),
    };
  }

  private async becameReady(): Promise<void> {
    clearTimeout(this.startTimer);
    this.ready = true;
    this.readyAt = Date.now();
    this.idleAt = Date.now();
    const to = nextState(this.state, 'ready');
    if (to !== undefined) this.setState(to);
    this.record.reason = undefined;
    this.save({ reason: undefined });
    await this.recordLifecycle('session.woke');
    await this.settleCreate(undefined);
    await this.deliverNext();
  }

  /** The turn output belongs to now: the oldest one not yet ended, else the last one. */
  /** The turn's usage, when its provider reported any, for `GET /usage`. */
  private recordUsage(data: Record<string, unknown>): void {
    const used = this.ctx.usage ? usageOf(data) : undefined;
    if (!used) return;
    this.ctx.usage!({
      ts: new Date().toISOString(),
      session_id: this.id,
      session: this.record.session_name,
      ...(this.record.kind === 'agent' ? { agent: this.record.template } : {}),
      provider: this.record.provider,
      ...used,
      ...(typeof data.duration_ms === 'number' ? { duration_ms: data.duration_ms } : {}),
    });
  }

  private currentTurn(): number {
    return this.openTurns[0] ?? this.turn;
  }

  private async delivered(message: QueuedMessage): Promise<void> {
    this.turn++;
    this.openTurns.push(this.turn);
    this.record.last_active = new Date().toISOString();
    this.setActivity('in-turn');
    await this.write({
      kind: 'user',
      actor: 'user',
      text: message.text,
      data: { turn: this.turn, message_id: message.message_id, intent: message.intent },
    });
    if (!message.request_id) return;
    if (message.operation === 'session.submit') {
      await this.ctx.log.append({
        type: 'request.result.session.submit',
        actor: 'ctl',
        subject: this.id,
        payload: {
          request_id: message.request_id,
          session_id: this.id,
          message_id: message.message_id,
          intent: message.intent,
          queued: message.queued,
        },
      });
    } else {
      await this.ctx.log.append({
        type: 'request.result.session.message',
        actor: 'ctl',
        subject: this.id,
        payload: { request_id: message.request_id, session_id: this.id, message_id: message.message_id },
      });
    }
  }

  private async programExited(exit: ProgramExit): Promise<void> {
    clearTimeout(this.startTimer);
    const wasReady = this.ready;
    const refusal = this.resumeRefusal;
    this.resumeRefusal = undefined;
    const pid = this.runtime?.pid;
    const ranMs = wasReady ? Date.now() - this.readyAt : 0;
    this.runtime = undefined;
    this.ready = false;
    this.openTurns = [];
    this.setActivity('idle');
    // Told once the state below is settled.
    const crashed = !exit.requested && !(refusal !== undefined && wasReady);
    setImmediate(() => this.emit('ended', { crashed, ran_ms: ranMs }));
    await this.write({
      kind: 'exit',
      actor: 'ctl',
      text: exit.signal ? `exited on ${exit.signal}` : `exited with code ${exit.code}`,
      data: { code: exit.code, signal: exit.signal, requested: exit.requested },
    });
    if (exit.requested) {
      // Whoever asked has set the state (asleep, suspended, closed) and the reason. A create still waiting for its
      // program to be ready ends with it.
      if (!wasReady) await this.failCreate(`stopped before it was ready (${this.record.reason ?? 'asked to'})`);
      if (this.state !== 'closed')
        await this.recordLifecycle(
          this.state === 'suspended' ? 'session.suspended' : 'session.stopped',
          this.record.reason,
        );
      await this.failQueued('session_stopped', `session ${this.id} stopped before the message was delivered`);
      return;
    }
    const how = exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
    if (refusal !== undefined && wasReady) {
      // It ended because its conversation was gone, and said so: not a crash. Asleep, the next message starts
      // it on a new conversation (the key rotation and its reason are in the transcript and session.updated).
      const to = nextState(this.state, 'exited');
      if (to !== undefined) this.setState(to);
      this.record.reason = refusal;
      this.save({ reason: refusal });
      await this.failQueued('session_exited', `session ${this.id}'s program ${how} before the message was delivered`);
      return;
    }
    const reason = wasReady ? `its program ${how}` : `its program ${how} before it was ready`;
    if (!wasReady && this.state === 'creating') {
      await this.startFailed(`${reason}${exit.stderrTail ? `: ${exit.stderrTail.split('\n').at(-1)}` : ''}`, exit, pid);
      return;
    }
    const to = nextState(this.state, 'exited');
    if (to !== undefined) this.setState(to);
    this.record.reason = reason;
    this.save({ reason });
    await this.ctx.log.append({
      type: 'session.crashed',
      actor: 'ctl',
      subject: this.id,
      message: reason,
      payload: {
        session_id: this.id,
        template: this.record.template,
        provider: this.record.provider,
        pid: pid ?? 0,
        exit_code: exit.code,
        signal: exit.signal,
        ...(exit.stderrTail ? { stderr_tail: exit.stderrTail } : {}),
      },
    });
    await this.failQueued('session_exited', `session ${this.id}'s program ${how} before the message was delivered`);
  }

  /** The program could not be started, or ended before it was ready. */
  private async startFailed(reason: string, exit?: ProgramExit, pid?: number): Promise<void> {
    const to = nextState(this.state, 'fail-create') ?? nextState(this.state, 'exited');
    if (to !== undefined) this.setState(to);
    this.record.reason = reason;
    this.save({ reason });
    if (!exit) await this.write({ kind: 'error', actor: 'ctl', text: reason });
    await this.ctx.log.append({
      type: 'session.crashed',
      actor: 'ctl',
      subject: this.id,
      message: reason,
      payload: {
        session_id: this.id,
        template: this.record.template,
        provider: this.record.provider,
        pid: pid ?? 0,
        exit_code: exit?.code ?? null,
        signal: exit?.signal ?? null,
        ...(exit?.stderrTail ? { stderr_tail: exit.stderrTail } : {}),
      },
    });
    await this.settleCreate(reason);
    await this.failQueued('session_start_failed', `session ${this.id} could not start: ${reason}`);
  }

  /** Fails the create request still waiting, if there is one. */
  failCreate(reason: string): Promise<void> {
    return this.settleCreate(reason);
  }

  /** Ends the create request still waiting (with its result, or its failure). */
  private async settleCreate(failure: string | undefined): Promise<void> {
    const requestId = this.record.create_request;
    if (!requestId) return;
    this.record.create_request = undefined;
    this.save({ create_request: undefined });
    if (failure === undefined) {
      await this.ctx.log.append({
        type: 'request.result.session.create',
        actor: 'ctl',
        subject: this.id,
        payload: { request_id: requestId, session_id: this.id },
      });
    } else {
      await this.ctx.log.append({
        type: 'request.failed',
        actor: 'ctl',
        subject: this.id,
        message: failure,
        payload: {
          request_id: requestId,
          operation: 'session.create',
          error_code: 'session_start_failed',
          error_message: failure,
        },
      });
    }
  }

  /** An agent's directory inside the city is made when missing; one outside it must exist. */
  private ensureWorkDir(): void {
    const dir = this.record.work_dir;
    if (existsSync(dir)) return;
    const root = this.ctx.cityRoot;
    if (dir !== root && !dir.startsWith(`${root}/`)) throw new Error(`its working directory ${dir} does not exist`);
    mkdirSync(dir, { recursive: true });
  }

  private environment(provider: ResolvedProvider): NodeJS.ProcessEnv {
    return {
      ...this.ctx.env,
      ...provider.env,
      CTL_CITY: this.ctx.cityName,
      CTL_CITY_ROOT: this.ctx.cityRoot,
      CTL_SESSION_ID: this.id,
      CTL_SESSION_NAME: this.record.session_name,
      CTL_TEMPLATE: this.record.template,
      CTL_PROVIDER: provider.name,
    };
  }

  private setState(state: SessionState): void {
    if (this.record.state === state) return;
    this.record.state = state;
    this.save({ state });
    this.emit('state', state);
  }

  private setActivity(activity: 'idle' | 'in-turn'): void {
    if (this.activity === activity) return;
    this.activity = activity;
    if (activity === 'idle') this.idleAt = Date.now();
    this.inOrder(() => this.emit('activity', activity));
  }

  /** Runs `show` after the entries being written now: a stream sees a turn end after the reply it ends. */
  private inOrder(show: () => void): void {
    this.writes = this.writes.then(show).catch(() => undefined);
  }

  private save(changed: Partial<SessionRecord>): void {
    try {
      this.ctx.store.save(this.record, changed);
    } catch (err) {
      // A session whose bead cannot be written still runs; the next save writes the whole change again.
      this.ctx.logger.error({ err, session: this.id }, 'could not save the session bead');
    }
  }

  /** Appends a transcript entry (in order with the others) and shows it to the stream. */
  private write(entry: NewEntry): Promise<EventRecord | undefined> {
    this.writesWaiting++;
    const written = this.writes.then(() => this.transcript.append(entry)).finally(() => this.writesWaiting--);
    this.writes = written.catch(() => undefined);
    return written.then(
      (record) => {
        this.emit('entry', record);
        return record;
      },
      (err: unknown) => {
        this.ctx.logger.error({ err, session: this.id }, 'could not write the transcript');
        return undefined;
      },
    );
  }

  /** The turn count and latest output, from the end of the transcript (a restarted controller goes on from them). */
  private restoreFromTranscript(): void {
    const { entries } = this.transcript.tail(200);
    const output: string[] = [];
    for (const record of entries.reverse()) {
      const payload = (record.payload ?? {}) as { turn?: unknown; text?: unknown };
      if (this.turn === 0 && typeof payload.turn === 'number') this.turn = payload.turn;
      if (
        record.type === 'assistant' &&
        typeof payload.text === 'string' &&
        output.join('\n').length < LAST_OUTPUT_CHARS
      ) {
        output.unshift(payload.text);
      }
      if (record.type === 'user' && output.length) break;
    }
    this.lastOutput = output.join('\n').slice(-LAST_OUTPUT_CHARS);
  }
}
