// A session's conversation as the API gives it back: turns, raw transcript entries and their paging, subagents.
import type { StructuredHistory, StructuredMessage } from './structured-transcript.js';

/** One turn of a conversation: a message, a reply (joined per turn), a tool call or result, a question. */
export interface SessionTurn {
  /**
   * The transcript seq of its last entry.
   * @isInt
   */
  seq: number;
  /** `user`, `assistant`, `tool` or `system`. */
  role: string;
  text: string;
  /** @format date-time */
  timestamp: string;
  /**
   * The turn it belongs to (a delivered message opens one).
   * @isInt
   */
  turn?: number;
}

/**
 * One transcript entry as stored: `seq`, `ts`, `kind` (`start`, `user`, `assistant`, `tool_call`, `tool_result`,
 * `pending`, `pending_cleared`, `turn_end`, `error`, `exit`), `actor`, and what the entry records (`text`, `turn`,
 * `message_id`, the provider's raw `frame`, …).
 */
export interface TranscriptEntry {
  /** @isInt */
  seq: number;
  ts: string;
  kind: string;
  actor: string;
  [key: string]: unknown;
}

/** Where a transcript page sits. */
export interface TranscriptPagination {
  /**
   * Seq of the first entry returned (0: none).
   * @isInt
   */
  first_seq: number;
  /**
   * Seq of the last entry returned (0: none).
   * @isInt
   */
  last_seq: number;
  /** Older entries exist: pass `before=first_seq`. */
  has_older: boolean;
  /**
   * The transcript's newest seq.
   * @isInt
   */
  head: number;
}

/** Body of `GET …/session/{id}/transcript`. */
export interface SessionTranscriptResponse {
  id: string;
  template: string;
  provider: string;
  format: 'conversation' | 'raw' | 'structured';
  /** `format=conversation`. */
  turns?: SessionTurn[];
  /** `format=raw`: the entries as stored. */
  messages?: TranscriptEntry[];
  /** `format=structured`: `session.structured.v1`. */
  schema_version?: 'session.structured.v1';
  /** `format=structured`: always `snapshot` (the stream carries what follows). */
  operation?: 'snapshot';
  history?: StructuredHistory;
  /** `format=structured`: the messages, as typed blocks. */
  structured_messages?: StructuredMessage[];
  pagination: TranscriptPagination;
}

/** A subagent of a session (Claude Code's Task/Agent tool) and the main conversation's tool call that started it. */
export interface SessionAgentMapping {
  agent_id: string;
  /** The `tool_call` entry of the session's transcript (its `tool_use_id`) that started the subagent. */
  parent_tool_use_id: string;
}

/** Body of `GET …/session/{id}/agents`: the session's subagents, oldest first (empty when it started none). */
export interface SessionAgentListResponse {
  agents: SessionAgentMapping[];
}

/** Body of `GET …/session/{id}/agents/{agentId}`: one subagent's own transcript and status. */
export interface SessionAgentGetResponse {
  /**
   * Its entries as stored, like the session transcript's `format=raw`: `start` (its task and prompt), `user`,
   * `assistant`, `tool_call`, `tool_result`, and `turn_end` once it ended (`status`, `summary`, `usage`).
   */
  messages: TranscriptEntry[];
  /**
   * `completed` or `failed` (as the program reported its end), `running` while it works, `stopped` when the
   * program ended before it did.
   */
  status: string;
}
