import { connect, type Socket } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

/** One HTTP/1.1 response read off a raw connection. */
export interface RawResponse {
  status: number;
  /** Lowercased names; a repeated header's values joined with `, `. */
  headers: IncomingHttpHeaders;
  /** Header lines as received, `[name, value, name, value, …]`. */
  rawHeaders: string[];
  text: string;
  /** The body parsed as JSON, when it is JSON. */
  body: Record<string, any> | undefined; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * A TCP connection written to byte for byte (malformed requests no HTTP client would send, pipelining, a body
 * cut short) and read back as the responses the server sends, in order. Bodies are read by Content-Length
 * (none without one), so it is not for HEAD requests or chunked responses.
 */
export class RawConnection {
  private buffered = Buffer.alloc(0);
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.notify();
    });
    socket.on('end', () => {
      this.ended = true;
      this.notify();
    });
    // A reset after the server's last byte is how some refusals end; what arrived before it still counts.
    socket.on('error', (err) => {
      this.error = err;
      this.notify();
    });
    socket.on('close', () => {
      this.ended = true;
      this.notify();
    });
  }

  static open(port: number, host = '127.0.0.1'): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host);
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Writes bytes as they are; resolves once they are handed to the kernel (or the server stopped reading). */
  write(bytes: string | Buffer): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed || this.socket.writableEnded) {
        resolve();
        return;
      }
      this.socket.write(bytes, () => resolve());
    });
  }

  /** The next response; fails if the connection ends before a whole one arrived. */
  async response(): Promise<RawResponse> {
    for (;;) {
      const parsed = this.take();
      if (parsed) return parsed;
      if (this.ended || this.error) {
        const got = this.buffered.toString('latin1').slice(0, 200);
        throw new Error(`connection ended before a whole response (${this.error?.message ?? 'end'}): ${got}`);
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Resolves once the server has ended the connection; nothing unread may be left. */
  async closedByServer(): Promise<void> {
    while (!this.ended && !this.error) await new Promise<void>((resolve) => (this.wake = resolve));
    if (this.buffered.length > 0) throw new Error(`unread bytes: ${this.buffered.toString('latin1').slice(0, 200)}`);
  }

  destroy(): void {
    this.socket.destroy();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private take(): RawResponse | undefined {
    const headEnd = this.buffered.indexOf('\r\n\r\n');
    if (headEnd < 0) return undefined;
    const lines = this.buffered.subarray(0, headEnd).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1]);
    if (!status) throw new Error(`not a status line: ${lines[0]}`);
    const rawHeaders: string[] = [];
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon);
      const value = line.slice(colon + 1).trim();
      rawHeaders.push(name, value);
      const lower = name.toLowerCase();
      headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`;
    }
    if (headers['transfer-encoding'] !== undefined) throw new Error('a chunked response: not read by this helper');
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = headEnd + 4;
    if (this.buffered.length < bodyStart + length) return undefined;
    const text = this.buffered.subarray(bodyStart, bodyStart + length).toString('utf8');
    this.buffered = this.buffered.subarray(bodyStart + length);
    let body: RawResponse['body'];
    try {
      body = text ? (JSON.parse(text) as RawResponse['body']) : undefined;
    } catch {
      body = undefined;
    }
    return { status, headers, rawHeaders, text, body };
  }
}
