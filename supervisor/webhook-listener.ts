import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { answerClientErrors } from '../shared/http/client-error.js';
import { HOP_BY_HOP } from '../shared/http/hop-by-hop.js';
import { ACTOR_HEADER } from '../shared/http/peer-gate.js';
import { decodeSegment } from '../shared/http/path-segment.js';
import { cityNotRunning, Problem } from '../shared/http/problem.js';
import { answerProblem } from '../shared/http/refusal.js';
import { newResponseId, REQUEST_ID_HEADER } from '../shared/http/request-id.js';
import { controllerHookPath, LISTENER_HOOK_PATH, WEBHOOK_PEER_HEADER } from '../shared/http/webhook-path.js';
import { carriesApiToken } from './api-tokens.js';
import type { ControllerPools } from './city-proxy.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

/** A sender has this long for its request line and headers (node's own check, every second). */
export const HEADERS_TIMEOUT_MS = 5_000;
/** And this long, from its headers, for its body. */
export const BODY_TIMEOUT_MS = 5_000;
/** The largest body a delivery may have (what the controller takes). */
const MAX_BODY = 1024 * 1024;
/** How long the controller has to answer a delivery. */
const ANSWER_TIMEOUT_MS = 30_000;
/** Connections open at once: each costs a socket and up to MAX_BODY of memory. */
const MAX_CONNECTIONS = 256;
/** The sender's headers that are ours to set: never taken from it. */
const OURS = new Set([
  ACTOR_HEADER,
  WEBHOOK_PEER_HEADER,
  'x-ctl-request',
  REQUEST_ID_HEADER.toLowerCase(),
  'cookie',
  'host',
  'content-length',
  'expect',
]);

export interface WebhookListenerOptions {
  registry: Registry;
  reconciler: Reconciler;
  pools: ControllerPools;
  logger: Logger;
}

/**
 * `[webhooks] listen`: inbound webhook deliveries on a listener of their own, so receiving them from the
 * internet never exposes the control plane (decisions.md, fourth round). It serves `POST /hooks/{city}/{name}`
 * and nothing else (a 404 problem): the body read whole within BODY_TIMEOUT_MS of headers that came within
 * HEADERS_TIMEOUT_MS (a sender trickling bytes is cut off with a 408), at most 1 MiB (413), then forwarded to
 * the city's controller as `POST /v0/city/{city}/hook/{name}` — the connection's address in
 * `X-CTL-Webhook-Peer` (for `allowed_cidrs`), the sender's own `Authorization` unless it is shaped as our API
 * token, none of our headers or cookies. The controller checks the signature (or bearer) and answers; its answer
 * comes back as it is, but for `Location`, a control-plane address.
 */
export function createWebhookListener(o: WebhookListenerOptions): Server {
  const server = createServer(
    {
      requireHostHeader: false,
      headersTimeout: HEADERS_TIMEOUT_MS,
      // node's own backstop for the whole request; the body's own bound (below) comes first.
      requestTimeout: HEADERS_TIMEOUT_MS + BODY_TIMEOUT_MS + 2_000,
      connectionsCheckingInterval: 1_000,
      keepAliveTimeout: 5_000,
    },
    (req, res) => {
      const id = newResponseId();
      deliver(o, req, res, id).catch((err: unknown) => {
        const problem =
          err instanceof Problem ? err : new Problem('bad-gateway', 'bad_gateway: the delivery could not be passed on');
        if (!(err instanceof Problem)) o.logger.error({ err, requestId: id }, 'webhook delivery failed');
        if (problem.status === 408 || problem.status === 413) res.setHeader('Connection', 'close');
        answerProblem(req, res, problem, id);
        if (problem.status === 408 || problem.status === 413) res.once('finish', () => req.socket.destroy());
      });
    },
  );
  server.maxConnections = MAX_CONNECTIONS;
  answerClientErrors(server, o.logger);
  return server;
}

async function deliver(o: WebhookListenerOptions, req: IncomingMessage, res: ServerResponse, id: string) {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const match = LISTENER_HOOK_PATH.exec(q < 0 ? url : url.slice(0, q));
  if (req.method !== 'POST' || !match) {
    throw new Problem(
      'route-not-found',
      `not_found: this listener serves webhook deliveries only (POST /hooks/{city}/{name}), not ${req.method} ${url.slice(0, 200)}`,
    );
  }
  const city = decodeSegment(match[1]!);
  const name = decodeSegment(match[2]!);
  const body = await readBody(req);
  const registered = o.registry.cityNamed(city);
  const controller = registered ? o.reconciler.controllerFor(registered.path, city) : undefined;
  if (!controller) {
    const retryAfter = registered ? o.reconciler.restartingRetryAfter(registered.path) : undefined;
    if (retryAfter === undefined) throw cityNotRunning(city);
    throw new Problem('service-unavailable', `service_unavailable: city ${city} is restarting; try again`, {
      headers: { 'Retry-After': String(retryAfter) },
    });
  }
  const headers: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(key) && !OURS.has(key)) headers[key] = value;
  }
  // The sender's own bearer (a webhook's bearer_env token, a jwt-jwks JWT) travels on; one shaped as our API
  // token never does: a token is spent on the control plane only.
  if (typeof headers.authorization === 'string' && carriesApiToken(headers.authorization)) {
    delete headers.authorization;
  }
  headers.host = 'localhost';
  headers['x-ctl-request'] = 'webhook-listener';
  headers[ACTOR_HEADER] = 'webhook';
  headers[REQUEST_ID_HEADER.toLowerCase()] = id;
  if (req.socket.remoteAddress) headers[WEBHOOK_PEER_HEADER] = req.socket.remoteAddress;
  headers['content-length'] = String(body.length);
  let answer: Dispatcher.ResponseData;
  try {
    answer = await o.pools(controller).request({
      method: 'POST',
      path: controllerHookPath(city, name),
      headers,
      body,
      headersTimeout: ANSWER_TIMEOUT_MS,
      bodyTimeout: ANSWER_TIMEOUT_MS,
    });
  } catch (err) {
    o.logger.warn({ err, requestId: id, city }, 'webhook delivery: the controller did not answer');
    throw new Problem('bad-gateway', `bad_gateway: the controller of ${city} did not answer`);
  }
  const text = Buffer.from(await answer.body.arrayBuffer());
  for (const [key, value] of Object.entries(answer.headers)) {
    if (value === undefined || HOP_BY_HOP.has(key) || key === 'location' || key === 'content-length') continue;
    res.setHeader(key, value);
  }
  res.setHeader(REQUEST_ID_HEADER, id);
  res.setHeader('Content-Length', text.length);
  res.writeHead(answer.statusCode);
  res.end(text);
}

/** The whole body, at most MAX_BODY, within BODY_TIMEOUT_MS: a sender that trickles it is cut off (408). */
function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > MAX_BODY) {
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: Problem) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      if (err) {
        req.pause();
        reject(err);
      } else resolve(Buffer.concat(chunks));
    };
    const timer = setTimeout(
      () => done(new Problem('request-timeout', `timeout: the body did not arrive within ${BODY_TIMEOUT_MS / 1000}s`)),
      BODY_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) return done(tooLarge());
      chunks.push(chunk);
    };
    const onEnd = () => done();
    const onError = () => done(new Problem('invalid-request', 'invalid: the connection broke off mid-body'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function tooLarge(): Problem {
  return new Problem('payload-too-large', `too_large: a delivery's body is at most ${MAX_BODY / 1024 / 1024} MiB`);
}
