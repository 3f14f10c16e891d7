import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { Pool, type Dispatcher } from 'undici';
import { parseCityPath } from '../shared/http/city-path.js';
import { hostCheck } from '../shared/http/host-guard.js';
import { mutationProblem } from '../shared/http/mutation-guard.js';
import { Problem } from '../shared/http/problem.js';
import { newResponseId, REQUEST_ID_HEADER } from '../shared/http/request-id.js';
import { isStream, SUPERVISOR_OWNED, type Controller } from './city-proxy.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';
import { HOP_BY_HOP } from '../shared/http/hop-by-hop.js';

/** A body up to this size may take the fast path; larger or chunked ones go the long way (and meet its limits). */
const MAX_FAST_BODY = 1024 * 1024;

export interface FastProxyOptions {
  registry: Registry;
  reconciler: Reconciler;
  logger: Logger;
  allowedHosts: string[];
  readOnly: boolean;
  /** How long a request may wait for a connection to its controller before the 503. */
  connectTimeoutMs: number;
}

/**
 * The per-city proxy's fast path, before Koa: a request to a running city's typed routes or `svc/*` that the
 * conventions let through as it is — an accepted Host, the CSRF header on a mutation, no CORS origin, a body of
 * known length up to 1 MiB, not a stream — goes to its controller over undici's connection pool, its answer back
 * as it comes, with a request id of ours. Anything else (and anything the conventions refuse) returns false and
 * takes the Koa path, which answers it, problems included, by the very same rules: the checks are the ones the
 * Koa middlewares run. Proxying is most of what the supervisor serves, and Koa's context, middleware chain and
 * node:http's client cost several times what the controller spends on the request itself.
 */
export function fastProxy(o: FastProxyOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const checkHost = hostCheck(o.allowedHosts);
  const pools = new Map<string, Pool>();
  const debug = o.logger.isLevelEnabled('debug');

  const poolFor = (controller: Controller): Pool => {
    const key = `${controller.pid}`;
    let pool = pools.get(key);
    if (pool) return pool;
    // A new controller: the pools of controllers no longer running go, with their idle connections.
    const live = new Set<string>();
    for (const city of o.registry.cities) {
      const running = o.reconciler.controllerFor(city.path, city.name);
      if (running) live.add(`${running.pid}`);
    }
    for (const [old, oldPool] of pools) {
      if (!live.has(old)) {
        void oldPool.destroy();
        pools.delete(old);
      }
    }
    const endpoint = controller.endpoint;
    pool =
      'socketPath' in endpoint
        ? new Pool('http://localhost', { socketPath: endpoint.socketPath, connections: 256, pipelining: 1 })
        : new Pool(`http://${endpoint.host}:${endpoint.port}`, { connections: 256, pipelining: 1 });
    pools.set(key, pool);
    return pool;
  };

  return (req, res) => {
    const url = req.url;
    if (url === undefined || !url.startsWith('/v0/city/')) return false;
    const headers = req.headers;
    // A browser's request (Origin, Referer, Sec-Fetch-*) goes the long way: CORS and the cross-origin check.
    if (headers.origin !== undefined || headers.referer !== undefined || headers['sec-fetch-site'] !== undefined) {
      return false;
    }
    if (headers['transfer-encoding'] !== undefined) return false;
    const length = headers['content-length'];
    if (length !== undefined && !(Number(length) <= MAX_FAST_BODY)) return false;
    const method = req.method ?? 'GET';
    if (mutationProblem(method, headers['x-ctl-request'] as string | undefined, o.readOnly)) return false;
    const query = url.indexOf('?');
    let controller: Controller | undefined;
    try {
      if (checkHost(req) !== undefined) return false; // an absolute-form target: the long way rewrites it
      const path = parseCityPath(query < 0 ? url : url.slice(0, query));
      if (!path || SUPERVISOR_OWNED.has(path.rest) || isStream(method, path)) return false;
      const city = o.registry.cityNamed(path.name);
      controller = city ? o.reconciler.controllerFor(city.path, path.name) : undefined;
    } catch {
      return false; // refused: the long way says why
    }
    if (!controller) return false;
    forward(req, res, poolFor(controller), o, debug);
    return true;
  };
}

function forward(req: IncomingMessage, res: ServerResponse, pool: Pool, o: FastProxyOptions, debug: boolean): void {
  const started = debug ? performance.now() : 0;
  const id = newResponseId();
  const method = req.method ?? 'GET';
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  }
  headers.host = 'localhost';
  headers[REQUEST_ID_HEADER.toLowerCase()] = id;
  const hasBody = req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0';
  // A request still queued for one of the pool's connections cannot be aborted until it starts: one given up on
  // (the connect time-out, the client gone) is answered now and aborted the moment it starts.
  let connected = false;
  let abandoned = false;
  let dispatch: Dispatcher.DispatchController | undefined;
  const giveUp = (reason: Error) => {
    if (connected) dispatch?.abort(reason);
    else abandoned = true;
  };
  const timer = setTimeout(() => {
    if (connected) return;
    giveUp(new Error('connect time-out'));
    answerProblem(req, res, id, new Problem('service-unavailable', connectTimeoutDetail(req, o)));
    done();
  }, o.connectTimeoutMs);
  const clientGone = () => {
    if (!res.writableFinished) giveUp(new Error('the client went away'));
  };
  res.once('close', clientGone);
  let finished = false;
  const done = () => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    res.off('close', clientGone);
    if (debug) {
      o.logger.debug(
        { requestId: id, method, path: req.url, status: res.statusCode },
        `${method} ${req.url} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms (fast path)`,
      );
    }
  };
  pool.dispatch(
    { path: req.url!, method, headers: headers as Record<string, string>, body: hasBody ? req : null },
    {
      onRequestStart(controller) {
        dispatch = controller;
        connected = true;
        clearTimeout(timer);
        if (abandoned) controller.abort(new Error('abandoned while queued'));
      },
      onResponseStart(controller, statusCode, upstream) {
        for (const [name, value] of Object.entries(upstream)) {
          if (value !== undefined && !HOP_BY_HOP.has(name) && name !== 'x-ctl-request-id') res.setHeader(name, value);
        }
        res.setHeader(REQUEST_ID_HEADER, id);
        res.writeHead(statusCode);
        // A stream shows its headers at once; a sized body goes out with them.
        if (upstream['content-length'] === undefined) res.flushHeaders();
      },
      onResponseData(controller, chunk) {
        if (!res.write(chunk)) {
          controller.pause();
          res.once('drain', () => controller.resume());
        }
      },
      onResponseEnd() {
        res.end();
        done();
      },
      onResponseError(_controller, err) {
        if (abandoned) return; // answered already
        done();
        if (res.headersSent) {
          res.destroy();
          return;
        }
        const code = (err as NodeJS.ErrnoException).code ?? err.message;
        answerProblem(req, res, id, new Problem('bad-gateway', `bad_gateway: upstream did not answer: ${code}`));
      },
    },
  );
}

/** A problem answer written straight to the response (the fast path has no Koa to render one). */
function answerProblem(req: IncomingMessage, res: ServerResponse, id: string, problem: Problem): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(problem.toBody(req.url?.split('?')[0]));
  res.writeHead(problem.status, {
    'Content-Type': 'application/problem+json',
    'Content-Length': Buffer.byteLength(body),
    [REQUEST_ID_HEADER]: id,
    Vary: 'Origin',
  });
  res.end(body);
}

function connectTimeoutDetail(req: IncomingMessage, o: FastProxyOptions): string {
  const name = parseCityPath((req.url ?? '').split('?')[0])?.name ?? 'the city';
  return `service_unavailable: the controller of ${name} did not accept the request within ${o.connectTimeoutMs / 1000}s; try again`;
}
