import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { replay, type Change, type ListState } from './rows.js';

/** One page of a list as the API answers it (`items`, the `total` matching, the cursor of what follows). */
export interface Page<T> {
  items: T[];
  total: number;
  next_cursor?: string;
}

export interface PagedList<T> {
  items: T[];
  /** How many the whole list holds (the API's `total`), loaded or not. */
  total: number;
  error?: string;
  /** The first page has not come yet. */
  loading: boolean;
  /** Loads pages until at least `count` items are loaded (or the list ends). */
  loadUpTo: (count: number) => void;
  /** Loads again as many items as are loaded now: what an event changed shows, the scroll position holds. */
  reload: () => void;
  /**
   * Changes the loaded rows in place (what an event's payload says), without a request — but for the count,
   * asked for again (one row) when the change cannot tell it.
   */
  edit: (change: Change<T>) => void;
}

const MAX_PAGE = 1000;
const MIN_RELOAD_GAP_MS = 250;

/**
 * A long list paged through the API as the person scrolls: the first `pageSize` items at once, more when a view
 * asks (`loadUpTo`), and — on `reload` — the same number again from the top, so a change anywhere in what is
 * shown appears without losing the place. Requests run one at a time; reloads asked for while one runs fold into
 * one after it, at most four a second; an answer for older filters is dropped. `edit` changes the loaded rows
 * without a request; the edits made while a request runs are made again on its answer (which may have been read
 * before them), and the count is then asked for again if they moved it (it may already hold them).
 */
export function usePagedList<T>(
  fetchPage: (limit: number, cursor: string | undefined) => Promise<Page<T>>,
  key: (item: T) => string,
  deps: unknown[],
  pageSize = 200,
): PagedList<T> {
  const [state, setState] = useState<ListState<T>>({ items: [], total: 0, loading: true });
  const r = useRef({
    generation: 0,
    running: false,
    reload: false,
    want: pageSize,
    lastReload: 0,
    state,
    /** Edits made while the request in flight runs, to make again on its answer. */
    edits: [] as { change: Change<T>; movedCount: boolean }[],
    /** The count is not known from the rows' edits: ask for it (one row). */
    recount: false,
  });
  const fetchRef = useRef(fetchPage);
  fetchRef.current = fetchPage;
  const keyRef = useRef(key);
  keyRef.current = key;

  /** An answer taken: the edits made while it was on its way made again on it. */
  const settle = (answer: ListState<T>, generation: number) => {
    const run = r.current;
    if (generation !== run.generation) return;
    const edits = run.edits;
    run.edits = [];
    // Rows are the same however often an edit is made again; a count an edit moved may hold it twice now, or
    // (the answer's count with the rows edited before it came) not at all.
    const { state: next } = replay(
      answer,
      edits.map((e) => e.change),
    );
    if (edits.some((e) => e.movedCount)) run.recount = true;
    run.state = next;
    setState(next);
  };

  const pump = useCallback(async () => {
    const run = r.current;
    if (run.running) return;
    run.running = true;
    try {
      for (;;) {
        const generation = run.generation;
        const current = run.state;
        const isReload = run.reload || current.loading;
        const more = current.items.length < run.want && current.next !== undefined;
        if (!isReload && !more && run.recount) {
          // Only the count: one row, its total; as seldom as reloads however fast events come.
          const gap = run.lastReload + MIN_RELOAD_GAP_MS - performance.now();
          if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
          if (generation !== run.generation || run.reload) continue;
          run.lastReload = performance.now();
          run.recount = false;
          run.edits = [];
          try {
            const page = await fetchRef.current(1, undefined);
            if (generation !== run.generation) continue;
            settle({ ...run.state, total: page.total }, generation);
          } catch (err) {
            if (generation !== run.generation) continue;
            settle({ ...run.state, error: (err as Error).message }, generation);
            break;
          }
          continue;
        }
        if (!isReload && !more) break;
        if (isReload) {
          const gap = run.lastReload + MIN_RELOAD_GAP_MS - performance.now();
          if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
          run.reload = false;
          run.lastReload = performance.now();
        }
        run.edits = [];
        if (isReload) run.recount = false;
        try {
          // A reload fetches from the top as many as were loaded; a load carries on after the last cursor.
          const target = isReload ? Math.max(pageSize, current.items.length) : run.want;
          let cursor = isReload ? undefined : current.next;
          const items: T[] = isReload ? [] : [...current.items];
          const base = items.length;
          let total = current.total;
          let next: string | undefined;
          do {
            const page = await fetchRef.current(Math.min(MAX_PAGE, Math.max(1, target - items.length)), cursor);
            if (generation !== run.generation) break;
            const seen = new Set(items.map(keyRef.current));
            for (const item of page.items) if (!seen.has(keyRef.current(item))) items.push(item);
            total = page.total;
            next = page.next_cursor;
            cursor = next;
          } while (next !== undefined && items.length < target);
          if (generation !== run.generation) continue;
          // The rows edited meanwhile stay as edited; what the pages brought is added below them.
          const head = isReload ? [] : run.state.items;
          const kept = new Set(head.map(keyRef.current));
          const rows = [...head, ...items.slice(base).filter((item) => !kept.has(keyRef.current(item)))];
          settle({ items: rows, total: Math.max(total, rows.length), next, loading: false }, generation);
        } catch (err) {
          if (generation !== run.generation) continue;
          settle({ ...run.state, error: (err as Error).message, loading: false }, generation);
          break;
        }
      }
    } finally {
      run.running = false;
    }
    // Asked for again while the last request ran under older filters.
    if (run.reload) void pump();
  }, []);

  useEffect(() => {
    const run = r.current;
    run.generation++;
    run.want = pageSize;
    run.reload = true;
    run.edits = [];
    run.recount = false;
    const empty = { items: [], total: 0, loading: true };
    run.state = empty;
    setState(empty);
    if (run.running) return;
    void pump();
  }, deps);

  const loadUpTo = useCallback((count: number) => {
    const run = r.current;
    if (count <= run.want) return;
    run.want = count;
    void pump();
  }, []);
  const reload = useCallback(() => {
    r.current.reload = true;
    void pump();
  }, []);
  const edit = useCallback((change: Change<T>) => {
    const run = r.current;
    const { state: next, countKnown, countMoved } = replay(run.state, [change]);
    if (run.running) run.edits.push({ change, movedCount: countMoved });
    if (next === run.state) return;
    run.state = next;
    setState(next);
    if (!countKnown) {
      run.recount = true;
      void pump();
    }
  }, []);
  return { items: state.items, total: state.total, error: state.error, loading: state.loading, loadUpTo, reload, edit };
}
