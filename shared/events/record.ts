/** One line of an `events.jsonl` log, as stored. */
export interface EventRecord {
  seq: number;
  type: string;
  ts: string;
  actor: string;
  subject?: string;
  message?: string;
  payload?: unknown;
}

/** What a caller hands to the writer; the writer assigns `seq` and, unless given, `ts`. */
export interface NewEvent {
  type: string;
  actor: string;
  subject?: string;
  message?: string;
  payload?: unknown;
  ts?: string;
}

/** Parses one stored line; undefined for anything that is not a well-formed record (torn or garbage lines). */
export function parseEventLine(line: string): EventRecord | undefined {
  if (line.length === 0 || line.charCodeAt(0) !== 0x7b /* { */) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Partial<EventRecord>;
  if (!Number.isSafeInteger(record.seq) || (record.seq as number) < 1) return undefined;
  if (typeof record.type !== 'string' || typeof record.ts !== 'string') return undefined;
  if (typeof record.actor !== 'string') record.actor = '';
  return record as EventRecord;
}

/** Serialises a record in the stored field order, leaving out empty optional fields. */
export function formatEventLine(record: EventRecord): string {
  const out: EventRecord = { seq: record.seq, type: record.type, ts: record.ts, actor: record.actor };
  if (record.subject) out.subject = record.subject;
  if (record.message) out.message = record.message;
  if (record.payload !== undefined && record.payload !== null && !isEmptyObject(record.payload)) {
    out.payload = record.payload;
  }
  return JSON.stringify(out) + '\n';
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}
