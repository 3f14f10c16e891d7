import type { components } from '../../shared/generated/api-types.js';
import type { Edited, Rows } from './rows.js';

// A `bead.*` event carries the bead as it is now (`payload.bead`: what `GET …/bead/{id}` answers), so a list of
// beads the page has loaded can take the change itself instead of asking the API for its rows again. What the
// payload cannot tell is left to the caller to ask: a list's count when the bead lies past the rows loaded (was
// it counted before?), and the beads whose `is_blocked` may have changed with it.

type Bead = components['schemas']['Bead'];

/** What the page reads of an event here (a `LiveEvent` is one). */
export interface BeadEvent {
  type: string;
  payload?: Record<string, unknown>;
}

/** The filters of a list of beads, as `GET …/beads` takes them; `status` '' is every status. */
export interface BeadFilter {
  status: string;
  type: string;
  label: string;
  assignee: string;
  rig: string;
}

/** The events that change a bead's row (a comment changes none). */
const ROW_EVENTS = new Set(['bead.created', 'bead.updated', 'bead.closed', 'bead.deleted']);

/** The bead an event is about, when it is one that changes a row. */
export function beadOf(event: BeadEvent): Bead | undefined {
  if (!ROW_EVENTS.has(event.type)) return undefined;
  const bead = (event.payload as { bead?: Bead } | undefined)?.bead;
  return bead && typeof bead.id === 'string' ? bead : undefined;
}

/** Whether `GET …/beads` with `filter` lists `bead` (it never lists ephemeral beads: mail). */
export function listed(bead: Bead, filter: BeadFilter): boolean {
  if (bead.ephemeral) return false;
  if (filter.status ? bead.status !== filter.status : false) return false;
  if (filter.type && bead.issue_type !== filter.type) return false;
  if (filter.label && !(bead.labels ?? []).includes(filter.label)) return false;
  if (filter.assignee && bead.assignee !== filter.assignee) return false;
  if (filter.rig && bead.metadata?.rig !== filter.rig) return false;
  return true;
}

/** A bead's creation number (`<prefix>-<n>`): lists are newest first, by it. */
export const beadNumber = (id: string) => Number(id.slice(id.lastIndexOf('-') + 1)) || 0;

/**
 * `rows` after `event` (a `bead.*` event with the bead as payload), for a list with `filter`: the bead replaced
 * where it is, inserted where its number puts it, or removed when it no longer matches (or was deleted); the
 * count moved with it. Undefined when the event changes nothing in the list.
 *
 * A bead past the last row loaded, with more rows to come, is in the part not loaded: its row will come with its
 * page (the cursor continues below the last row), but whether it was counted before is unknown — a bead just
 * created was not, any other may have been.
 */
export function applyBeadEvent(rows: Rows<Bead>, event: BeadEvent, filter: BeadFilter): Edited<Bead> | undefined {
  const bead = beadOf(event);
  if (!bead) return undefined;
  const belongs = event.type !== 'bead.deleted' && listed(bead, filter);
  const at = rows.items.findIndex((b) => b.id === bead.id);
  if (at >= 0) {
    const items = [...rows.items];
    if (belongs) {
      items[at] = bead;
      return { items, total: rows.total, countKnown: true };
    }
    items.splice(at, 1);
    return { items, total: Math.max(0, rows.total - 1), countKnown: true };
  }
  const n = beadNumber(bead.id);
  const last = rows.items.at(-1);
  const loadedThere = rows.complete || (last !== undefined && n > beadNumber(last.id));
  if (!loadedThere) {
    if (event.type === 'bead.created') {
      return belongs ? { items: rows.items, total: rows.total + 1, countKnown: true } : undefined;
    }
    return { items: rows.items, total: rows.total, countKnown: false };
  }
  // Where every row is loaded, a bead not among them was not in the list.
  if (!belongs) return undefined;
  const items = [...rows.items];
  const before = items.findIndex((b) => beadNumber(b.id) < n);
  items.splice(before < 0 ? items.length : before, 0, bead);
  return { items, total: rows.total + 1, countKnown: true };
}

/**
 * Rows whose `is_blocked` may have changed with `bead`'s status (they wait for it): blocked ones when it closed,
 * unblocked ones when it is open. Their own events do not come (nothing about them changed), so they are asked for.
 */
export function waitingOn(items: Bead[], bead: Bead): string[] {
  const done = bead.status === 'closed';
  return items.filter((b) => (b.needs ?? []).includes(bead.id) && Boolean(b.is_blocked) === done).map((b) => b.id);
}
