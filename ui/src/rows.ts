// A list's loaded rows and the changes made to them in place (from events' payloads), apart from the hook
// that pages them (paged.ts) so that they can be tested without a page.

/** What a list has loaded: its first rows, in order; how many it holds in all; whether no more follow. */
export interface Rows<T> {
  items: T[];
  total: number;
  complete: boolean;
}

/** A list after a change: its rows, and whether its count is still known (else it is asked for again). */
export interface Edited<T> {
  items: T[];
  total: number;
  countKnown: boolean;
}

/** A change to the loaded rows: the rows after it, or undefined when it changes nothing. */
export type Change<T> = (rows: Rows<T>) => Edited<T> | undefined;

export interface ListState<T> {
  items: T[];
  total: number;
  next?: string;
  error?: string;
  loading: boolean;
}

/**
 * `state` after `changes`, in order; `countKnown` false when one of them could not tell the count, `countMoved`
 * when one of them moved it or could not tell it (made again on an answer that may hold it, it may count twice).
 */
export function replay<T>(
  state: ListState<T>,
  changes: Change<T>[],
): { state: ListState<T>; countKnown: boolean; countMoved: boolean } {
  let countKnown = true;
  let countMoved = false;
  for (const change of changes) {
    const edited = change({ items: state.items, total: state.total, complete: !state.loading && !state.next });
    if (!edited) continue;
    countKnown &&= edited.countKnown;
    countMoved ||= !edited.countKnown || edited.total !== state.total;
    state = { ...state, items: edited.items, total: edited.total };
  }
  return { state, countKnown, countMoved };
}
