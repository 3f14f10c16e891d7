import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { Problem } from '../../shared/http/problem.js';
import { answerProblem } from '../../shared/http/refusal.js';
import { newResponseId } from '../../shared/http/request-id.js';
import { forwardRequest } from '../../shared/http/upstream.js';
import type { CityRuntime } from '../city-runtime.js';
import { routeService, servicePath, type ServiceConnections } from './service-proxy.js';

/**
 * The `svc/*` proxy's fast path, before Koa: a GET or HEAD without a body or an Origin to a service that is up
 * goes to it over the service's connection pool, its answer streamed back as it comes (SSE included). Anything
 * else — a refusal, a mutation, a CORS request, a service that is down — returns false and takes the Koa path,
 * which answers it by the same rules. Services are often chatty (a dashboard polling, a WebSocket's page), and
 * Koa's context and middleware cost several times what the forwarding does.
 */
export function serviceFastPath(
  city: CityRuntime,
  connections: ServiceConnections,
  logger: Logger,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const prefix = `/v0/city/${encodeURIComponent(city.name)}/svc/`;
  return (req, res) => {
    const url = req.url;
    if (url === undefined || !url.startsWith(prefix)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const headers = req.headers;
    if (headers.origin !== undefined || headers['transfer-encoding'] !== undefined) return false;
    if (headers['content-length'] !== undefined && headers['content-length'] !== '0') return false;
    const q = url.indexOf('?');
    let routed;
    try {
      routed = routeService(city, (q < 0 ? url : url.slice(0, q)).slice(prefix.length - 1));
    } catch {
      return false; // refused: the long way says why
    }
    const { target, tail, service } = routed;
    const id = newResponseId();
    connections
      .pool(service, target)
      .then((pool) =>
        forwardRequest(req, res, pool, {
          path: servicePath(target, tail, q < 0 ? '' : url.slice(q)),
          hostHeader: target.hostHeader,
          requestId: id,
          upstreamName: 'the service',
        }),
      )
      .catch((err: unknown) => {
        if (!(err instanceof Problem)) throw err;
        answerProblem(req, res, err, id);
      })
      .catch((err: unknown) => logger.error({ err, requestId: id }, 'the svc fast path failed'));
    return true;
  };
}
