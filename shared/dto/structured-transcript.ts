// A session's transcript in the reference's provider-neutral structured shape (`format=structured`,
// `session.structured.v1`): messages made of typed blocks, whatever protocol the program speaks.

/** One block of a structured message; `type` says which of the other fields it has. */
export interface StructuredBlock {
  /** `text`, `thinking`, `tool_use`, `tool_result` or `interaction`. */
  type: 'text' | 'thinking' | 'tool_use' | 'tool_result' | 'interaction';
  /** `text`: the words. */
  text?: string;
  /** `thinking`: the model's reasoning — only with `include_thinking=true` (redacted otherwise). */
  thinking?: string;
  /** `thinking`: the provider's signature of it — only with `include_thinking=true`. */
  signature?: string;
  /** `tool_use`: the call's id (a `tool_result` names it as `tool_call_id`). */
  id?: string;
  /** `tool_use`: the tool. */
  name?: string;
  /** `tool_use`: its input as the program gave it. */
  input?: { [key: string]: unknown };
  /** `tool_result`: the call it answers. */
  tool_call_id?: string;
  /** `tool_result`: what it returned. */
  content?: string;
  is_error?: boolean;
  /** `interaction`: a question or permission request, and where it stands. */
  interaction?: StructuredInteraction;
}

export interface StructuredInteraction {
  /** `pending`, or how it was answered (`allow`, `deny`, `answer`, `abandoned`, …). */
  state: string;
  request_id?: string;
  /** `permission` or `question`. */
  kind?: string;
  prompt?: string;
  options?: string[];
}

/** A message: consecutive entries of one role in one turn, as blocks in the order they came. */
export interface StructuredMessage {
  /** The seq of its first transcript entry (stable: the transcript is append-only). */
  id: string;
  role: 'user' | 'assistant' | 'tool' | 'system';
  /** `partial` while its turn is still going, else `final`. */
  status: 'final' | 'partial';
  timestamp: string;
  blocks: StructuredBlock[];
  /** @isInt */
  turn?: number;
}

/** Where this page of the transcript stands in the session's history. */
export interface StructuredHistory {
  /** The session id: one append-only stream per session. */
  transcript_stream_id: string;
  /** The stream never rewrites what it holds, so its generation is the session's. */
  generation: { id: string };
  /** `resume_token`: the last seq of the page (`after=` it, or the stream's `Last-Event-ID`, goes on from there). */
  cursor: { resume_token: string; after_entry_id?: string };
  /** `continuous`, or `compacted` when the program summarised its conversation (`compaction_count` times). */
  continuity: { status: string; /** @isInt */ compaction_count?: number };
  /** The session now: `idle` or `in-turn`, tool calls of the page still without a result, a pending question. */
  tail_state: {
    activity: string;
    last_entry_id?: string;
    open_tool_call_ids?: string[];
    pending_interaction_ids?: string[];
  };
}
