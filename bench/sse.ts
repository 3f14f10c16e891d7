import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { TextDecoder } from 'node:util';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';

/** Wall-clock milliseconds with sub-millisecond resolution: the clock the writer processes stamp events with. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

/** A frame and when its last byte reached us (`wallNow()` when its chunk was read off the socket). */
export type FrameListener = (frame: EventSourceMessage, receivedAt: number) => void;

export interface SseSubscription {
  /** Frames parsed so far. */
  readonly frames: number;
  /** Set once the server ended or broke the stream (or we closed it). */
  readonly ended: boolean;
  close(): void;
}

// Chunks are stamped as they come off the socket and parsed later, once no chunk has arrived for a moment (at most
// MAX_DEFER_MS after the first): with hundreds of subscribers whose sockets turn readable one after another as
// the server writes to them, parsing (SSE + JSON) in between reads would add that work to the later reads'
// stamps. What stays between a frame's arrival and its stamp is node:http's own per-chunk work.
interface Chunk {
  parser: EventSourceParser;
  /** Decodes a subscriber's bytes (a character may straddle two chunks). */
  decoder: TextDecoder;
  at: number;
  bytes: Buffer;
}
const IDLE_MS = 2;
const MAX_DEFER_MS = 50;
const backlog: Chunk[] = [];
let flushTimer: NodeJS.Timeout | undefined;
let firstChunkAt = 0;
let lastChunkAt = 0;
let currentAt = 0;

function enqueue(chunk: Chunk): void {
  backlog.push(chunk);
  lastChunkAt = chunk.at;
  if (flushTimer) return;
  firstChunkAt = chunk.at;
  flushTimer = setTimeout(maybeFlush, IDLE_MS);
}

function maybeFlush(): void {
  const now = wallNow();
  const idleFor = now - lastChunkAt;
  if (idleFor < IDLE_MS && now - firstChunkAt < MAX_DEFER_MS) {
    flushTimer = setTimeout(maybeFlush, IDLE_MS - idleFor);
    return;
  }
  flushTimer = undefined;
  const chunks = backlog.splice(0);
  for (const chunk of chunks) {
    currentAt = chunk.at;
    chunk.parser.feed(chunk.decoder.decode(chunk.bytes, { stream: true }));
  }
}

/**
 * Opens `GET url` as an SSE stream with node:http (no connection pool: one socket per subscriber) and resolves
 * once the 200 and its headers arrived; rejects on any other status, with the body.
 */
export function subscribe(
  url: string,
  onFrame: FrameListener,
  headers: Record<string, string> = {},
): Promise<SseSubscription> {
  return new Promise((resolve, reject) => {
    let frames = 0;
    let ended = false;
    let res: IncomingMessage | undefined;
    const parser = createParser({
      onEvent: (frame) => {
        frames++;
        onFrame(frame, currentAt);
      },
    });
    const decoder = new TextDecoder();
    const req: ClientRequest = request(url, { agent: false, headers: { Accept: 'text/event-stream', ...headers } });
    const subscription: SseSubscription = {
      get frames() {
        return frames;
      },
      get ended() {
        return ended;
      },
      close() {
        ended = true;
        res?.destroy();
        req.destroy();
      },
    };
    req.on('response', (response) => {
      res = response;
      if (response.statusCode !== 200) {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => reject(new Error(`GET ${url}: HTTP ${response.statusCode}: ${body}`)));
        return;
      }
      response.on('data', (bytes: Buffer) => enqueue({ parser, decoder, at: wallNow(), bytes }));
      response.on('close', () => (ended = true));
      resolve(subscription);
    });
    req.on('error', (err) => {
      ended = true;
      reject(err);
    });
    req.end();
  });
}

/** Opens `count` subscriptions, at most `parallel` connecting at once. */
export async function subscribeMany(
  count: number,
  parallel: number,
  open: (index: number) => Promise<SseSubscription>,
): Promise<SseSubscription[]> {
  const subscriptions: SseSubscription[] = new Array<SseSubscription>(count);
  let nextIndex = 0;
  const worker = async () => {
    while (nextIndex < count) {
      const index = nextIndex++;
      subscriptions[index] = await open(index);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
  } catch (err) {
    for (const s of subscriptions) s?.close();
    throw err;
  }
  return subscriptions;
}
