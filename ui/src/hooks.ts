import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { LiveEvent } from './api.js';
import { LiveStream, type StreamOptions, type StreamStatus } from './live.js';

const MIN_RELOAD_GAP_MS = 250;

export interface Loaded<T> {
  data?: T;
  error?: string;
  loading: boolean;
  reload: () => void;
}

/** A loaded value the view may also change itself (from an event's payload), without a request. */
export interface Settable<T> extends Loaded<T> {
  /**
   * Replaces the value with what `change` makes of it. Were a load on its way (its answer may have been read
   * before the change), one more follows it.
   */
  set: (change: (data: T | undefined) => T | undefined) => void;
}

/**
 * What `load` returns, loaded now and again on `reload()`. Reloads that come while one is in flight collapse into
 * one more after it (a burst of events costs two requests, not fifty), and an answer never overwrites a newer one.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Settable<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const run = useRef({ inFlight: false, again: false, generation: 0, lastStart: 0, timer: 0 });
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(() => {
    const r = run.current;
    if (r.inFlight) {
      r.again = true;
      return;
    }
    // At most a few loads a second however fast events come: a flood of them costs the server a few requests
    // and the page a few renders, and the last load still follows the last event.
    const wait = r.lastStart + MIN_RELOAD_GAP_MS - performance.now();
    if (wait > 0) {
      if (!r.timer) {
        r.timer = window.setTimeout(() => {
          r.timer = 0;
          reload();
        }, wait);
      }
      return;
    }
    r.lastStart = performance.now();
    r.inFlight = true;
    const generation = r.generation;
    loadRef
      .current()
      .then(
        (data) => generation === r.generation && setState({ data, loading: false }),
        (err: Error) => generation === r.generation && setState((s) => ({ ...s, error: err.message, loading: false })),
      )
      .finally(() => {
        r.inFlight = false;
        if (r.again && generation === r.generation) {
          r.again = false;
          reload();
        }
      });
  }, []);
  useEffect(() => {
    const r = run.current;
    r.generation++;
    r.inFlight = false;
    r.again = false;
    r.lastStart = 0;
    clearTimeout(r.timer);
    r.timer = 0;
    setState({ loading: true });
    reload();
    return () => clearTimeout(r.timer);
  }, deps);
  const set = useCallback((change: (data: T | undefined) => T | undefined) => {
    const r = run.current;
    if (r.inFlight) r.again = true;
    setState((s) => ({ ...s, data: change(s.data) }));
  }, []);
  return { ...state, reload, set };
}

/** A live stream for as long as the component shows; handlers may change between renders without reopening it. */
export function useStream(options: StreamOptions | undefined, deps: unknown[]): StreamStatus | undefined {
  const [status, setStatus] = useState<StreamStatus | undefined>(undefined);
  const ref = useRef(options);
  ref.current = options;
  useEffect(() => {
    if (!options) return;
    const on: StreamOptions['on'] = {};
    for (const name of Object.keys(options.on)) on[name] = (data, id) => ref.current?.on[name]?.(data, id);
    const stream = new LiveStream({
      ...options,
      on,
      onOpen: (resumed) => ref.current?.onOpen?.(resumed),
      onStatus: setStatus,
    });
    return () => stream.close();
  }, deps);
  return status;
}

/**
 * Collects values and hands them over once per animation frame: hundreds of events a second cost one render a
 * frame, not one each.
 */
export function useFrameBatch<T>(flush: (batch: T[]) => void): (value: T) => void {
  const state = useRef<{ items: T[]; frame: number }>({ items: [], frame: 0 });
  const flushRef = useRef(flush);
  flushRef.current = flush;
  useEffect(() => () => cancelAnimationFrame(state.current.frame), []);
  return useCallback((value: T) => {
    const s = state.current;
    s.items.push(value);
    if (s.frame) return;
    s.frame = requestAnimationFrame(() => {
      s.frame = 0;
      const items = s.items;
      s.items = [];
      flushRef.current(items);
    });
  }, []);
}

/** A city's events as they happen (from now on), each handed to `onEvent`; reopened views reload on `onOpen`. */
export function useCityEvents(
  city: string,
  onEvent: (event: LiveEvent) => void,
  onOpen?: (resumed: boolean) => void,
): StreamStatus | undefined {
  return useStream(
    {
      path: `/v0/city/${encodeURIComponent(city)}/events/stream`,
      resumeParam: 'after_seq',
      on: { event: (data) => onEvent(data as LiveEvent) },
      onOpen,
    },
    [city],
  );
}

/** Reloads `loaded` whenever a city event matching `matches` arrives, and when the stream (re)opens. */
export function useReloadOn(city: string, matches: (event: LiveEvent) => boolean, ...loaded: Loaded<unknown>[]) {
  return useCityEvents(
    city,
    (event) => {
      if (matches(event)) for (const l of loaded) l.reload();
    },
    (resumed) => {
      if (resumed) for (const l of loaded) l.reload();
    },
  );
}

/** A value from the URL's query string, and a setter that replaces the URL (bookmarkable filters). */
export function useQueryParam(name: string): [string, (value: string) => void] {
  const read = () => new URLSearchParams(location.search).get(name) ?? '';
  const [value, setValue] = useState(read);
  useEffect(() => {
    const onPop = () => setValue(read());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, [name]);
  const set = useCallback(
    (next: string) => {
      const params = new URLSearchParams(location.search);
      if (next) params.set(name, next);
      else params.delete(name);
      const query = params.toString();
      history.replaceState(history.state, '', `${location.pathname}${query ? `?${query}` : ''}`);
      setValue(next);
    },
    [name],
  );
  return [value, set];
}
