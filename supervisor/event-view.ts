import type { SupervisorEventListOutputBody, WireTaggedEvent } from '../shared/dto/events.js';
import { formatCursor, parseCursor, REPLAY_ALL, type CompositeCursor } from '../shared/events/cursor.js';
import { cityLog } from '../shared/events/city-log.js';
import type { EventLog } from '../shared/events/event-log.js';
import { decodeToken, encodeToken, invalidToken } from '../shared/http/page-token.js';
import type { EventQuery } from '../shared/events/event-query.js';
import type { EventRecord } from '../shared/events/record.js';
import { toWireEvent } from '../shared/events/wire.js';
import { SUPERVISOR_SCOPE } from '../shared/paths.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

export interface EventSource {
  /** Cursor key: a city name, or `__supervisor__`. */
  scope: string;
  log: EventLog;
}

const RESULT_TYPES = new Set(['request.result.city.create', 'request.result.city.unregister', 'request.failed']);

/**
 * The supervisor's merged view of every event log it knows: its own, every registered city's (running or
 * not), and those of cities unregistered in the last two minutes.
 */
export class EventView {
  constructor(
    private readonly registry: Registry,
    private readonly reconciler: Reconciler,
    private readonly supervisorLog: EventLog,
  ) {}

  sources(): EventSource[] {
    const sources: EventSource[] = [{ scope: SUPERVISOR_SCOPE, log: this.supervisorLog }];
    const seen = new Set<string>();
    for (const city of this.registry.cities) {
      seen.add(city.name);
      sources.push({ scope: city.name, log: cityLog(city.path) });
    }
    // A city being unregistered, or unregistered in the last two minutes, still shows its last events.
    for (const pending of this.registry.pending) {
      if (pending.operation !== 'city.unregister' || seen.has(pending.name)) continue;
      seen.add(pending.name);
      sources.push({ scope: pending.name, log: cityLog(pending.path) });
    }
    for (const [name, gone] of this.reconciler.recentlyUnregisteredCities()) {
      if (seen.has(name)) continue;
      seen.add(name);
      sources.push({ scope: name, log: cityLog(gone.path) });
    }
    return sources;
  }

  /** The head of every log: where "now" is, for a client that wants only what happens next. */
  captureCursor(): CompositeCursor {
    return new Map(this.sources().map((s) => [s.scope, s.log.head()]));
  }

  /**
   * One page of the merged list: the newest `limit` matches, oldest first, below each log's bound in `cursor`
   * (a `next_cursor` of this list; none: the whole log up to its head as captured now), and a `next_cursor`
   * when more remain. A log a cursor does not name (a city registered since the first page) is not read: the
   * pages list what there was when the first one was read.
   */
  list(query: EventQuery, limit: number, cursor?: string): SupervisorEventListOutputBody {
    const captured = this.captureCursor();
    const bounds = cursor === undefined ? firstPageBounds(captured) : decodeMergedPageToken(cursor);
    const readers: LogReader[] = [];
    for (const source of this.sources()) {
      const below = bounds.get(source.scope);
      if (below !== undefined) readers.push(new LogReader(source, below, query));
    }
    const picked = newestOfAll(readers, limit);
    const body: SupervisorEventListOutputBody = {
      event_cursor: formatCursor(captured),
      items: picked.reverse(),
      total: query.filtered ? picked.length : [...captured.values()].reduce((sum, seq) => sum + seq, 0),
    };
    // Each log goes on below the oldest event it gave this page (one that gave none keeps its bound); one with
    // nothing left is done.
    const next: CompositeCursor = new Map();
    for (const reader of readers) if (reader.peek()) next.set(reader.scope, reader.bound);
    if (next.size > 0) body.next_cursor = encodeMergedPageToken(next);
    return body;
  }
}

/** Records of a log read in this many at a time, newest first: a page rarely needs many from every log. */
const READ_CHUNK = 100;

/** One log's matches below a bound, newest first, read a chunk at a time as the merge takes them. */
class LogReader {
  readonly scope: string;
  /** Where the next page of the list goes on in this log: below the oldest seq taken, or the bound given. */
  bound: number;
  private records: EventRecord[] = [];
  private next = 0;
  private more = true;
  private head: TimedEvent | undefined;

  constructor(
    private readonly source: EventSource,
    below: number,
    private readonly query: EventQuery,
  ) {
    this.scope = source.scope;
    this.bound = below;
  }

  /** Its newest match not yet taken, tagged, or undefined when there is none. */
  peek(): TimedEvent | undefined {
    if (this.head) return this.head;
    if (this.next === this.records.length && this.more) {
      const page = this.source.log.newest({
        limit: READ_CHUNK,
        beforeSeq: this.records.at(-1)?.seq ?? this.bound,
        filter: this.query.filter,
        sinceMs: this.query.sinceMs,
      });
      this.records = page.records;
      this.next = 0;
      this.more = page.more;
    }
    const record = this.records[this.next];
    if (!record) return undefined;
    this.head = timed(this.scope, record);
    return this.head;
  }

  take(): WireTaggedEvent {
    const { event } = this.peek()!;
    this.next++;
    this.head = undefined;
    this.bound = event.seq;
    return event;
  }
}

/** The first page reads every log up to its head as captured (what `event_cursor` says), not beyond. */
function firstPageBounds(captured: CompositeCursor): CompositeCursor {
  return new Map([...captured].map(([scope, head]) => [scope, head + 1]));
}

/**
 * The newest `limit` events of all logs, newest first in `mergeOrder`. Each log is taken in seq
 * order (a merge, not a sort of everything), so what a page takes of a log is always all of it above some seq,
 * and the next page can go on below that seq even where a log's clock went backwards.
 */
function newestOfAll(readers: LogReader[], limit: number): WireTaggedEvent[] {
  const picked: WireTaggedEvent[] = [];
  while (picked.length < limit) {
    let best: LogReader | undefined;
    for (const reader of readers) {
      const head = reader.peek();
      if (head && (!best || mergeOrder(head, best.peek()!) > 0)) best = reader;
    }
    if (!best) break;
    picked.push(best.take());
  }
  return picked;
}

/** A page token of the merged list: `v1:` + base64url of {"k":"sc","b":"<scope>:<seq>,…"}, each log's bound. */
function encodeMergedPageToken(bounds: CompositeCursor): string {
  return encodeToken('sc', { b: formatCursor(bounds) });
}

function decodeMergedPageToken(token: string): CompositeCursor {
  const { b } = decodeToken(token, 'sc');
  if (typeof b !== 'string') throw invalidToken();
  let bounds;
  try {
    bounds = parseCursor(b);
  } catch {
    throw invalidToken();
  }
  if (bounds === REPLAY_ALL || bounds.size === 0 || [...bounds.values()].some((seq) => seq < 1)) throw invalidToken();
  return bounds;
}

/** A record of `scope`'s log as a tagged event: request results name the city they are about. */
export function tagEvent(scope: string, record: EventRecord): WireTaggedEvent {
  let city = scope;
  if (scope === SUPERVISOR_SCOPE && RESULT_TYPES.has(record.type)) {
    const payloadName = (record.payload as { name?: unknown } | undefined)?.name;
    city = record.subject || (typeof payloadName === 'string' && payloadName) || SUPERVISOR_SCOPE;
  }
  return { ...toWireEvent(record), city };
}

/** A tagged event with its time parsed once (merges compare it many times). */
export interface TimedEvent {
  ms: number;
  event: WireTaggedEvent;
}

/** `record` of `scope`'s log, tagged and timed for a merge. */
export function timed(scope: string, record: EventRecord): TimedEvent {
  const event = tagEvent(scope, record);
  return { ms: Date.parse(event.ts), event };
}

/**
 * The one order in which events of different logs interleave, in lists and streams alike (and `ctl events`, which
 * sorts pages the same way): by time, then by the city they are tagged with, then by seq. Within one log, seq
 * order always holds: merges only ever choose between logs' next events.
 */
export function mergeOrder({ ms: ta, event: a }: TimedEvent, { ms: tb, event: b }: TimedEvent): number {
  if (ta !== tb) return ta - tb;
  if (a.city !== b.city) return a.city < b.city ? -1 : 1;
  return a.seq - b.seq;
}
