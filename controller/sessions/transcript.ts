import { join } from 'node:path';
import type { SessionTurn, TranscriptEntry } from '../../shared/dto/sessions.js';
import { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';

/** What a transcript entry records. Every one has a seq (from 1, gap-free) and a time. */
export type EntryKind =
  | 'start'
  | 'user'
  | 'assistant'
  | 'tool_call'
  | 'tool_result'
  | 'pending'
  | 'pending_cleared'
  | 'turn_end'
  | 'error'
  | 'thought'
  | 'plan'
  | 'notice'
  | 'reset'
  | 'exit';

/** The conversational entries: the ones `format=conversation` shows as turns. */
const ROLES: Partial<Record<EntryKind, string>> = {
  user: 'user',
  assistant: 'assistant',
  tool_call: 'tool',
  tool_result: 'tool',
  pending: 'system',
  pending_cleared: 'system',
  error: 'system',
  notice: 'system',
  reset: 'system',
};

export interface NewEntry {
  kind: EntryKind;
  /** Who produced it: `user`, `assistant`, `ctl`, or the person who answered a pending interaction. */
  actor: string;
  /** The text a person would read: a message, a reply, a tool's name and input, a question. */
  text?: string;
  /** Everything else the entry knows (turn number, ids, exit code, the provider's raw frame, …). */
  data?: Record<string, unknown>;
}

/**
 * A session's own transcript, `<city>/.ctl/sessions/<id>/transcript.jsonl`: append-only JSON Lines with a seq
 * per entry, written by the controller as things happen — messages delivered, output read, tool calls, pending
 * interactions, starts and exits — whatever the provider also logs. It is an event log in all but name, so it
 * is one: the same writer, the same backwards and binary-search reads (a tail of 100,000 entries reads only its
 * end), the same tail for the session stream.
 */
export class Transcript {
  readonly log: EventLog;

  constructor(readonly dir: string) {
    this.log = EventLog.at(join(dir, 'transcript.jsonl'), join(dir, 'transcript.lock'));
  }

  append(entry: NewEntry): Promise<EventRecord> {
    return this.log.appendCustom({
      type: entry.kind,
      actor: entry.actor,
      payload: { ...(entry.text !== undefined ? { text: entry.text } : {}), ...entry.data },
    });
  }

  head(): number {
    return this.log.head();
  }

  /** The newest `limit` entries, oldest first; with `before`, those with a seq below it. */
  tail(limit: number, before?: number): { entries: EventRecord[]; more: boolean } {
    const page = this.log.newest({ limit, beforeSeq: before });
    return { entries: page.records.reverse(), more: page.more };
  }

  /** Entries after `seq`, oldest first, at most `limit`. */
  after(seq: number, limit: number): EventRecord[] {
    return this.log.after(seq, limit);
  }

  close(): void {
    this.log.close();
  }
}

/** An entry as the API shows it (`format=raw`, the stream's `message` frames). */
export function toEntry(record: EventRecord): TranscriptEntry {
  const payload = (record.payload ?? {}) as Record<string, unknown>;
  return { seq: record.seq, ts: record.ts, kind: record.type, actor: record.actor, ...payload };
}

/** The conversational reading of one entry, if it has one (a start or an exit has none). */
export function turnOf(record: EventRecord): SessionTurn | undefined {
  const role = ROLES[record.type as EntryKind];
  if (!role) return undefined;
  const payload = (record.payload ?? {}) as { text?: unknown; turn?: unknown };
  const text = typeof payload.text === 'string' ? payload.text : '';
  return {
    seq: record.seq,
    role,
    text,
    timestamp: record.ts,
    ...(typeof payload.turn === 'number' ? { turn: payload.turn } : {}),
  };
}

/**
 * The conversation: each entry's turn, with consecutive assistant output of one turn joined into one (a program
 * writes a reply in pieces as it goes; a reader wants the reply).
 */
export function conversation(records: EventRecord[]): SessionTurn[] {
  const turns: SessionTurn[] = [];
  for (const record of records) {
    const turn = turnOf(record);
    if (!turn) continue;
    const last = turns.at(-1);
    if (last && turn.role === 'assistant' && last.role === 'assistant' && last.turn === turn.turn) {
      // A streamed chunk (ACP) continues the text before it; separate pieces are separate lines.
      last.text += (record.payload as { chunk?: unknown } | undefined)?.chunk === true ? turn.text : `\n${turn.text}`;
      last.seq = turn.seq;
      continue;
    }
    turns.push(turn);
  }
  return turns;
}
