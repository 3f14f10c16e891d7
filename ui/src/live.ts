// Live data: every view follows the control plane through EventSource (no polling). A stream that drops is
// resumed where it stopped — by the browser itself (Last-Event-ID) while the connection merely blinks, by us
// with `after_seq`/`after_cursor` once the browser gives up (an error answer, a supervisor restart) — and every
// stream's state feeds one connection indicator, so the page says what is happening and recovers on its own.

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'refused' | 'down';

export interface StreamStatus {
  state: StreamState;
  /** Why a stream is refused (the problem's detail), or why it is down. */
  detail?: string;
  /** When the next attempt is, for a stream we reopen ourselves. */
  retryAt?: number;
}

export interface StreamOptions {
  /** The stream's path (same origin). */
  path: string;
  /** Frames by event name; `id` is the frame's id (a seq or a cursor). */
  on: Record<string, (data: unknown, id: string) => void>;
  /** The query parameter that resumes after an id, when we reopen the stream ourselves. */
  resumeParam?: 'after_seq' | 'after_cursor';
  /** Resume after this id from the start (a paused feed resumed at its cursor). */
  after?: string;
  /** Called on every (re)open: a view reloads what it shows, so nothing missed while away stays missing. */
  onOpen?: (resumed: boolean) => void;
  onStatus?: (status: StreamStatus) => void;
}

const MIN_RETRY_MS = 500;
const MAX_RETRY_MS = 8_000;

type Listener = () => void;
const streams = new Set<LiveStream>();
const listeners = new Set<Listener>();

/** The worst state of every open stream: what the connection indicator shows. */
export function overallStatus(): StreamStatus {
  let worst: StreamStatus = { state: 'live' };
  const rank: Record<StreamState, number> = { live: 0, connecting: 1, refused: 2, reconnecting: 3, down: 4 };
  for (const s of streams) if (rank[s.status.state] > rank[worst.state]) worst = s.status;
  return worst;
}

export function onStatusChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function notify(): void {
  for (const l of listeners) l();
}

export class LiveStream {
  status: StreamStatus = { state: 'connecting' };
  private source: EventSource | undefined;
  private lastId: string | undefined;
  private retryMs = MIN_RETRY_MS;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private opened = false;

  constructor(private readonly o: StreamOptions) {
    this.lastId = o.after;
    streams.add(this);
    this.open();
  }

  /** The id of the last frame received (where a resume starts). */
  get position(): string | undefined {
    return this.lastId;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.source?.close();
    streams.delete(this);
    notify();
  }

  private setStatus(status: StreamStatus): void {
    this.status = status;
    this.o.onStatus?.(status);
    notify();
  }

  private open(): void {
    const url = new URL(this.o.path, location.origin);
    if (this.lastId !== undefined && this.o.resumeParam) url.searchParams.set(this.o.resumeParam, this.lastId);
    const source = new EventSource(url);
    this.source = source;
    source.onopen = () => {
      this.retryMs = MIN_RETRY_MS;
      this.setStatus({ state: 'live' });
      this.o.onOpen?.(this.opened);
      this.opened = true;
    };
    for (const [name, handle] of Object.entries(this.o.on)) {
      source.addEventListener(name, (event) => {
        const message = event as MessageEvent<string>;
        if (message.lastEventId) this.lastId = message.lastEventId;
        let data: unknown;
        try {
          data = JSON.parse(message.data);
        } catch {
          console.warn(`a ${name} frame of ${this.o.path} is not JSON`);
          return;
        }
        handle(data, message.lastEventId);
      });
    }
    source.onerror = () => {
      if (this.closed || source !== this.source) return;
      if (source.readyState === EventSource.CONNECTING) {
        // The browser retries by itself, sending Last-Event-ID.
        this.setStatus({ state: 'reconnecting' });
        return;
      }
      source.close();
      void this.diagnoseAndRetry();
    };
  }

  /** The browser gave up (an error answer, or none): find out which, say so, and try again later. */
  private async diagnoseAndRetry(): Promise<void> {
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    let status: StreamStatus;
    try {
      const health = await fetch('/health', { cache: 'no-store' });
      if (!health.ok) throw new Error(`health ${health.status}`);
      status = { state: 'refused', detail: await this.refusal(), retryAt: Date.now() + delay };
    } catch {
      status = { state: 'down', detail: 'the supervisor is not answering', retryAt: Date.now() + delay };
    }
    if (this.closed) return;
    this.setStatus(status);
    this.timer = setTimeout(() => this.open(), delay);
  }

  /** The words of the stream's refusal (a city stopped, a session closed …). */
  private async refusal(): Promise<string> {
    const controller = new AbortController();
    try {
      const res = await fetch(this.o.path, { signal: controller.signal, headers: { Accept: 'text/event-stream' } });
      if (res.ok) return 'the stream ended';
      const body = (await res.json()) as { detail?: string; title?: string };
      return body.detail ?? body.title ?? `HTTP ${res.status}`;
    } catch (err) {
      return (err as Error).message;
    } finally {
      controller.abort();
    }
  }
}
