import { request, type Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { Context } from 'koa';
import { discardBody } from './discard-body.js';
import { Problem } from './problem.js';
import { REQUEST_ID_HEADER } from './request-id.js';
import { HOP_BY_HOP } from './hop-by-hop.js';

export interface ForwardTarget {
  /** A Unix socket, or a TCP host and port. */
  socketPath?: string;
  host?: string;
  port?: number;
  /** Path and query to request upstream. */
  path: string;
  /** The pool to take a connection from; `false` for a connection of its own, closed with the response. */
  agent?: Agent | false;
  /** Host header to send upstream. */
  hostHeader: string;
  /**
   * How long the request may wait for a connection to the upstream (a free socket of the agent's pool, then
   * the connect); past it the answer is a 503 problem with this detail instead of a wait without end.
   */
  connectTimeout?: { ms: number; detail: string };
}

function requestHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

/**
 * Forwards the request as it is, body streaming in both directions with nothing buffered: a chunk the
 * upstream writes reaches the client at once (SSE works through it), and a client that disconnects
 * aborts the upstream request. Errors before the upstream answers become a 502 problem; a GET or HEAD
 * that lost a race with a closing keep-alive connection is retried once on a fresh one.
 */
export function forward(ctx: Context, target: ForwardTarget): Promise<void> {
  const retriable = ctx.method === 'GET' || ctx.method === 'HEAD';
  return attempt(ctx, target, retriable).catch((err: unknown) => {
    if (err instanceof RetryableError) return attempt(ctx, { ...target, agent: undefined }, false);
    throw err;
  });
}

class RetryableError extends Error {}

function attempt(ctx: Context, target: ForwardTarget, retriable: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers = requestHeaders(ctx.req.headers);
    headers.host = target.hostHeader;
    headers[REQUEST_ID_HEADER.toLowerCase()] = ctx.state.requestId as string;
    const upstream = request({
      socketPath: target.socketPath,
      host: target.host,
      port: target.port,
      method: ctx.method,
      path: target.path,
      headers,
      agent: target.agent,
    });
    let answered = false;
    let responded = false;
    let connectTimer: NodeJS.Timeout | undefined;
    if (target.connectTimeout) {
      const { ms, detail } = target.connectTimeout;
      connectTimer = setTimeout(() => {
        // A request still queued for one of the pool's sockets reports its destruction only once it gets one:
        // answer now.
        ctx.res.off('close', clientGone);
        upstream.destroy();
        reject(new Problem('service-unavailable', detail));
      }, ms);
      const connected = () => clearTimeout(connectTimer);
      upstream.once('socket', (socket) => {
        if (socket.connecting) socket.once('connect', connected);
        else connected();
      });
    }
    const clientGone = () => {
      if (!ctx.res.writableFinished) upstream.destroy();
    };
    ctx.res.once('close', clientGone);
    // An upstream that answered before it had the whole body will not read the rest: stop sending it, close that
    // connection rather than leave it half-used in the agent's pool, and drop what the client still sends so its
    // connection can carry its next request.
    const stopSending = () => {
      upstream.destroy();
      discardBody(ctx.req);
    };

    upstream.on('response', (res) => {
      clearTimeout(connectTimer);
      answered = true;
      ctx.respond = false;
      // The upstream's headers as it spelled them; our own (request id, CORS, Vary) win.
      const ours = new Set(ctx.res.getHeaderNames());
      const upstreamHeaders = new Map<string, { name: string; values: string[] }>();
      for (let i = 0; i < res.rawHeaders.length; i += 2) {
        const name = res.rawHeaders[i];
        const lower = name.toLowerCase();
        if (HOP_BY_HOP.has(lower) || ours.has(lower)) continue;
        const entry = upstreamHeaders.get(lower) ?? { name, values: [] };
        entry.values.push(res.rawHeaders[i + 1]);
        upstreamHeaders.set(lower, entry);
      }
      for (const { name, values } of upstreamHeaders.values()) {
        ctx.res.setHeader(name, values.length === 1 ? values[0] : values);
      }
      ctx.res.writeHead(res.statusCode ?? 502, res.statusMessage);
      // A stream (no length: SSE, chunked) shows its headers at once; a sized body goes out with them.
      if (res.headers['content-length'] === undefined) ctx.res.flushHeaders();
      res.pipe(ctx.res);
      res.on('error', () => ctx.res.destroy());
      res.on('aborted', () => ctx.res.destroy());
      res.on('end', () => {
        responded = true;
        if (!upstream.writableFinished) stopSending();
      });
      res.on('close', () => {
        if (!res.complete) ctx.res.destroy();
        ctx.res.off('close', clientGone);
        resolve();
      });
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(connectTimer);
      ctx.res.off('close', clientGone);
      if (answered) {
        // Failing to send the rest of a body the upstream did not wait for spoils nothing of its whole answer.
        if (responded) stopSending();
        else ctx.res.destroy();
        resolve();
        return;
      }
      // The client went away (its request stream ends, and is destroyed, as soon as its body is read: that says
      // nothing about the connection).
      if (ctx.res.destroyed || ctx.req.socket.destroyed) {
        resolve();
        return;
      }
      if (retriable && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && upstream.reusedSocket) {
        reject(new RetryableError(err.message));
        return;
      }
      reject(new Problem('bad-gateway', `bad_gateway: upstream did not answer: ${err.code ?? err.message}`));
    });
    if (ctx.req.readableEnded) upstream.end();
    else ctx.req.pipe(upstream);
  });
}
