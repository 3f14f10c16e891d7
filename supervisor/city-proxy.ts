import { decodeSegment } from '../shared/http/path-segment.js';
import { Agent } from 'node:http';
import type { Middleware } from 'koa';
import { forward } from '../shared/http/forward.js';
import { cityNotRunning, serviceProxyCityNotRunning } from '../shared/http/problem.js';
import { cityPaths } from '../shared/paths.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

const CITY_PATH = /^\/v0\/city\/([^/]+)(\/.*)?$/;

/** Per-city paths the supervisor answers itself: they change the registry or the controller's process. */
const SUPERVISOR_OWNED = new Set(['/stop', '/start', '/unregister']);

/**
 * Sends every other `/v0/city/{cityName}/…` request, typed route or raw `svc/*`, to that city's controller
 * over its Unix socket, once the city runs; until then, the spec's 404s.
 */
export function cityProxy(registry: Registry, reconciler: Reconciler): Middleware {
  const agents = new Map<string, Agent>();
  return async (ctx, next) => {
    const match = CITY_PATH.exec(ctx.path);
    if (!match) {
      await next();
      return;
    }
    const rest = match[2] ?? '';
    if (SUPERVISOR_OWNED.has(rest)) {
      await next();
      return;
    }
    const name = decodeSegment(match[1]);
    const city = registry.cityNamed(name);
    const slot = city ? reconciler.slots.get(city.path) : undefined;
    if (!city || !slot?.running || slot.name !== name) {
      throw rest === '/svc' || rest.startsWith('/svc/') ? serviceProxyCityNotRunning() : cityNotRunning(name);
    }
    const socket = cityPaths(city.path).socket;
    let agent = agents.get(socket);
    if (!agent) {
      agent = new Agent({ keepAlive: true, maxSockets: 256 });
      agents.set(socket, agent);
    }
    await forward(ctx, { socketPath: socket, path: ctx.url, agent, hostHeader: 'localhost' });
  };
}
