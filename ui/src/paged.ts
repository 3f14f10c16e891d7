import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

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
}

const MAX_PAGE = 1000;
const MIN_RELOAD_GAP_MS = 250;

/**
 * A long list paged through the API as the person scrolls: the first `pageSize` items at once, more when a view
 * asks (`loadUpTo`), and — on `reload` — the same number again from the top, so a change anywhere in what is
 * shown appears without losing the place. Requests run one at a time; reloads asked for while one runs fold into
 * one after it, at most four a second; an answer for older filters is dropped.
 */
export function usePagedList<T>(
  fetchPage: (limit: number, cursor: string | undefined) => Promise<Page<T>>,
  key: (item: T) => string,
  deps: unknown[],
  pageSize = 200,
): PagedList<T> {
  const [state, setState] = useState<{ items: T[]; total: number; next?: string; error?: string; loading: boolean }>({
    items: [],
    total: 0,
    loading: true,
  });
  const r = useRef({ generation: 0, running: false, reload: false, want: pageSize, lastReload: 0, state });
  r.current.state = state;
  const fetchRef = useRef(fetchPage);
  fetchRef.current = fetchPage;
  const keyRef = useRef(key);
  keyRef.current = key;

  const pump = useCallback(async () => {
    const run = r.current;
    if (run.running) return;
    run.running = true;
    try {
      for (;;) {
        const generation = run.generation;
        const current = run.state;
        const isReload = run.reload || current.loading;
        if (!isReload && (current.items.length >= run.want || current.next === undefined)) break;
        if (isReload) {
          const gap = run.lastReload + MIN_RELOAD_GAP_MS - performance.now();
          if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
          run.reload = false;
          run.lastReload = performance.now();
        }
        try {
          // A reload fetches from the top as many as were loaded; a load carries on after the last cursor.
          const target = isReload ? Math.max(pageSize, current.items.length) : run.want;
          let cursor = isReload ? undefined : current.next;
          const items: T[] = isReload ? [] : [...current.items];
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
          const loaded = { items, total: Math.max(total, items.length), next, loading: false };
          run.state = loaded;
          setState(loaded);
        } catch (err) {
          if (generation !== run.generation) continue;
          const failed = { ...run.state, error: (err as Error).message, loading: false };
          run.state = failed;
          setState(failed);
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
  return { items: state.items, total: state.total, error: state.error, loading: state.loading, loadUpTo, reload };
}
