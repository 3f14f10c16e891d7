import type { Context } from 'koa';

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
}

/** Replays pause for the client once this much is waiting to be sent. */
const REPLAY_HIGH_WATER = 64 * 1024;

/**
 * One Server-Sent Events response. Headers go out at once, before any frame; frames are
 * `id:` (optional), `event:`, one `data:` line. Heartbeats carry no id, so a client's resume point stays.
 */
export class SseStream {
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly closeListeners: (() => void)[] = [];

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
    res.flushHeaders();
    this.heartbeat = setInterval(
      () => this.write(`event: heartbeat\ndata: {"timestamp":"${heartbeatTimestamp()}"}\n\n`),
      options.heartbeatMs,
    );
    res.on('close', () => this.close());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Bytes written but not yet taken by the client. */
  get buffered(): number {
    return this.ctx.res.writableLength;
  }

  /** Writes one frame; false once the stream is closed. */
  send(event: string, data: string, id?: string): boolean {
    return this.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${data}\n\n`);
  }

  /**
   * Before live frames: hangs up (false) on a client that has not taken what it was sent before — more than
   * `maxBufferedBytes` still unread since an earlier batch. Checked per batch, not per frame, so a burst
   * written in one go never counts against a client that keeps up.
   */
  keepingUp(): boolean {
    if (this.closed) return false;
    if (this.ctx.res.writableLength <= this.options.maxBufferedBytes) return true;
    this.ctx.res.destroy();
    this.close();
    return false;
  }

  /** During a replay: resolves at once, or once the client has taken enough of what was written. */
  paced(): Promise<void> {
    return this.ctx.res.writableLength >= REPLAY_HIGH_WATER ? this.drained() : Promise.resolve();
  }

  /**
   * Resolves when the client has taken what was written, or the stream closed; a client that takes nothing
   * for `stallMs` is hung up on (it resumes by its last id).
   */
  drained(): Promise<void> {
    const res = this.ctx.res;
    if (this.closed || res.writableLength === 0 || !res.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const stalled = setTimeout(() => {
        res.destroy();
        this.close();
      }, this.options.stallMs);
      const done = () => {
        clearTimeout(stalled);
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
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
    this.ctx.res.write(text);
    return true;
  }
}
