import type { SessionState, SessionWorktreeRelease, SubmitIntent } from './sessions.js';

// The payloads of the session events on the city's log (shared/events/event-types.ts), each named by its event.

/** Payload of `session.created`, `session.woke`, `session.stopped`, `session.suspended`, `session.closed`, `session.updated`. */
export interface SessionLifecyclePayload {
  session_id: string;
  /** The agent or provider it was created from. */
  template: string;
  provider: string;
  state: SessionState;
  reason?: string;
  /**
   * Its program's process id (`session.woke`).
   * @isInt
   */
  pid?: number;
  /** `session.closed` of a session with a worktree: removed, or kept with the reason. */
  worktree?: SessionWorktreeRelease;
}

/** Payload of `session.reset`: the session goes on with a new conversation (`POST …/session/{id}/reset`). */
export interface SessionResetPayload {
  session_id: string;
  template: string;
  provider: string;
  state: SessionState;
  /** Its running program was started again; false: its next start begins the new conversation. */
  restarted: boolean;
  /**
   * The seq of the `reset` entry in the session's transcript: where the new conversation begins.
   * @isInt
   */
  transcript_seq: number;
  /** The conversation left behind (the provider's session key), when there was one. */
  previous_conversation?: string;
}

/** Payload of `session.crashed`: its program exited without being asked to. */
export interface SessionCrashedPayload {
  session_id: string;
  template: string;
  provider: string;
  /** @isInt */
  pid: number;
  /**
   * Exit code, when it exited by itself; null when a signal ended it.
   * @isInt
   */
  exit_code: number | null;
  signal: string | null;
  /** The end of what it wrote on stderr, when anything. */
  stderr_tail?: string;
}

/**
 * Payload of `session.lost`: the host its program ran on stopped answering. The beads it holds stay held until
 * `fence_until`, when the program there is certainly gone (its watchdog's deadline has passed), then go back to
 * the pool.
 */
export interface SessionLostPayload {
  session_id: string;
  template: string;
  provider: string;
  state: SessionState;
  host: string;
  reason: string;
  /** @format date-time */
  fence_until: string;
}

/** Why a turn failed: the provider refused (rate limit, sign-in) or could not be reached, or something else. */
export type TurnFailureCategory = 'rate_limited' | 'auth' | 'provider_unavailable' | 'error';

/**
 * Payload of `session.turn_failed`: a turn ended without an answer because the provider's service failed it (a
 * rate limit, an overloaded or unreachable model server, a refused key). The program still runs and takes the
 * next message: this is not a crash, and does not count as one.
 */
export interface SessionTurnFailedPayload {
  session_id: string;
  template: string;
  provider: string;
  /** @isInt */
  turn: number;
  category: TurnFailureCategory;
  /** What the provider said. */
  error: string;
  /**
   * The HTTP status of the provider's API, when it reported one.
   * @isInt
   */
  status?: number;
}

/**
 * Payload of `session.delivery_retried` (an attempt at handing a message to its program failed, another follows
 * after `retry_in_ms`) and `session.delivery_failed` (the last attempt failed: the message is dropped from the
 * queue, its request failed with `delivery_failed`). A terminal program whose screen never showed the message
 * typed, or never showed it submitted, is one; its program still runs.
 */
export interface SessionDeliveryPayload {
  session_id: string;
  template: string;
  provider: string;
  /** The message's id (its `user` transcript entry would have carried it). */
  message_id: string;
  /** The request the message came with, if any (a message the tick hands over has none). */
  request_id?: string;
  /**
   * The attempt that failed, from 1.
   * @isInt
   */
  attempt: number;
  /**
   * How many attempts are made in all.
   * @isInt
   */
  attempts: number;
  /** Why the attempt failed. */
  error: string;
  /**
   * `session.delivery_retried`: how long until the next attempt.
   * @isInt
   */
  retry_in_ms?: number;
}

/** Payload of `session.pending`. */
export interface SessionPendingPayload {
  session_id: string;
  request_id: string;
  kind: string;
  prompt?: string;
}

/** Payload of `session.pending_cleared`. */
export interface SessionPendingClearedPayload {
  session_id: string;
  request_id: string;
  /** How it was answered (`allow`, `deny`, `answer`), or `abandoned` when the program went away first. */
  action: string;
}

/** Payload of `request.result.session.create`. */
export interface SessionCreateSucceededPayload {
  request_id: string;
  session_id: string;
}

/** Payload of `request.result.session.message`. */
export interface SessionMessageSucceededPayload {
  request_id: string;
  session_id: string;
  /** The delivered message: its transcript entry carries it as `message_id`. */
  message_id: string;
}

/** Payload of `request.result.session.submit`. */
export interface SessionSubmitSucceededPayload {
  request_id: string;
  session_id: string;
  message_id: string;
  intent: SubmitIntent;
  /** It waited in the queue (the program was starting, asleep, or in a turn) before it was delivered. */
  queued: boolean;
}
