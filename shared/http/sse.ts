import type { Socket } from 'node:net';
import type { Context, Middleware } from 'koa';

/** A heartbeat's timestamp: RFC 3339, UTC, whole seconds. */
function heartbeatTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface SseOptions {
  heartbeatMs: number;
  /**
   * Bytes a client may leave unread before we hang up on it. A subscriber that cannot keep up is closed
   * rather than buffered without bound; it resumes from its last `id:` without loss.
   */
  maxBufferedBytes: number;
  /** A replay waiting this long for the client to take anything hangs up. */
  stallMs: number;
  /** Sent as the stream's first field, `retry:`: the reconnection delay a client should use. */
  retryMs: number;
}

/**
 * Middleware that serves one SSE path: GET and HEAD go to `serve`; any other method is a 405 naming those two,
 * as the router answers a known path asked with another method.
 */
export function sseRoute(path: string, serve: (ctx: Context) => Promise<void>): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== path) {
      await next();
      return;
    }
    if (refusedUnlessRead(ctx)) return;
    await serve(ctx);
  };
}

/**
 * A stream is only read: any method but GET and HEAD gets a 405 naming those two (the error funnel words it).
 * True when it did, and the caller is done.
 */
export function refusedUnlessRead(ctx: Context): boolean {
  if (ctx.method === 'GET' || ctx.method === 'HEAD') return false;
  ctx.set('Allow', 'GET, HEAD');
  ctx.status = 405;
  return true;
}

/** One frame's text: `id:` (optional), `event:`, one `data:` line. */
export function sseFrame(event: string, data: string, id?: string): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${data}\n\n`;
}

/** Replays pause for the client once this much is waiting to be sent. */
const REPLAY_HIGH_WATER = 64 * 1024;

/**
 * One Server-Sent Events response. Headers go out at once, before any frame; frames are
 * `id:` (optional), `event:`, one `data:` line. Heartbeats carry no id, so a client's resume point stays.
 *
 * Frames are written to the socket itself, in the response's chunked framing: node:http's `res.write` corks
 * the socket until the next tick, so when one event goes out to hundreds of streams in one loop, none of
 * them would leave before the last was written. Written straight, each leaves as soon as it is written, in
 * one write call instead of four.
 */
export class SseStream {
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly closeListeners: (() => void)[] = [];
  private readonly socket: Socket;
  /** Whether the body is chunked (HTTP/1.1; an HTTP/1.0 body simply runs until the connection closes). */
  private readonly chunked: boolean;
  /** A HEAD request: the headers, and no body. */
  private readonly bodiless: boolean;

  constructor(
    private readonly ctx: Context,
    private readonly options: SseOptions,
  ) {
    const res = ctx.res;
    ctx.respond = false;
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    for (const [name, value] of Object.entries({
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    })) {
      res.setHeader(name, value);
    }
    res.writeHead(200);
    this.socket = ctx.req.socket;
    this.chunked = res.chunkedEncoding;
    this.bodiless = ctx.method === 'HEAD';
    this.heartbeat = setInterval(
      () => this.write(`event: heartbeat\ndata: {"timestamp":"${heartbeatTimestamp()}"}\n\n`),
      options.heartbeatMs,
    );
    res.on('close', () => this.close());
    // A HEAD request gets the stream's headers and nothing to wait for.
    if (this.bodiless) {
      res.flushHeaders();
      this.close();
    } else {
      // Through node:http, so the headers and the first field leave in one write: a write is a system call, and
      // hundreds of streams may open at once.
      res.write(`retry: ${options.retryMs}\n\n`);
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Bytes written but not yet taken by the client. */
  get buffered(): number {
    return this.socket.writableLength;
  }

  /** Writes one frame; false once the stream is closed. */
  send(event: string, data: string, id?: string): boolean {
    return this.write(sseFrame(event, data, id));
  }

  /**
   * Writes frames (each made by `sseFrame`) in one write: what a batch of live records costs a stream is one
   * write call, however many records it holds. A write is a system call that, on loopback, also runs the
   * receiving end's TCP work; written per record, a busy log times hundreds of streams was most of the
   * process's time. Nothing is written for no frames; false once the stream is closed.
   */
  sendFrames(frames: string[]): boolean {
    if (frames.length === 0) return !this.closed;
    return this.write(frames.length === 1 ? frames[0]! : frames.join(''));
  }

  /**
   * Writes frames made once for many streams (one fan-out's batch, the same for every stream at the same cursor):
   * their bytes are encoded once, not once per stream — at hundreds of streams, encoding the same text again for
   * each was the largest cost of a fan-out after the writes themselves.
   */
  sendShared(frames: SharedFrames): boolean {
    if (this.closed) return false;
    if (this.bodiless || frames.text === '') return true;
    this.socket.write(this.chunked ? frames.chunkedBytes() : frames.bytes());
    return true;
  }

  /**
   * Before live frames: hangs up (false) on a client that has not taken what it was sent before — more than
   * `maxBufferedBytes` still unread since an earlier batch. Checked per batch, not per frame, so a burst
   * written in one go never counts against a client that keeps up.
   */
  keepingUp(): boolean {
    if (this.closed) return false;
    if (this.socket.writableLength <= this.options.maxBufferedBytes) return true;
    this.ctx.res.destroy();
    this.close();
    return false;
  }

  /** During a replay: resolves at once, or once the client has taken enough of what was written. */
  paced(): Promise<void> {
    return this.socket.writableLength >= REPLAY_HIGH_WATER ? this.drained() : Promise.resolve();
  }

  /**
   * Resolves when the client has taken what was written, or the stream closed; a client that takes nothing
   * for `stallMs` is hung up on (it resumes by its last id).
   */
  drained(): Promise<void> {
    const socket = this.socket;
    if (this.closed || socket.writableLength === 0 || !socket.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const stalled = setTimeout(() => {
        this.ctx.res.destroy();
        this.close();
      }, this.options.stallMs);
      const done = () => {
        clearTimeout(stalled);
        socket.off('drain', done);
        socket.off('close', done);
        resolve();
      };
      socket.on('drain', done);
      socket.on('close', done);
    });
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
    for (const listener of this.closeListeners.splice(0)) listener();
  }

  private write(text: string): boolean {
    if (this.closed) return false;
    if (this.bodiless) return true;
    // res.end() writes the closing chunk, so the response ends as node:http would have ended it.
    this.socket.write(this.chunked ? `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n` : text);
    return true;
  }
}

/** Frames written alike to many streams: their bytes, plain and as one HTTP/1.1 chunk, made on first use. */
export class SharedFrames {
  private plain: Buffer | undefined;
  private chunk: Buffer | undefined;

  constructor(readonly text: string) {}

  bytes(): Buffer {
    return (this.plain ??= Buffer.from(this.text));
  }

  chunkedBytes(): Buffer {
    if (!this.chunk) {
      const body = this.bytes();
      this.chunk = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]);
    }
    return this.chunk;
  }
}
