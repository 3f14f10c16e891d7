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
 * cut short) and read back as the responses the server sends, in order. Bodies are read by Content-Length or
 * chunked framing (none without either), so it is not for HEAD requests.
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
    const bodyStart = headEnd + 4;
    const chunked = /chunked/i.test(headers['transfer-encoding'] ?? '');
    const read = chunked ? dechunk(this.buffered, bodyStart) : sized(this.buffered, bodyStart, headers);
    if (!read) return undefined;
    const text = read.body.toString('utf8');
    this.buffered = this.buffered.subarray(read.end);
    let body: RawResponse['body'];
    try {
      body = text ? (JSON.parse(text) as RawResponse['body']) : undefined;
    } catch {
      body = undefined;
    }
    return { status, headers, rawHeaders, text, body };
  }
}

function sized(
  buffer: Buffer,
  start: number,
  headers: Record<string, string>,
): { body: Buffer; end: number } | undefined {
  const length = Number(headers['content-length'] ?? 0);
  if (buffer.length < start + length) return undefined;
  return { body: buffer.subarray(start, start + length), end: start + length };
}

/** A whole chunked body (without trailers) from `start`, or undefined while it has not all arrived. */
function dechunk(buffer: Buffer, start: number): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = buffer.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(buffer.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error(`not a chunk size: ${buffer.subarray(at, lineEnd).toString('latin1')}`);
    const dataStart = lineEnd + 2;
    if (buffer.length < dataStart + size + 2) return undefined;
    if (size === 0) return { body: Buffer.concat(parts), end: dataStart + 2 };
    parts.push(buffer.subarray(dataStart, dataStart + size));
    at = dataStart + size + 2;
  }
}
