import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import type { Dispatcher } from 'undici';
import { discardBody } from './discard-body.js';
import { HOP_BY_HOP } from './hop-by-hop.js';
import { Problem } from './problem.js';
import { REQUEST_ID_HEADER } from './request-id.js';

/** Request headers undici sets itself or refuses (`expect`): never copied from the client. */
const NOT_FORWARDED = new Set([...HOP_BY_HOP, 'host', 'expect', 'content-length']);

export interface ForwardOptions {
  /** Path and query to request upstream. */
  path: string;
  /** Host header to send upstream. */
  hostHeader: string;
  /** Our request id, sent upstream so one request has one id in both logs, and set on the answer. */
  requestId: string;
  /**
   * How long the request may wait for a connection to the upstream (a free one of the pool, then the connect);
   * past it the answer is a 503 problem with this detail instead of a wait without end.
   */
  connectTimeout?: { ms: number; detail: string };
  /** Who did not answer, in the 502's detail (`upstream`, `the service`). */
  upstreamName?: string;
  /** The request's body, read already (a gate that had to look into it): sent instead of the request's stream. */
  body?: Buffer;
}

/** What the client may retry on a fresh connection: the pooled one it got was closed under it. */
const STALE_CONNECTION = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * The one forwarder: sends the request as it is over `dispatcher` (undici), the body streaming both ways with
 * nothing buffered — a chunk the upstream writes reaches the client at once (SSE works through it), and a
 * client that goes away aborts the upstream request. The upstream's headers pass but for hop-by-hop ones and
 * those the response already has (ours: request id, CORS, Vary). Resolves once the exchange is over (answered,
 * or the client gone); rejects with a Problem when the upstream cannot answer before it started (502), or gave
 * no connection in time (503). A GET or HEAD that met a pooled connection closing under it is sent once more.
 */
export function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  dispatcher: Dispatcher,
  o: ForwardOptions,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const method = req.method ?? 'GET';
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !NOT_FORWARDED.has(name)) headers[name] = value;
    }
    headers.host = o.hostHeader;
    headers[REQUEST_ID_HEADER.toLowerCase()] = o.requestId;
    const length = o.body !== undefined ? String(o.body.length) : req.headers['content-length'];
    const hasBody =
      o.body !== undefined ||
      (!req.readableEnded && (length !== undefined ? length !== '0' : req.headers['transfer-encoding'] !== undefined));
    if (hasBody && length !== undefined) headers['content-length'] = length;
    // The body goes through a relay: undici destroys what it sends when the upstream stops reading, and the
    // client's request must outlive that (its connection carries its next request).
    const relay = hasBody && o.body === undefined ? req.pipe(new PassThrough()) : null;
    res.setHeader(REQUEST_ID_HEADER, o.requestId);

    let settled = false;
    let answered = false;
    let retried = false;
    // A request still queued for one of the pool's connections cannot be aborted until it starts: one given up
    // on (the connect time-out, the client gone) is settled now and aborted the moment it starts.
    let started = false;
    let abandoned = false;
    let upstream: Dispatcher.DispatchController | undefined;
    const giveUp = (reason: Error) => {
      if (started) upstream?.abort(reason);
      else abandoned = true;
    };
    const settle = (problem?: Problem) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      res.off('close', clientGone);
      if (problem) reject(problem);
      else resolve();
    };
    const timer = o.connectTimeout
      ? setTimeout(() => {
          if (started) return;
          giveUp(new Error('connect time-out'));
          settle(new Problem('service-unavailable', o.connectTimeout!.detail));
        }, o.connectTimeout.ms)
      : undefined;
    const clientGone = () => {
      if (res.writableFinished) return;
      giveUp(new Error('the client went away'));
      if (!answered) settle();
    };
    res.once('close', clientGone);
    // An upstream that answered before it had the whole body will not read the rest: drop what the client still
    // sends, so its connection can carry its next request (undici closes the upstream's connection itself).
    const stopSending = () => {
      if (!relay || req.readableEnded) return;
      req.unpipe(relay);
      relay.destroy();
      discardBody(req);
    };

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(controller) {
        upstream = controller;
        started = true;
        clearTimeout(timer);
        if (abandoned) controller.abort(new Error('abandoned while queued'));
      },
      onResponseStart(_controller, statusCode, upstreamHeaders, statusMessage) {
        answered = true;
        const ours = new Set(res.getHeaderNames());
        for (const [name, value] of Object.entries(upstreamHeaders)) {
          if (value !== undefined && !HOP_BY_HOP.has(name) && !ours.has(name)) res.setHeader(name, value);
        }
        res.writeHead(statusCode, statusMessage || undefined);
        // A stream (no length: SSE, chunked) shows its headers at once; a sized body goes out with them.
        if (upstreamHeaders['content-length'] === undefined) res.flushHeaders();
      },
      onResponseData(controller, chunk) {
        if (!res.write(chunk)) {
          controller.pause();
          res.once('drain', () => controller.resume());
        }
      },
      onResponseEnd() {
        res.end();
        stopSending();
        settle();
      },
      onResponseError(_controller, err) {
        if (settled) return; // answered already (the time-out), or the client is gone
        if (answered) {
          res.destroy();
          settle();
          return;
        }
        if (res.destroyed || req.socket.destroyed) {
          settle();
          return;
        }
        const code = (err as NodeJS.ErrnoException).code ?? err.message;
        if (!hasBody && !retried && (method === 'GET' || method === 'HEAD') && STALE_CONNECTION.has(code)) {
          retried = true;
          started = false;
          upstream = undefined;
          send();
          return;
        }
        stopSending();
        settle(new Problem('bad-gateway', `bad_gateway: ${o.upstreamName ?? 'upstream'} did not answer: ${code}`));
      },
    };
    const send = () => {
      try {
        dispatcher.dispatch({ path: o.path, method, headers, body: o.body ?? relay }, handler);
      } catch (err) {
        // undici refuses what it cannot send (a header value it does not take) before anything goes out.
        stopSending();
        settle(
          new Problem('bad-gateway', `bad_gateway: the request could not be forwarded: ${(err as Error).message}`),
        );
      }
    };
    send();
  });
}
