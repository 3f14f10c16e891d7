import type { SessionState } from '../../shared/dto/sessions.js';
import { LOCAL_HOST } from '../hosts/host.js';
import type { ProgramExit } from './runtime.js';
import type { SessionContext } from './session-context.js';
import type { LifecycleEvent, SessionEventLog } from './session-events.js';
import { nextState } from './session-states.js';
import type { SessionRecord } from './session-store.js';
import type { TranscriptWriter } from './transcript-writer.js';

/** What its program was as it ended, read as the session lets its runtime go. */
export interface ProgramGone {
  wasReady: boolean;
  pid: number | undefined;
  ranMs: number;
}

/** What settling the end of a session's program needs from the session around it. */
export interface ExitHost {
  readonly id: string;
  readonly record: SessionRecord;
  readonly state: SessionState;
  readonly ctx: SessionContext;
  writer: TranscriptWriter;
  events: SessionEventLog;
  /** Lets the ended program's runtime go (its turns, subagents and credential with it), saying what it was. */
  programGone(): ProgramGone;
  setState(state: SessionState): void;
  save(changed: Partial<SessionRecord>): void;
  failQueued(code: string, message: string): Promise<void>;
  recordLifecycle(type: LifecycleEvent, reason?: string): Promise<void>;
  /** Tells whoever listens (the tick) that it ended, once its state and events are settled. */
  ended(end: { crashed: boolean; ran_ms: number }): void;
}

/**
 * The settling of a session's program's end: a stop someone asked for, the controller's shutdown, a refused
 * resume, a crash, a start that failed or timed out, a host that stopped answering (`lost`, fenced). Each ends in
 * a state, a reason, its events, and the requests that waited for the program (its create, its queued messages)
 * ended with it.
 */
export class ExitSettlement {
  /** Why the program could not resume its conversation, when it said so: its end that follows is not a crash. */
  private resumeRefusal: string | undefined;
  private startTimedOut = false;
  /** Its program is ending because the controller stops: what waits for it stays for the next controller. */
  private withController = false;
  /** The handling of the program's last exit (a restart waits for it before it starts the next program). */
  private exiting: Promise<void> = Promise.resolve();
  /** Its program ended and what follows (state, events) is being settled. */
  private settlingExit = false;

  constructor(private readonly host: ExitHost) {}

  /** Its program ended and what follows is being settled: the session only looks asleep. */
  get settling(): boolean {
    return this.settlingExit;
  }

  /** Resolves once the last exit is settled. */
  settled(): Promise<void> {
    return this.exiting;
  }

  /**
   * The program said it cannot resume its conversation (`reason`): said once, the key dropped so the next start
   * begins a new one, and the end that follows is not a crash.
   */
  resumeRefused(reason: string): void {
    const host = this.host;
    const key = host.record.provider_session_key;
    const refusal = `could not resume conversation ${key ?? ''}: ${reason}; the next start begins a new one`;
    this.resumeRefusal = refusal;
    host.record.provider_session_key = undefined;
    host.save({ provider_session_key: undefined });
    void host.writer.write({ kind: 'error', actor: 'ctl', text: refusal });
    host
      .recordLifecycle('session.updated', refusal)
      .catch((err: unknown) => host.ctx.logger.error({ err, session: host.id }, 'could not record session.updated'));
  }

  /** The program was not ready in time and is being stopped: its exit is the start's failure. */
  timedOut(): void {
    this.startTimedOut = true;
  }

  /** The controller is stopping: the program's end leaves the session's state, queue and create as they are. */
  stoppingWithController(): void {
    this.withController = true;
  }

  /** What the runtime reports as its program exits. */
  exited(exit: ProgramExit): void {
    this.exiting = this.programExited(exit);
  }

  private async programExited(exit: ProgramExit): Promise<void> {
    const refusal = this.resumeRefusal;
    this.resumeRefusal = undefined;
    const { wasReady, pid, ranMs } = this.host.programGone();
    const crashed = !exit.requested && !(refusal !== undefined && wasReady) && exit.hostLost === undefined;
    // Until the state below is settled and its events written, the session only looks asleep: the tick leaves it
    // alone (`changing`), and hears that it ended only then — so a crash is counted, and a session that crashed
    // too often is quarantined, before anything could start it again.
    this.settlingExit = true;
    try {
      await this.settleExit(exit, wasReady, refusal, pid);
    } finally {
      this.settlingExit = false;
      this.host.ended({ crashed, ran_ms: ranMs });
    }
  }

  private async settleExit(
    exit: ProgramExit,
    wasReady: boolean,
    refusal: string | undefined,
    pid: number | undefined,
  ): Promise<void> {
    const host = this.host;
    await host.writer.write({
      kind: 'exit',
      actor: 'ctl',
      text: exit.signal ? `exited on ${exit.signal}` : `exited with code ${exit.code}`,
      data: { code: exit.code, signal: exit.signal, requested: exit.requested },
    });
    if (this.startTimedOut) {
      this.startTimedOut = false;
      return this.startFailed(`its program was not ready within ${host.ctx.startTimeoutMs} ms`, exit, pid);
    }
    if (exit.requested && this.withController) {
      await host.recordLifecycle('session.stopped', host.record.reason);
      return;
    }
    if (exit.requested) {
      // Whoever asked has set the state (asleep, suspended, closed) and the reason. A create still waiting for its
      // program to be ready ends with it.
      if (!wasReady) await this.settleCreate(`stopped before it was ready (${host.record.reason ?? 'asked to'})`);
      if (host.state !== 'closed')
        await host.recordLifecycle(
          host.state === 'suspended' ? 'session.suspended' : 'session.stopped',
          host.record.reason,
        );
      await host.failQueued('session_stopped', `session ${host.id} stopped before the message was delivered`);
      return;
    }
    if (exit.hostLost !== undefined) return this.lost(exit.hostLost);
    const how = exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
    if (refusal !== undefined && wasReady) {
      // It ended because its conversation was gone, and said so: not a crash. Asleep, the next message starts
      // it on a new conversation (the key rotation and its reason are in the transcript and session.updated).
      const to = nextState(host.state, 'exited');
      if (to !== undefined) host.setState(to);
      host.record.reason = refusal;
      host.save({ reason: refusal });
      await host.failQueued('session_exited', `session ${host.id}'s program ${how} before the message was delivered`);
      return;
    }
    const reason = wasReady ? `its program ${how}` : `its program ${how} before it was ready`;
    if (!wasReady && host.state === 'creating') {
      await this.startFailed(`${reason}${exit.stderrTail ? `: ${exit.stderrTail.split('\n').at(-1)}` : ''}`, exit, pid);
      return;
    }
    const to = nextState(host.state, 'exited');
    if (to !== undefined) host.setState(to);
    host.record.reason = reason;
    host.save({ reason });
    await host.events.crashed(reason, exit, pid);
    await host.failQueued('session_exited', `session ${host.id}'s program ${how} before the message was delivered`);
  }

  /**
   * Its host stopped answering (decisions.md: nothing there is resurrected behind anyone's back): `lost` until a
   * person wakes or closes it, not counted as a crash. The beads it holds stay held until `lost_until`, when the
   * program there is certainly gone (the host's fence), and then go back to the pool (the tick's).
   */
  private async lost(why: string): Promise<void> {
    const session = this.host;
    const host = session.ctx.hostOf?.(session.record);
    const hostName = host?.name ?? LOCAL_HOST;
    const fenceUntil = new Date(Date.now() + (host?.fenceMs ?? 0)).toISOString();
    const reason = `its host ${host ? `${host.name} ` : ''}stopped answering: ${why}`;
    session.setState(nextState(session.state, 'lose') ?? session.state);
    session.record.reason = reason;
    session.record.lost_until = fenceUntil;
    session.save({ reason, lost_until: fenceUntil });
    await this.settleCreate(reason);
    await session.events.lost(hostName, reason, fenceUntil);
    await session.failQueued('session_lost', `session ${session.id}'s ${reason} before the message was delivered`);
  }

  /** The program could not be started, or ended before it was ready. */
  async startFailed(reason: string, exit?: ProgramExit, pid?: number): Promise<void> {
    const host = this.host;
    const to = nextState(host.state, 'fail-create') ?? nextState(host.state, 'exited');
    if (to !== undefined) host.setState(to);
    host.record.reason = reason;
    host.save({ reason });
    if (!exit) await host.writer.write({ kind: 'error', actor: 'ctl', text: reason });
    await host.events.crashed(reason, exit, pid);
    await this.settleCreate(reason);
    await host.failQueued('session_start_failed', `session ${host.id} could not start: ${reason}`);
  }

  /** Ends the create request still waiting, if there is one: with its result, or its failure. */
  async settleCreate(failure: string | undefined): Promise<void> {
    const host = this.host;
    const requestId = host.record.create_request;
    if (!requestId) return;
    host.record.create_request = undefined;
    host.save({ create_request: undefined });
    if (failure === undefined) await host.events.created(requestId);
    else await host.events.requestFailed(requestId, 'session.create', 'session_start_failed', failure);
  }
}
