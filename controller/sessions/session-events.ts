import type { AsyncOperation } from '../../shared/dto/events.js';
import type { SessionState, SessionWorktreeRelease, SubmitIntent } from '../../shared/dto/sessions.js';
import type {
  SessionLifecyclePayload,
  SessionLostPayload,
  TurnFailureCategory,
} from '../../shared/dto/session-event-payloads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { ProgramExit } from './runtime.js';
import type { TurnFailure } from './turn-failure.js';
import type { SessionRecord } from './session-store.js';

export type LifecycleEvent =
  | 'session.created'
  | 'session.woke'
  | 'session.stopped'
  | 'session.suspended'
  | 'session.closed'
  | 'session.updated'
  | 'session.draining'
  | 'session.quarantined'
  | 'session.quarantine_lifted'
  | 'session.restart_pending';

/** What a session's events say about it: read when each is recorded. */
export interface EventSubject {
  readonly record: SessionRecord;
  readonly state: SessionState;
  /** Its program's pid, while one runs. */
  readonly pid: number | undefined;
}

/**
 * What a session records on the city's event log: its lifecycle, its crashes, failed turns, questions asked and
 * answered, and the ends of the asynchronous requests it carries out (creates, messages). One place builds each
 * payload.
 */
export class SessionEventLog {
  constructor(
    private readonly log: EventLog,
    private readonly session: EventSubject,
  ) {}

  private get id(): string {
    return this.session.record.id;
  }

  /** `worktree`: at `session.closed`, what became of its worktree. */
  async lifecycle(type: LifecycleEvent, reason?: string, worktree?: SessionWorktreeRelease): Promise<void> {
    const { record, state, pid } = this.session;
    const payload: SessionLifecyclePayload = {
      session_id: this.id,
      template: record.template,
      provider: record.provider,
      state,
      ...(reason ? { reason } : {}),
      ...(type === 'session.woke' && pid !== undefined ? { pid } : {}),
      ...(worktree ? { worktree } : {}),
    };
    await this.log.append({ type, actor: 'ctl', subject: this.id, ...(reason ? { message: reason } : {}), payload });
  }

  /**
   * It goes on with a new conversation, from the transcript's entry `seq` on. A person's (`api`: the request's
   * actor is recorded in its place).
   */
  async reset(seq: number, restarted: boolean, previous: string | undefined): Promise<void> {
    const { record, state } = this.session;
    const message = `conversation reset${previous ? ` (was ${previous})` : ''}`;
    await this.log.append({
      type: 'session.reset',
      actor: 'api',
      subject: this.id,
      message,
      payload: {
        session_id: this.id,
        template: record.template,
        provider: record.provider,
        state,
        restarted,
        transcript_seq: seq,
        ...(previous ? { previous_conversation: previous } : {}),
      },
    });
  }

  /** Its host stopped answering: `session.lost`, with the fence its beads wait for. */
  async lost(host: string, reason: string, fenceUntil: string): Promise<void> {
    const { record, state } = this.session;
    const payload: SessionLostPayload = {
      session_id: this.id,
      template: record.template,
      provider: record.provider,
      state,
      host,
      reason,
      fence_until: fenceUntil,
    };
    await this.log.append({ type: 'session.lost', actor: 'ctl', subject: this.id, message: reason, payload });
  }

  /** Its program ended when nobody asked, or could not be started (`exit` absent). */
  async crashed(reason: string, exit: ProgramExit | undefined, pid: number | undefined): Promise<void> {
    const { record } = this.session;
    await this.log.append({
      type: 'session.crashed',
      actor: 'ctl',
      subject: this.id,
      message: reason,
      payload: {
        session_id: this.id,
        template: record.template,
        provider: record.provider,
        pid: pid ?? 0,
        exit_code: exit?.code ?? null,
        signal: exit?.signal ?? null,
        ...(exit?.stderrTail ? { stderr_tail: exit.stderrTail } : {}),
      },
    });
  }

  async turnFailed(turn: number, failure: TurnFailure, category: TurnFailureCategory): Promise<void> {
    const { record } = this.session;
    await this.log.append({
      type: 'session.turn_failed',
      actor: 'ctl',
      subject: this.id,
      message: failure.message,
      payload: {
        session_id: this.id,
        template: record.template,
        provider: record.provider,
        turn,
        category,
        error: failure.message,
        ...(failure.status !== undefined ? { status: failure.status } : {}),
      },
    });
  }

  async pending(interaction: { request_id: string; kind: string; prompt?: string }): Promise<void> {
    await this.log.append({
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
  }

  async pendingCleared(requestId: string, action: string): Promise<void> {
    await this.log.append({
      type: 'session.pending_cleared',
      actor: 'ctl',
      subject: this.id,
      payload: { session_id: this.id, request_id: requestId, action },
    });
  }

  /** A message's request ends with its delivery. */
  async delivered(message: {
    request_id: string;
    operation?: 'session.message' | 'session.submit';
    message_id: string;
    intent: SubmitIntent;
    queued: boolean;
  }): Promise<void> {
    if (message.operation === 'session.submit') {
      await this.log.append({
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
      await this.log.append({
        type: 'request.result.session.message',
        actor: 'ctl',
        subject: this.id,
        payload: { request_id: message.request_id, session_id: this.id, message_id: message.message_id },
      });
    }
  }

  /** A create's request ends: the program is ready. */
  async created(requestId: string): Promise<void> {
    await this.log.append({
      type: 'request.result.session.create',
      actor: 'ctl',
      subject: this.id,
      payload: { request_id: requestId, session_id: this.id },
    });
  }

  /** An attempt at handing a message to the program failed: `retryInMs` set when another follows. */
  async delivery(
    message: { message_id: string; request_id?: string },
    attempt: { attempt: number; attempts: number; error: string; retryInMs?: number },
  ): Promise<void> {
    const { record } = this.session;
    await this.log.append({
      type: attempt.retryInMs !== undefined ? 'session.delivery_retried' : 'session.delivery_failed',
      actor: 'ctl',
      subject: this.id,
      message: attempt.error,
      payload: {
        session_id: this.id,
        template: record.template,
        provider: record.provider,
        message_id: message.message_id,
        ...(message.request_id ? { request_id: message.request_id } : {}),
        attempt: attempt.attempt,
        attempts: attempt.attempts,
        error: attempt.error,
        ...(attempt.retryInMs !== undefined ? { retry_in_ms: attempt.retryInMs } : {}),
      },
    });
  }

  async requestFailed(requestId: string, operation: AsyncOperation, code: string, message: string): Promise<void> {
    await this.log.append({
      type: 'request.failed',
      actor: 'ctl',
      subject: this.id,
      message,
      payload: { request_id: requestId, operation, error_code: code, error_message: message },
    });
  }
}
