import type { SupervisorEventListOutputBody, WireTaggedEvent } from '../shared/dto/events.js';
import { formatCursor, type CompositeCursor } from '../shared/events/cursor.js';
import { cityLog } from '../shared/events/city-log.js';
import type { EventLog } from '../shared/events/event-log.js';
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

  /** Matching events of every log, oldest first; `limit` keeps the newest that many (0: all). */
  list(query: EventQuery, limit: number): SupervisorEventListOutputBody {
    const cursor = this.captureCursor();
    const keyed: TimedEvent[] = [];
    for (const source of this.sources()) {
      // Each log, newest first, stopping at `limit` matches or at `since`: the newest `limit` overall are
      // among the newest `limit` of each log.
      const { records } = source.log.newest({
        limit: limit > 0 ? limit : Infinity,
        filter: query.filter,
        sinceMs: query.sinceMs,
      });
      for (const record of records) {
        const event = tagEvent(source.scope, record);
        keyed.push({ ms: Date.parse(event.ts), event });
      }
    }
    // The time is parsed once per event, not once per comparison.
    keyed.sort(byTimeCitySeq);
    const items = keyed.map((k) => k.event);
    const total = query.filtered ? items.length : [...cursor.values()].reduce((sum, seq) => sum + seq, 0);
    return {
      event_cursor: formatCursor(cursor),
      items: limit > 0 ? items.slice(-limit) : items,
      total,
    };
  }
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
