import { parseDuration } from '../duration.js';
import { Problem } from '../http/problem.js';
import type { EventFilter } from './event-log.js';
import type { EventRecord } from './record.js';

/** The filters of an event list (`type`, `actor`, `since`), ready for `EventLog.newest`. */
export interface EventQuery {
  filter: EventFilter | undefined;
  /** Only events at or after this time (ms since the epoch). */
  sinceMs: number | undefined;
  /** Any filter at all (then `total` counts matches, not the head). */
  filtered: boolean;
}

/** Parses list filters; a `since` that is not a duration (`5m`, `1h30m`) is a 400. */
export function eventQuery(query: { type?: string; actor?: string; since?: string }): EventQuery {
  const { type, actor, since } = query;
  let sinceMs: number | undefined;
  if (since !== undefined && since.trim() !== '') {
    try {
      sinceMs = Date.now() - parseDuration(since);
    } catch (err) {
      throw new Problem('invalid-request', `invalid: since: ${(err as Error).message}`);
    }
  }
  const filter =
    type !== undefined || actor !== undefined
      ? (r: EventRecord) => (type === undefined || r.type === type) && (actor === undefined || r.actor === actor)
      : undefined;
  return { filter, sinceMs, filtered: filter !== undefined || sinceMs !== undefined };
}
