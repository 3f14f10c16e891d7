import type { Middleware } from 'koa';
import type { Dispatcher } from 'undici';
import { forwardRequest } from '../shared/http/upstream.js';
import { ownConnection, UpstreamPools } from '../shared/http/upstream-pools.js';
import { Problem } from '../shared/http/problem.js';
import { notRunning, parseCityPath, type CityPath } from '../shared/http/city-path.js';
import type { ControllerEndpoint } from './controller-process.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

/** Per-city paths the supervisor answers itself: they change the registry or the controller's process. */
export const SUPERVISOR_OWNED = new Set(['/stop', '/start', '/unregister']);

/** Ordinary requests in flight to one controller at once; more wait for a free connection. */
const MAX_CONNECTIONS_PER_CONTROLLER = 256;

/** The pool of connections to a running controller. */
export type ControllerPools = (controller: Controller) => Dispatcher;

/**
 * One keep-alive pool per running controller, shared by the proxy's fast path and its Koa path; the pools of
 * controllers no longer running close when a new controller's opens.
 */
export function controllerPools(registry: Registry, reconciler: Reconciler): ControllerPools {
  const pools = new UpstreamPools(MAX_CONNECTIONS_PER_CONTROLLER);
  const live = function* () {
    for (const city of registry.cities) {
      const running = reconciler.controllerFor(city.path, city.name);
      if (running) yield controllerKey(running);
    }
  };
  return (controller) => pools.get(controllerKey(controller), controller.endpoint, live);
}

export interface CityProxyOptions {
  /** The controllers' connection pools (shared with the fast path). */
  pools: ControllerPools;
  /** How long a request may wait for a connection to its controller before the 503. */
  connectTimeoutMs: number;
  /** How long a stream request for a city that is only restarting is held before the 503 (decisions.md). */
  streamHoldMs: number;
}

/** A stream (`…/events/stream`, a session's or an agent's stream): long-lived, so never in the shared pool. */
export function isStream(method: string, path: CityPath): boolean {
  return (method === 'GET' || method === 'HEAD') && path.rest.endsWith('/stream');
}

/**
 * Sends every other `/v0/city/{cityName}/…` request, typed route or raw `svc/*`, to that city's controller
 * over its Unix socket, once the city runs. A registered city that ran and is only coming back (crash back-off,
 * a restart, the supervisor's own start-up) answers 503 with `Retry-After` meanwhile (decisions.md, third
 * round); an unknown, stopped or never-yet-running city the spec's 404s.
 *
 * Ordinary requests share a keep-alive pool per controller; streams each get a connection of their own, so
 * any number of open streams never starves ordinary requests. A request that cannot get a connection in time
 * is a 503 problem, not a wait without end. A stream request for a city that is only restarting is held
 * until it runs (bounded), so a browser's EventSource reconnecting during a restart is not turned away for good.
 */
export function cityProxy(registry: Registry, reconciler: Reconciler, options: CityProxyOptions): Middleware {
  return async (ctx, next) => {
    const path = parseCityPath(ctx.path);
    if (!path || SUPERVISOR_OWNED.has(path.rest)) {
      await next();
      return;
    }
    const stream = isStream(ctx.method, path);
    const controllerNow = () => {
      const city = registry.cityNamed(path.name);
      return city ? reconciler.controllerFor(city.path, path.name) : undefined;
    };
    let controller = controllerNow();
    if (!controller && stream) {
      const city = registry.cityNamed(path.name);
      if (city && reconciler.isComingBack(city.path)) {
        await reconciler.waitFor(() => controllerNow() !== undefined || ctx.req.socket.destroyed, options.streamHoldMs);
        controller = controllerNow();
      }
    }
    if (!controller) {
      const city = registry.cityNamed(path.name);
      const retryAfter = city ? reconciler.restartingRetryAfter(city.path) : undefined;
      if (retryAfter !== undefined) throw cityRestarting(path.name, retryAfter);
      throw notRunning(path);
    }
    // A connection of its own for a stream (closed with it); the controller's pool for everything else.
    const own = stream ? ownConnection(controller.endpoint) : undefined;
    try {
      await forwardRequest(ctx.req, ctx.res, own ?? options.pools(controller), {
        path: ctx.url,
        hostHeader: 'localhost',
        requestId: ctx.state.requestId as string,
        connectTimeout: {
          ms: options.connectTimeoutMs,
          detail: connectTimeoutDetail(path.name, options.connectTimeoutMs),
        },
      });
      ctx.respond = false;
    } finally {
      // Closing only ends the connection: it has nobody to report to.
      if (own) void own.destroy();
    }
  };
}

/** The 503's detail when a request got no connection to its city's controller in time. */
export function connectTimeoutDetail(name: string, ms: number): string {
  return `service_unavailable: the controller of ${name} did not accept the request within ${ms / 1000}s; try again`;
}

export interface Controller {
  pid: number;
  endpoint: ControllerEndpoint;
}

function controllerKey({ pid, endpoint }: Controller): string {
  return `${pid}@${'socketPath' in endpoint ? endpoint.socketPath : `${endpoint.host}:${endpoint.port}`}`;
}

/** The 503 of a city that is only restarting: try again after `seconds`. */
function cityRestarting(name: string, seconds: number): Problem {
  return new Problem(
    'service-unavailable',
    `service_unavailable: city ${name} is restarting; try again in ${seconds}s`,
    { headers: { 'Retry-After': String(seconds) } },
  );
}
