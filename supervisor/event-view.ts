import type { SupervisorEventListOutputBody, WireTaggedEvent } from '../shared/dto/events.js';
import { formatCursor, parseCursor, REPLAY_ALL, type CompositeCursor } from '../shared/events/cursor.js';
import { EventLog } from '../shared/events/event-log.js';
import { decodeToken, encodeToken, invalidToken } from '../shared/http/page-token.js';
import type { EventQuery } from '../shared/events/event-query.js';
import type { EventRecord } from '../shared/events/record.js';
import { toWireEvent } from '../shared/events/wire.js';
import { cityPaths, SUPERVISOR_SCOPE } from '../shared/paths.js';
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
    for (const [name, gone] of this.reconciler.recentlyUnregistered) {
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
    const heads: LogHead[] = [];
    for (const source of this.sources()) {
      const below = bounds.get(source.scope);
      if (below === undefined) continue;
      // Each log, newest first: the newest `limit` overall are among the newest `limit` of each log.
      const page = source.log.newest({ limit, beforeSeq: below, filter: query.filter, sinceMs: query.sinceMs });
      heads.push({ scope: source.scope, below, records: page.records, next: 0, more: page.more });
    }
    const picked = newestOfAll(heads, limit);
    const body: SupervisorEventListOutputBody = {
      event_cursor: formatCursor(captured),
      items: picked.map((p) => p.event).reverse(),
      total: query.filtered ? picked.length : [...captured.values()].reduce((sum, seq) => sum + seq, 0),
    };
    // Each log goes on below the oldest event it gave this page; one that gave none keeps its bound, and one
    // with nothing left is done.
    const next: CompositeCursor = new Map();
    for (const head of heads) {
      const left = head.next < head.records.length || head.more;
      if (left) next.set(head.scope, head.next > 0 ? head.records[head.next - 1].seq : head.below);
    }
    if (next.size > 0) body.next_cursor = encodeMergedPageToken(next);
    return body;
  }
}

/** One log's page as the merge walks it: its records newest first, and how many the merged page took. */
interface LogHead {
  scope: string;
  /** The bound it was read below. */
  below: number;
  records: EventRecord[];
  next: number;
  /** Matches below the last of `records`. */
  more: boolean;
}

/** The first page reads every log up to its head as captured (what `event_cursor` says), not beyond. */
function firstPageBounds(captured: CompositeCursor): CompositeCursor {
  return new Map([...captured].map(([scope, head]) => [scope, head + 1]));
}

/**
 * The newest `limit` events of all logs, newest first, by time, then city, then seq. Each log is taken in seq
 * order (a merge, not a sort of everything), so what a page takes of a log is always all of it above some seq,
 * and the next page can go on below that seq even where a log's clock went backwards.
 */
function newestOfAll(heads: LogHead[], limit: number): TimedEvent[] {
  const candidates = new Map<LogHead, TimedEvent>();
  const candidate = (head: LogHead) => {
    const record = head.records[head.next];
    if (record === undefined) {
      candidates.delete(head);
    } else {
      const event = tagEvent(head.scope, record);
      candidates.set(head, { ms: Date.parse(event.ts), event });
    }
  };
  for (const head of heads) candidate(head);
  const picked: TimedEvent[] = [];
  while (picked.length < limit && candidates.size > 0) {
    let best: [LogHead, TimedEvent] | undefined;
    for (const entry of candidates) if (!best || byTimeCitySeq(entry[1], best[1]) > 0) best = entry;
    const [head, event] = best!;
    picked.push(event);
    head.next++;
    candidate(head);
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

export function cityLog(root: string): EventLog {
  const paths = cityPaths(root);
  return EventLog.at(paths.events, paths.eventsLock);
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

interface TimedEvent {
  ms: number;
  event: WireTaggedEvent;
}

function byTimeCitySeq({ ms: ta, event: a }: TimedEvent, { ms: tb, event: b }: TimedEvent): number {
  if (ta !== tb) return ta - tb;
  if (a.city !== b.city) return a.city < b.city ? -1 : 1;
  return a.seq - b.seq;
}
