import type { components } from '../../shared/generated/api-types.js';

// The bead page from the events' payloads: a `bead.*` event carries the bead as it is now, so the page takes
// the bead, a neighbour's new state and the event for the history from it; only a change of who the neighbours
// are (an edge added or removed) needs the API (`GET …/bead/{id}/deps` brings their beads).

type Bead = components['schemas']['Bead'];
type Deps = components['schemas']['BeadDepsResponse'];

/** A bead's own edges: what it depends on, and on what terms. */
export const edgesOf = (bead: Bead) =>
  JSON.stringify((bead.dependencies ?? []).map((d) => [d.depends_on_id, d.type]).sort());

/**
 * `deps` (the neighbours of bead `id`) after `changed` changed: its new state put where it is shown, or
 * undefined when who the neighbours are may have changed with it (it became or stopped being a dependent or a
 * child, or was deleted) and they must be read again. `deps` itself when `changed` is no neighbour at all.
 */
export function neighboursAfter(deps: Deps, id: string, changed: Bead, deleted: boolean): Deps | undefined {
  const shown = (list: Bead[]) => list.some((b) => b.id === changed.id);
  const dependentNow = !deleted && (changed.dependencies ?? []).some((d) => d.depends_on_id === id);
  const childNow = !deleted && changed.parent === id;
  const wasDependent = shown(deps.dependents);
  const wasChild = shown(deps.children);
  const dependedOn = shown(deps.depends_on);
  if (dependentNow !== wasDependent || childNow !== wasChild) return undefined;
  if (!dependentNow && !childNow && !dependedOn) return deps;
  // A bead this one depends on, deleted: this one's own event says what became of the edge.
  if (deleted) return undefined;
  const put = (list: Bead[]) => list.map((b) => (b.id === changed.id ? changed : b));
  return { ...deps, depends_on: put(deps.depends_on), dependents: put(deps.dependents), children: put(deps.children) };
}

/** The history (newest first) with `event` on top, once. */
export function withEvent<E extends { seq: number }>(history: E[] | undefined, event: E): E[] | undefined {
  if (!history) return history;
  if (history.some((e) => e.seq === event.seq)) return history;
  return [event, ...history];
}
