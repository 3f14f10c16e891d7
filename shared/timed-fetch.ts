import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { formatDuration } from './duration.js';
import { socketPathOf, UNIX_API_PROTOCOL } from './unix-api-url.js';

/** How long a request may take: to connect, and (unless a stream) to be answered in full. */
export interface FetchLimits {
  connectMs: number;
  /** From the request to the last byte of the answer; none for a stream, which runs as long as it is read. */
  answerMs?: number;
}

/** A request given up on: nothing connected, or nothing answered, within its limit. */
export class FetchTimeout extends Error {
  constructor(
    readonly phase: 'connect' | 'answer',
    readonly ms: number,
  ) {
    super(`${phase === 'connect' ? 'no connection' : 'no answer'} within ${formatDuration(ms)}`);
    this.name = 'FetchTimeout';
  }
}

interface Transport {
  request: typeof httpRequest;
  Agent: typeof HttpAgent;
}

// Idle connections are kept for the next request of the same command (a list paged through); an agent
// unrefs them, so they never keep a command from exiting.
const agents = new Map<string, HttpAgent>();

/** node:http, or node:https (loaded only for an https API: TLS is slow to load and rarely needed). */
async function transport(protocol: string): Promise<Transport> {
  // Named, not `* as http`: a bundle reads only what is named, and http's WebSocket getter loads Node's undici.
  if (protocol === 'http:' || protocol === UNIX_API_PROTOCOL) return { request: httpRequest, Agent: HttpAgent };
  if (protocol === 'https:') return import('node:https');
  throw new TypeError('fetch failed', { cause: new Error(`unsupported protocol ${protocol}`) });
}

/**
 * A `fetch` with time-outs, over node:http. The global fetch (undici) cannot bound the connect phase apart from
 * the rest, and without a bound a client of a frozen process (which the kernel still lets connect) or of a
 * full accept queue (which lets nobody connect) waits forever. Rejects with a `FetchTimeout`, or as fetch
 * does (`TypeError('fetch failed')` with the network error as `cause`); the request's own signal aborts it too.
 */
export function timedFetch(limits: FetchLimits): typeof fetch {
  return async (input, init) => send(new Request(input, init), limits);
}

async function send(request: Request, limits: FetchLimits): Promise<Response> {
  const url = new URL(request.url);
  const { request: open, Agent } = await transport(url.protocol);
  request.signal.throwIfAborted();
  const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
  const headers: Record<string, string> = {};
  for (const [name, value] of request.headers) headers[name] = value;
  if (body !== undefined) headers['content-length'] = String(body.length);
  let agent = agents.get(url.protocol);
  if (!agent) agents.set(url.protocol, (agent = new Agent({ keepAlive: true })));

  return new Promise<Response>((resolve, reject) => {
    let res: IncomingMessage | undefined;
    let settled = false;
    // Unreferenced: an open socket keeps the process alive while it matters, and a body nobody reads must not.
    const connectTimer = setTimeout(() => end(new FetchTimeout('connect', limits.connectMs)), limits.connectMs).unref();
    const answerMs = limits.answerMs;
    const answerTimer =
      answerMs === undefined
        ? undefined
        : setTimeout(() => end(new FetchTimeout('answer', answerMs)), answerMs).unref();
    const onAbort = () => end(request.signal.reason as Error);
    const end = (err?: Error) => {
      clearTimeout(connectTimer);
      clearTimeout(answerTimer);
      request.signal.removeEventListener('abort', onAbort);
      if (!err) return;
      // Before the answer the promise fails; after it, the body does.
      if (!settled) {
        settled = true;
        const own = err instanceof FetchTimeout || err === request.signal.reason;
        reject(own ? err : new TypeError('fetch failed', { cause: err }));
      }
      res?.destroy(err);
      req.destroy(err);
    };
    request.signal.addEventListener('abort', onAbort);

    const options = { method: request.method, headers, agent };
    const onAnswer = (answer: IncomingMessage) => {
      res = answer;
      const status = answer.statusCode ?? 0;
      const headerList = new Headers();
      for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
        headerList.append(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
      }
      const empty = request.method === 'HEAD' || status === 204 || status === 205 || status === 304;
      answer.once('end', () => end());
      // on, not once: a destroyed request or answer can emit a second error (the socket's end after an abort).
      answer.on('error', (err) => end(err));
      if (empty) answer.resume();
      try {
        const response = new Response(empty ? null : (Readable.toWeb(answer) as ReadableStream<Uint8Array>), {
          status,
          statusText: answer.statusMessage,
          headers: headerList,
        });
        settled = true;
        resolve(response);
      } catch (err) {
        end(err as Error);
      }
    };
    // A Unix socket's URL names the socket as its host; node:http is given the socket and the path apart.
    const req: ClientRequest =
      url.protocol === UNIX_API_PROTOCOL
        ? open(
            { ...options, socketPath: socketPathOf(url), path: `${url.pathname}${url.search}`, host: 'localhost' },
            onAnswer,
          )
        : open(url, options, onAnswer);
    req.on('error', (err) => end(err));
    req.once('socket', (socket: Socket) => {
      // A kept-alive connection is connected already.
      if (socket.connecting) socket.once('connect', () => clearTimeout(connectTimer));
      else clearTimeout(connectTimer);
    });
    req.end(body);
  });
}
