import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { parseCityPath } from '../shared/http/city-path.js';
import { hostCheck } from '../shared/http/host-guard.js';
import { mutationProblem } from '../shared/http/mutation-guard.js';
import { Problem } from '../shared/http/problem.js';
import { answerProblem } from '../shared/http/refusal.js';
import { newResponseId } from '../shared/http/request-id.js';
import { forwardRequest } from '../shared/http/upstream.js';
import {
  connectTimeoutDetail,
  isStream,
  SUPERVISOR_OWNED,
  type Controller,
  type ControllerPools,
} from './city-proxy.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

/** A body up to this size may take the fast path; larger or chunked ones go the long way (and meet its limits). */
const MAX_FAST_BODY = 1024 * 1024;

export interface FastProxyOptions {
  registry: Registry;
  reconciler: Reconciler;
  logger: Logger;
  /** The controllers' connection pools (shared with the Koa path). */
  pools: ControllerPools;
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
  const debug = o.logger.isLevelEnabled('debug');

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
    let name: string;
    try {
      if (checkHost(req) !== undefined) return false; // an absolute-form target: the long way rewrites it
      const path = parseCityPath(query < 0 ? url : url.slice(0, query));
      if (!path || SUPERVISOR_OWNED.has(path.rest) || isStream(method, path)) return false;
      name = path.name;
      const city = o.registry.cityNamed(name);
      controller = city ? o.reconciler.controllerFor(city.path, name) : undefined;
    } catch {
      return false; // refused: the long way says why
    }
    if (!controller) return false;
    const started = debug ? performance.now() : 0;
    const id = newResponseId();
    forwardRequest(req, res, o.pools(controller), {
      path: url,
      hostHeader: 'localhost',
      requestId: id,
      connectTimeout: { ms: o.connectTimeoutMs, detail: connectTimeoutDetail(name, o.connectTimeoutMs) },
    })
      .catch((err: unknown) => {
        if (!(err instanceof Problem)) throw err;
        answerProblem(req, res, err, id);
      })
      .catch((err: unknown) => o.logger.error({ err, requestId: id }, 'the fast path failed'))
      .finally(() => {
        if (!debug) return;
        o.logger.debug(
          { requestId: id, method, path: url, status: res.statusCode },
          `${method} ${url} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms (fast path)`,
        );
      });
    return true;
  };
}
