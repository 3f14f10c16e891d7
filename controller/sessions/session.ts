import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type {
  PendingInteraction,
  SessionResponse,
  SessionState,
  SessionWorktreeRelease,
  SubmitIntent,
} from '../../shared/dto/sessions.js';
import type { EventRecord } from '../../shared/events/record.js';
import { Problem } from '../../shared/http/problem.js';
import { effectiveOptions } from '../providers/provider-options.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { ProgramHook } from './program-hooks.js';
import type { RuntimeSink, SessionRuntime } from './runtime.js';
import { prepareLaunch } from './program-launch.js';
import { ExitSettlement } from './session-exit.js';
import { SessionEventLog, type LifecycleEvent } from './session-events.js';
import { nextState, requireTransition, wakesOnMessage, type SessionCommand } from './session-states.js';
import type { SessionRecord } from './session-store.js';
import type { EnqueueOptions, SessionContext, SessionEvents } from './session-context.js';
import { peekView, sessionView, type ViewParts } from './session-view.js';
import { Subagents } from './subagents.js';
import { Transcript, type NewEntry } from './transcript.js';
import { TranscriptWriter } from './transcript-writer.js';
import { Turns, type TurnFailureNote } from './turns.js';

export type { TurnFailureNote } from './turns.js';
export type { EnqueueOptions, SessionContext, SessionEvents } from './session-context.js';

/**
 * One session: its record (the session bead), its lifecycle and — while it runs — its program's runtime. Its
 * turns (turns.ts), the settling of its program's end (session-exit.ts), transcript writes (transcript-writer.ts)
 * and city-log events (session-events.ts) are its parts. Every change of state goes through the transition table; every delivery, reply, question, start and
 * exit is a transcript entry; every lifecycle change is an event on the city log.
 */
export class Session extends EventEmitter<SessionEvents> {
  readonly dir: string;
  readonly transcript: Transcript;
  private readonly writer: TranscriptWriter;
  /** Its program's subagents, each with a transcript of its own. */
  readonly subagents: Subagents;
  readonly events: SessionEventLog;
  private readonly turns: Turns;
  private runtime: SessionRuntime | undefined;
  /** The program can take a turn. */
  private ready = false;
  private startTimer: NodeJS.Timeout | undefined;
  /** When the program last became ready (ms since the epoch), or 0. */
  private readyAt = 0;
  /** Open session streams: a person watching (or typing into) it. */
  private watchers = 0;
  private restarting = false;
  /** How its program's end is settled (session-exit.ts). */
  private readonly exits: ExitSettlement;
  /** Stops asked and not yet done: a start waits for them (`changing`), or their exit would take its runtime. */
  private stopping = 0;

  constructor(
    public record: SessionRecord,
    private readonly ctx: SessionContext,
  ) {
    super();
    this.setMaxListeners(0);
    this.dir = join(ctx.sessionsDir, record.id);
    mkdirSync(this.dir, { recursive: true });
    this.transcript = new Transcript(this.dir);
    this.writer = new TranscriptWriter(this.transcript, {
      sessionId: record.id,
      logger: ctx.logger,
      written: (entry) => this.emit('entry', entry),
    });
    this.subagents = new Subagents(this.dir, this.writer, () => this.running);
    this.events = new SessionEventLog(ctx.log, this);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the host reads the session as it is then
    const session = this;
    this.turns = new Turns(this.dir, this.transcript, {
      get record() {
        return session.record;
      },
      get state() {
        return session.state;
      },
      readyRuntime: () => (this.ready ? this.runtime : undefined),
      writer: this.writer,
      events: this.events,
      logger: ctx.logger,
      save: (changed) => this.save(changed),
      showActivity: (activity) => this.emit('activity', activity),
      showPending: (interaction) => this.emit('pending', interaction),
      showPendingCleared: (requestId) => this.emit('pending_cleared', requestId),
      usage: ctx.usage,
      usageContext: () => {
        const provider = ctx.provider(session.record.provider);
        const model = provider ? session.options(provider).model : session.record.options?.model;
        return { ...(model ? { model } : {}), windows: provider?.context_windows ?? {} };
      },
    });
    this.exits = new ExitSettlement({
      get id() {
        return session.id;
      },
      get record() {
        return session.record;
      },
      get state() {
        return session.state;
      },
      ctx,
      writer: this.writer,
      events: this.events,
      programGone: () => {
        clearTimeout(this.startTimer);
        const wasReady = this.ready;
        const gone = { wasReady, pid: this.runtime?.pid, ranMs: wasReady ? Date.now() - this.readyAt : 0 };
        this.runtime = undefined;
        // What its ctl on a host acted with dies with the program.
        this.ctx.credentialEnded?.(this.record);
        this.ready = false;
        this.turns.programEnded();
        this.subagents.closeAll();
        return gone;
      },
      setState: (state) => this.setState(state),
      save: (changed) => this.save(changed),
      failQueued: (code, message) => this.failQueued(code, message),
      recordLifecycle: (type, reason) => this.recordLifecycle(type, reason),
      ended: (end) => this.emit('ended', end),
    });
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

  get pid(): number | undefined {
    return this.runtime?.pid;
  }

  get pending(): PendingInteraction | undefined {
    return this.turns.pending;
  }

  /** Its program runs, is ready, and has nothing to do: no turn, nothing queued, nothing asked. */
  get idle(): boolean {
    return this.running && this.ready && this.turns.settled;
  }

  get inTurn(): boolean {
    return this.turns.inTurn;
  }

  /** Ready to take a turn (whether or not it has one). */
  get isReady(): boolean {
    return this.running && this.ready;
  }

  /** When it last became idle (ms since the epoch). */
  get idleSince(): number {
    return this.turns.idleSince;
  }

  /** When its program last became ready (ms since the epoch), or 0 while none runs. */
  get readySince(): number {
    return this.running && this.ready ? this.readyAt : 0;
  }

  /** Someone has its stream open, or its terminal in tmux: a person is attached to it. */
  get attached(): boolean {
    return this.watchers > 0 || (this.runtime?.clients ?? 0) > 0;
  }

  /** The last turn the provider's service failed, if any. */
  get lastTurnFailure(): TurnFailureNote | undefined {
    return this.turns.lastTurnFailure;
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
    return sessionView(this.viewParts());
  }

  /** The options its program starts with: its provider's defaults, then its agent's, then its own. */
  options(provider: ResolvedProvider): Record<string, string> {
    const agent = this.record.kind === 'agent' ? this.ctx.agentOptions?.(this.record) : undefined;
    return effectiveOptions(provider.option_defaults, agent, this.record.options);
  }

  /** The view with what the program shows now (`peek`), its last `lines` lines. */
  peekView(lines: number): Promise<SessionResponse> {
    return peekView(this.viewParts(), lines);
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
    // A lost session a person wakes: its fence is over with it.
    if (this.record.lost_until !== undefined) this.saveFields({ lost_until: undefined });
    this.record.reason = reason;
    this.save({ reason });
    let provider: ResolvedProvider;
    try {
      provider = this.provider();
      const { launch, resumeKey, first } = await prepareLaunch(this, this.ctx, provider, () =>
        this.turns.firstMessage(),
      );
      this.runtime = this.ctx.runtimes(launch, this.sink());
      await this.runtime.start();
      if (first) await this.turns.deliveredWithStart(first);
      await this.writer.write({
        kind: 'start',
        actor: 'ctl',
        text: `${provider.display_name} started${this.runtime.pid !== undefined ? ` (pid ${this.runtime.pid})` : ''}${resumeKey ? `, resuming ${resumeKey}` : ''}`,
        data: { pid: this.runtime.pid, command: provider.command, ...(resumeKey ? { resumed: resumeKey } : {}) },
      });
    } catch (err) {
      this.runtime = undefined;
      this.ctx.credentialEnded?.(this.record);
      const why = err instanceof Problem ? err.detail : (err as Error).message;
      await this.exits.startFailed(why);
      this.emit('ended', { crashed: true, ran_ms: 0 });
      return;
    }
    this.startTimer = setTimeout(() => {
      if (this.state !== 'creating') return;
      this.exits.timedOut(); // its exit is the start's failure, not a stop someone asked for
      void this.runtime?.stop(this.ctx.stopGraceMs);
    }, this.ctx.startTimeoutMs);
  }

  /**
   * Ends its program at a person's request (kill, suspend, close) or the controller's shutdown; the caller has
   * moved the state already (a shutdown leaves it, so the next controller starts the program again).
   */
  async stopProgram(reason: string, graceMs = this.ctx.stopGraceMs): Promise<void> {
    this.record.reason = reason;
    this.save({ reason });
    const runtime = this.runtime;
    if (!runtime?.isRunning()) return;
    this.stopping++;
    await runtime.stop(graceMs).finally(() => this.stopping--);
  }

  /** Ends its program as the controller stops: its state, queue and waiting create stay for the next controller. */
  async stopWithController(graceMs?: number): Promise<void> {
    this.exits.stoppingWithController();
    await this.stopProgram('the controller is stopping', graceMs);
  }

  /** `kill`: its program ends; the session sleeps until a message or `wake`. */
  async kill(): Promise<void> {
    this.runningRuntime();
    await this.sleep('killed');
  }

  /** Its program ends and the session sleeps until a message or `wake` (the controller's idle sleep, a kill). */
  async sleep(reason: string): Promise<void> {
    this.setState(nextState(this.state, 'exited') ?? nextState(this.state, 'fail-create') ?? this.state);
    await this.stopProgram(reason);
  }

  /** Its program ends and starts again at once, on `changes`; `between` runs once the old one's end is settled. */
  async restart(reason: string, changes: Partial<SessionRecord>, between?: () => Promise<void>): Promise<void> {
    this.restarting = true;
    try {
      await this.sleep(reason);
      await this.exits.settled();
      Object.assign(this.record, changes);
      this.save(changes);
      await between?.();
      await this.wake('wake', reason);
    } finally {
      this.restarting = false;
    }
  }

  /** A restart, a stop or the settling of its program's end is under way: the session only looks asleep. */
  get changing(): boolean {
    return this.restarting || this.exits.settling || this.stopping > 0;
  }

  // ---------------------------------------------------------------------------------------------------------
  // Messages and commands

  /**
   * Queues a message: delivered as soon as the program can take it (after the messages before it), or — for a
   * dormant session — once it has woken. With `wake` (the reason), a session asleep is woken for it (one
   * quarantined is not: only an explicit wake starts it); without, it waits for whoever wakes it (the tick).
   * Returns the message id.
   */
  enqueue(text: string, intent: SubmitIntent, options: EnqueueOptions = {}): string {
    const messageId = this.turns.enqueue(text, intent, options.request);
    if (options.wake !== undefined && wakesOnMessage(this.state)) {
      this.wake('wake', options.wake).catch((err: unknown) =>
        this.ctx.logger.error({ err, session: this.id }, 'could not wake the session for a message'),
      );
    }
    return messageId;
  }

  /** Ends the current turn. False when none was in progress. */
  async interrupt(): Promise<boolean> {
    return this.runningRuntime().interrupt();
  }

  async respond(answer: { action: string; request_id?: string; text?: string }): Promise<string> {
    if (!this.runtime?.isRunning() || !this.turns.pending) {
      throw new Problem('conflict-wrong-state', `conflict: session ${this.id} has no pending interaction`);
    }
    return this.turns.respond(this.runtime, answer);
  }

  /** A hook its program reported: false when its runtime has no use for hooks. A 409 when it is not running. */
  hook(hook: ProgramHook): boolean {
    return this.runningRuntime().hook?.(hook) ?? false;
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

  /** Appends an entry to its transcript, after those being written (its record, once written). */
  note(entry: NewEntry): Promise<EventRecord | undefined> {
    return this.writer.write(entry);
  }

  /** Fails every undelivered message's request (the program is gone, or the session closed). */
  failQueued(code: string, message: string): Promise<void> {
    return this.turns.failQueued(code, message);
  }

  recordLifecycle(type: LifecycleEvent, reason?: string, worktree?: SessionWorktreeRelease): Promise<void> {
    return this.events.lifecycle(type, reason, worktree);
  }

  // ---------------------------------------------------------------------------------------------------------

  /** What the runtime tells us, turned into transcript entries, state, events and stream frames. */
  private sink(): RuntimeSink {
    return {
      ready: () => void this.becameReady(),
      output: (kind, text, data) => this.turns.output(kind, text, data),
      turnEnded: (data, failure) => {
        this.turns.turnEnded(data, failure);
        // A session on a host: what it committed this turn is in the rig as the turn ends; then overlaps are read.
        void this.ctx.worktrees.turnEnded(this.record);
      },
      turnBegan: (reason) => this.turns.begunByProgram(reason),
      subagent: (output) => this.subagents.record(output),
      pending: (interaction) => this.turns.asked(interaction),
      pendingCleared: (requestId, action) => this.turns.answered(requestId, action),
      deliveryRetried: (retry) => this.turns.deliveryRetried(retry),
      sessionKey: (key) => {
        if (this.record.provider_session_key === key) return;
        this.record.provider_session_key = key;
        this.save({ provider_session_key: key });
      },
      resumeRefused: (reason) => this.exits.resumeRefused(reason),
      exited: (exit) => this.exits.exited(exit),
      behind: () => this.writer.behind(),
    };
  }

  private async becameReady(): Promise<void> {
    clearTimeout(this.startTimer);
    this.ready = true;
    this.readyAt = Date.now();
    this.turns.ready();
    const to = nextState(this.state, 'ready');
    if (to !== undefined) this.setState(to);
    this.record.reason = undefined;
    this.save({ reason: undefined });
    await this.recordLifecycle('session.woke');
    await this.exits.settleCreate(undefined);
    await this.turns.deliverNext();
  }

  /** Ends the create request still waiting, if there is one: with its result, or its failure. */
  settleCreate(failure: string | undefined): Promise<void> {
    return this.exits.settleCreate(failure);
  }

  private setState(state: SessionState): void {
    if (this.record.state === state) return;
    this.record.state = state;
    const changed: Partial<SessionRecord> = { state };
    // Who suspended it matters only while it is suspended (a person's setPermissionMode rewrites the reason).
    if (state !== 'suspended' && this.record.suspended_by !== undefined) {
      this.record.suspended_by = undefined;
      changed.suspended_by = undefined;
    }
    this.save(changed);
    this.emit('state', state);
  }

  /** Sets and saves fields of its record. */
  saveFields(changed: Partial<SessionRecord>): void {
    Object.assign(this.record, changed);
    this.save(changed);
  }

  private save(changed: Partial<SessionRecord>): void {
    try {
      this.ctx.store.save(this.record, changed);
    } catch (err) {
      // A session whose bead cannot be written still runs; the next save writes the whole change again.
      this.ctx.logger.error({ err, session: this.id }, 'could not save the session bead');
    }
  }

  /** Its runtime while its program runs; a 409 otherwise. */
  private runningRuntime(): SessionRuntime {
    if (!this.runtime?.isRunning()) {
      throw new Problem('conflict-wrong-state', `conflict: session ${this.id} is not running`);
    }
    return this.runtime;
  }

  private viewParts(): ViewParts {
    const provider = this.ctx.provider(this.record.provider);
    return {
      record: this.record,
      provider,
      options: provider ? this.options(provider) : { ...this.record.options },
      running: this.running ? this.runtime : undefined,
      attached: this.attached,
      queued: this.turns.queued,
      activity: this.turns.activity,
      lastOutput: this.turns.lastOutput,
      pending: this.turns.pending,
    };
  }
}
