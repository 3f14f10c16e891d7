import type { ReadableStream, ReadableStreamDefaultReader, ReadableStreamReadResult } from 'node:stream/web';
import { get, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { WAIT_MS } from './wait.js';

/** One Server-Sent Events frame as the wire carried it (`id` undefined when the frame had no `id:` line). */
export interface SseFrame {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** Every stream opened here, so a test's `afterEach` can abort whatever is still open. */
const open = new Set<SseStreamReader>();

/** Aborts every stream still open (call it in `afterEach`). */
export function closeAllStreams(): void {
  for (const reader of [...open]) reader.close();
}

/**
 * A Server-Sent Events client for tests: fetch plus `eventsource-parser`. It reads the body only when asked
 * for a frame (`next`), so a test can stop reading to play a slow subscriber. `close()` aborts the fetch.
 */
export class SseStreamReader {
  private readonly queue: SseFrame[] = [];
  private readonly parser: EventSourceParser;
  private readonly decoder = new TextDecoder();
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
  /** True once the body ended (the server closed it, or the connection broke). */
  ended = false;
  /** How the body ended when it did not end cleanly (e.g. a connection cut mid-chunk). */
  endError: unknown;
  /** Every frame taken from this stream, heartbeats included, in order. */
  readonly received: SseFrame[] = [];

  private constructor(
    readonly response: Response,
    private readonly abort: AbortController,
  ) {
    this.parser = createParser({
      onEvent: (message) => this.queue.push({ id: message.id, event: message.event, data: message.data }),
    });
  }

  /**
   * GETs `url`; resolves once the response headers arrived (whatever the status). With `ownConnection`, the
   * request goes on a new connection, never a pooled one, so that the server's socket for this stream is
   * one it opened for it (see `socketsOf`).
   */
  static async open(
    url: string,
    headers: Record<string, string> = {},
    options: { ownConnection?: boolean } = {},
  ): Promise<SseStreamReader> {
    const abort = new AbortController();
    const all = { Accept: 'text/event-stream', ...headers };
    const response = options.ownConnection
      ? await getOnOwnConnection(url, all, abort.signal)
      : await fetch(url, { headers: all, signal: abort.signal });
    const reader = new SseStreamReader(response, abort);
    open.add(reader);
    return reader;
  }

  get status(): number {
    return this.response.status;
  }

  /** The body of a non-stream answer (a problem), as JSON; closes the stream. */
  async json(): Promise<Record<string, unknown>> {
    try {
      return (await this.response.json()) as Record<string, unknown>;
    } finally {
      this.close();
    }
  }

  /**
   * The next frame (heartbeats included), reading as much as needed; undefined once the stream ended.
   * Rejects when nothing arrives within `timeoutMs`.
   */
  async next(timeoutMs = WAIT_MS): Promise<SseFrame | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.ended) return undefined;
      await this.readChunk(deadline);
    }
    const frame = this.queue.shift()!;
    this.received.push(frame);
    return frame;
  }

  /** The next frame that is not a heartbeat; undefined once the stream ended. */
  async nextEvent(timeoutMs = WAIT_MS): Promise<SseFrame | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = await this.next(Math.max(1, deadline - Date.now()));
      if (frame === undefined || frame.event !== 'heartbeat') return frame;
    }
  }

  /** The next `count` frames that are not heartbeats; rejects if the stream ends or stalls first. */
  async events(count: number, timeoutMs = WAIT_MS): Promise<SseFrame[]> {
    const frames: SseFrame[] = [];
    const deadline = Date.now() + timeoutMs;
    while (frames.length < count) {
      const frame = await this.nextEvent(Math.max(1, deadline - Date.now()));
      if (!frame) throw new Error(`the stream ended after ${frames.length} of ${count} events`);
      frames.push(frame);
    }
    return frames;
  }

  /** Non-heartbeat frames until `done(frame)` holds (that frame included); rejects on end or stall. */
  async until(done: (frame: SseFrame) => boolean, timeoutMs = WAIT_MS): Promise<SseFrame[]> {
    const frames: SseFrame[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = await this.nextEvent(Math.max(1, deadline - Date.now()));
      if (!frame) throw new Error(`the stream ended after ${frames.length} events without the one awaited`);
      frames.push(frame);
      if (done(frame)) return frames;
    }
  }

  /** Reads frames until the stream ends; rejects if it is still open after `timeoutMs`. */
  async drainToEnd(timeoutMs = WAIT_MS): Promise<SseFrame[]> {
    const frames: SseFrame[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = await this.next(Math.max(1, deadline - Date.now()));
      if (!frame) return frames;
      frames.push(frame);
    }
  }

  /** Aborts the request (idempotent). */
  close(): void {
    open.delete(this);
    this.ended = true;
    this.abort.abort();
  }

  private async readChunk(deadline: number): Promise<void> {
    this.reader ??= (this.response.body as unknown as ReadableStream<Uint8Array>).getReader();
    this.pending ??= this.reader.read();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Math.max(1, deadline - Date.now()));
    });
    let result: ReadableStreamReadResult<Uint8Array> | 'timeout';
    try {
      result = await Promise.race([this.pending, timeout]);
    } catch (err) {
      // The connection ended abruptly (cut by the server, or aborted by us): what was parsed stays.
      this.pending = undefined;
      this.endError = err;
      this.ended = true;
      open.delete(this);
      return;
    } finally {
      clearTimeout(timer);
    }
    if (result === 'timeout') throw new Error('no SSE frame arrived in time');
    this.pending = undefined;
    if (result.done) {
      this.ended = true;
      open.delete(this);
      return;
    }
    this.parser.feed(this.decoder.decode(result.value, { stream: true }));
  }
}

/** A GET over node:http on a connection of its own (no agent, so no pool), as a fetch `Response`. */
async function getOnOwnConnection(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Response> {
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    get(url, { headers, agent: false, signal }, resolve).once('error', reject);
  });
  const responseHeaders = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) responseHeaders.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
  const body = Readable.toWeb(res) as unknown as globalThis.ReadableStream<Uint8Array>;
  return new Response(body, { status: res.statusCode, headers: responseHeaders });
}
