import type { IncomingMessage } from 'node:http';

/** The most of an unwanted body read (and dropped) to keep its connection; a client sending more loses it. */
const DISCARD_LIMIT = 64 * 1024 * 1024;

/**
 * Reads and drops the rest of a request body nobody will read: a refused one (413, a failed parse, any error
 * thrown before the body was read to its end), or one whose upstream answered without it. Node parses the next
 * request on a connection only once the body before it has been read, and a body left half-read and paused
 * (as koa-body's reader leaves one it refuses, or a pipe to an upstream that stopped reading) held the
 * connection until the keep-alive timeout. Node does this itself only for a body nobody started reading.
 */
export function discardBody(req: IncomingMessage): void {
  if (req.readableEnded || req.destroyed) return;
  req.unpipe();
  req.removeAllListeners('data');
  let left = DISCARD_LIMIT;
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.socket.destroy();
  });
  req.resume();
}
