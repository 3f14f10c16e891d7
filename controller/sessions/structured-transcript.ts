import type { StructuredBlock, StructuredHistory, StructuredMessage } from '../../shared/dto/structured-transcript.js';
import type { EventRecord } from '../../shared/events/record.js';

type Role = StructuredMessage['role'];

/** Which message role each kind of entry goes into; the others (start, exit, turn ends, plans) are not messages. */
const ROLE: Record<string, Role> = {
  user: 'user',
  assistant: 'assistant',
  thought: 'assistant',
  tool_call: 'assistant',
  tool_result: 'tool',
  pending: 'system',
  pending_cleared: 'system',
  error: 'system',
  notice: 'system',
  reset: 'system',
};

interface Payload {
  text?: string;
  turn?: number;
  chunk?: boolean;
  signature?: string;
  tool_use_id?: string;
  tool_call_id?: string;
  name?: string;
  input?: unknown;
  is_error?: boolean;
  status?: string;
  request_id?: string;
  pending_kind?: string;
  options?: unknown;
  action?: string;
  compaction?: boolean;
}

/**
 * The reference's provider-neutral reading of a transcript (`format=structured`): each run of entries of one role
 * in one turn is a message; a reply's streamed chunks join into one text block, a program's reasoning into one
 * `thinking` block — its text and signature left out unless `includeThinking` — tool calls are `tool_use` blocks,
 * their results `tool_result` blocks of a `tool` message, a question or permission request an `interaction`.
 */
export function structuredMessages(records: EventRecord[], includeThinking: boolean): StructuredMessage[] {
  const messages: StructuredMessage[] = [];
  const ended = new Set<number>();
  for (const record of records) {
    const turn = (record.payload as Payload | undefined)?.turn;
    if (record.type === 'turn_end' && typeof turn === 'number') ended.add(turn);
  }
  for (const record of records) {
    const role = ROLE[record.type];
    if (!role) continue;
    const p = (record.payload ?? {}) as Payload;
    const turn = typeof p.turn === 'number' ? p.turn : undefined;
    let message = messages.at(-1);
    if (!message || message.role !== role || message.turn !== turn || role === 'user') {
      message = {
        id: String(record.seq),
        role,
        // A turn seen ending here is final; one still going (its end not in this page, or not yet) is partial.
        status: role === 'assistant' && turn !== undefined && !ended.has(turn) ? 'partial' : 'final',
        timestamp: record.ts,
        blocks: [],
        ...(turn !== undefined ? { turn } : {}),
      };
      messages.push(message);
    }
    addBlock(message.blocks, record.type, p, includeThinking);
  }
  return messages;
}

function addBlock(blocks: StructuredBlock[], kind: string, p: Payload, includeThinking: boolean): void {
  const text = typeof p.text === 'string' ? p.text : '';
  const last = blocks.at(-1);
  switch (kind) {
    case 'user':
    case 'assistant':
    case 'error':
    case 'notice':
    case 'reset':
      // Streamed chunks continue the text before them; separate pieces are separate lines.
      if (last?.type === 'text' && kind === 'assistant') last.text += p.chunk ? text : `\n${text}`;
      else blocks.push({ type: 'text', text });
      return;
    case 'thought': {
      if (last?.type === 'thinking') {
        if (includeThinking) last.thinking = (last.thinking ?? '') + (p.chunk ? text : `\n${text}`);
        return;
      }
      blocks.push({
        type: 'thinking',
        ...(includeThinking ? { thinking: text, ...(p.signature ? { signature: p.signature } : {}) } : {}),
      });
      return;
    }
    case 'tool_call': {
      const id = p.tool_use_id ?? p.tool_call_id;
      const input = p.input && typeof p.input === 'object' && !Array.isArray(p.input) ? p.input : undefined;
      blocks.push({
        type: 'tool_use',
        ...(id ? { id } : {}),
        name: p.name ?? text.split(' ')[0] ?? '',
        ...(input ? { input: input as Record<string, unknown> } : {}),
      });
      return;
    }
    case 'tool_result': {
      const id = p.tool_use_id ?? p.tool_call_id;
      blocks.push({
        type: 'tool_result',
        ...(id ? { tool_call_id: id } : {}),
        content: text,
        ...(p.is_error || p.status === 'failed' ? { is_error: true } : {}),
      });
      return;
    }
    case 'pending':
      blocks.push({
        type: 'interaction',
        interaction: {
          state: 'pending',
          ...(p.request_id ? { request_id: p.request_id } : {}),
          ...(p.pending_kind ? { kind: p.pending_kind } : {}),
          prompt: text,
          ...(Array.isArray(p.options) ? { options: p.options.map(String) } : {}),
        },
      });
      return;
    case 'pending_cleared':
      blocks.push({
        type: 'interaction',
        interaction: { state: p.action ?? text, ...(p.request_id ? { request_id: p.request_id } : {}) },
      });
      return;
  }
}

/** Where the page stands: its last seq to go on from, compactions in it, calls left open, a pending question. */
export function structuredHistory(
  sessionId: string,
  records: EventRecord[],
  now: { activity: string; pendingRequestId?: string },
): StructuredHistory {
  const last = records.at(-1)?.seq ?? 0;
  const open = new Set<string>();
  let compactions = 0;
  for (const record of records) {
    const p = (record.payload ?? {}) as Payload;
    const id = p.tool_use_id ?? p.tool_call_id;
    if (record.type === 'tool_call' && id) open.add(id);
    if (record.type === 'tool_result' && id) open.delete(id);
    if (record.type === 'notice' && p.compaction) compactions++;
  }
  return {
    transcript_stream_id: sessionId,
    generation: { id: sessionId },
    cursor: { resume_token: String(last), ...(last ? { after_entry_id: String(last) } : {}) },
    continuity: compactions
      ? { status: 'compacted', compaction_count: compactions }
      : { status: 'continuous', compaction_count: 0 },
    tail_state: {
      activity: now.activity,
      ...(last ? { last_entry_id: String(last) } : {}),
      open_tool_call_ids: [...open],
      pending_interaction_ids: now.pendingRequestId ? [now.pendingRequestId] : [],
    },
  };
}
