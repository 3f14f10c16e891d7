import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { notRunning, parseCityPath } from '../shared/http/city-path.js';
import { hostCheck } from '../shared/http/host-guard.js';
import { Problem } from '../shared/http/problem.js';
import { refuseWithProblem, tunnelUpgrade } from '../shared/http/upgrade-tunnel.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

/**
 * The supervisor server's `upgrade` listener: a WebSocket to a running city's workspace service
 * (`/v0/city/{cityName}/svc/<name>/…`) is spliced through to its controller, which splices it on to the
 * service. The Host check is the one every request passes; anything else that asks for an upgrade is refused
 * with a problem.
 */
export function upgradeProxy(o: {
  registry: Registry;
  reconciler: Reconciler;
  allowedHosts: string[];
  connectTimeoutMs: number;
  logger: Logger;
}): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const checkHost = hostCheck(o.allowedHosts);
  return (req, socket, head) => {
    try {
      // Throws the problem of a Host it refuses; an absolute-form target gives the path to serve.
      const url = checkHost(req) ?? req.url ?? '/';
      const q = url.indexOf('?');
      const path = parseCityPath(q < 0 ? url : url.slice(0, q));
      if (!path?.serviceProxy) {
        throw new Problem(
          'route-not-found',
          'not_found: only workspace services (/v0/city/{cityName}/svc/…) take WebSockets',
        );
      }
      const city = o.registry.cityNamed(path.name);
      const controller = city ? o.reconciler.controllerFor(city.path, path.name) : undefined;
      if (!controller) throw notRunning(path);
      tunnelUpgrade(req, socket, head, {
        ...controller.endpoint,
        path: url,
        hostHeader: 'localhost',
        connectTimeoutMs: o.connectTimeoutMs,
        // The access gate's word on who this is, never the client's; our credentials stay here.
        parsedHeaders: ['x-ctl-actor', 'authorization', 'cookie'],
      });
    } catch (err) {
      if (err instanceof Problem) refuseWithProblem(socket, err);
      else {
        o.logger.warn({ err }, 'upgrade refused');
        socket.destroy();
      }
    }
  };
}
