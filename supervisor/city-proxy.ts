import { Agent } from 'node:http';
import type { Middleware } from 'koa';
import { forward } from '../shared/http/forward.js';
import { notRunning, parseCityPath } from '../shared/http/city-path.js';
import type { ControllerEndpoint } from './controller-process.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

/** Per-city paths the supervisor answers itself: they change the registry or the controller's process. */
const SUPERVISOR_OWNED = new Set(['/stop', '/start', '/unregister']);

/**
 * Sends every other `/v0/city/{cityName}/…` request, typed route or raw `svc/*`, to that city's controller
 * over its Unix socket, once the city runs; until then, the spec's 404s.
 */
export function cityProxy(registry: Registry, reconciler: Reconciler): Middleware {
  const agents = new Map<string, Agent>();
  return async (ctx, next) => {
    const path = parseCityPath(ctx.path);
    if (!path || SUPERVISOR_OWNED.has(path.rest)) {
      await next();
      return;
    }
    const city = registry.cityNamed(path.name);
    const slot = city ? reconciler.slots.get(city.path) : undefined;
    if (!slot?.running || !slot.process || slot.name !== path.name) throw notRunning(path);
    // Where this controller listens: its socket, or the port a controller run by hand was given.
    const endpoint = slot.process.endpoint;
    const key = endpointKey(endpoint);
    let agent = agents.get(key);
    if (!agent) {
      // A new controller: the agents of controllers no longer running (stopped, restarted elsewhere,
      // unregistered) go, with any idle sockets they kept.
      const live = new Set<string>();
      for (const other of reconciler.slots.values()) {
        if (other.running && other.process) live.add(endpointKey(other.process.endpoint));
      }
      for (const [oldKey, oldAgent] of agents) {
        if (!live.has(oldKey)) {
          oldAgent.destroy();
          agents.delete(oldKey);
        }
      }
      agent = new Agent({ keepAlive: true, maxSockets: 256 });
      agents.set(key, agent);
    }
    await forward(ctx, { ...endpoint, path: ctx.url, agent, hostHeader: 'localhost' });
  };
}

function endpointKey(endpoint: ControllerEndpoint): string {
  return 'socketPath' in endpoint ? endpoint.socketPath : `${endpoint.host}:${endpoint.port}`;
}
