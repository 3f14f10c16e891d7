import { Agent } from 'node:http';
import type { Middleware } from 'koa';
import { forward } from '../shared/http/forward.js';
import { Problem } from '../shared/http/problem.js';
import { notRunning, parseCityPath, type CityPath } from '../shared/http/city-path.js';
import type { ControllerEndpoint } from './controller-process.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

/** Per-city paths the supervisor answers itself: they change the registry or the controller's process. */
export const SUPERVISOR_OWNED = new Set(['/stop', '/start', '/unregister']);

/** Ordinary requests in flight to one controller at once; more wait for a free connection. */
const MAX_SOCKETS_PER_CONTROLLER = 256;

export interface CityProxyOptions {
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
  const pools = new Map<string, Agent>();

  const poolFor = (controller: Controller): Agent => {
    const key = controllerKey(controller);
    let pool = pools.get(key);
    if (!pool) {
      // A new controller (a restarted one listens where the old one did: its pool must not hand out the dead
      // one's connections): the pools of controllers no longer running go, with any idle sockets they kept.
      const live = new Set<string>();
      for (const city of registry.cities) {
        const running = reconciler.controllerFor(city.path, city.name);
        if (running) live.add(controllerKey(running));
      }
      for (const [oldKey, oldPool] of pools) {
        if (!live.has(oldKey)) {
          oldPool.destroy();
          pools.delete(oldKey);
        }
      }
      pool = new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_CONTROLLER });
      pools.set(key, pool);
    }
    return pool;
  };

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
    await forward(ctx, {
      ...controller.endpoint,
      path: ctx.url,
      // A fresh connection for a stream (closed with it); the controller's pool for everything else.
      agent: stream ? false : poolFor(controller),
      hostHeader: 'localhost',
      connectTimeout: {
        ms: options.connectTimeoutMs,
        detail: `service_unavailable: the controller of ${path.name} did not accept the request within ${options.connectTimeoutMs / 1000}s; try again`,
      },
    });
  };
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
