import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Middleware } from 'koa';
import type { Dispatcher } from 'undici';
import type { CityServiceConfig } from '../../shared/config/city-config.js';
import { forwardRequest } from '../../shared/http/upstream.js';
import type { UpstreamPools } from '../../shared/http/upstream-pools.js';
import { decodeSegment, hasDotSegment } from '../../shared/http/path-segment.js';
import { Problem } from '../../shared/http/problem.js';
import { refuseWithProblem, tunnelUpgrade } from '../../shared/http/upgrade-tunnel.js';
import type { CityRuntime } from '../city-runtime.js';
import type { ServiceTarget } from '../services/service-runner.js';

/**
 * The connections to the city's services: a keep-alive pool per service and address, shared by the `svc/*`
 * fast path and the Koa path. Not bounded: a service's streams must not hold up its other requests. undici is
 * loaded with the first pool: most cities have no service, and it is ~1 MB of code every controller would
 * otherwise compile before it reports ready.
 */
export class ServiceConnections {
  private pools: Promise<UpstreamPools> | undefined;

  async pool(service: CityServiceConfig, target: ServiceTarget): Promise<Dispatcher> {
    const key = `${service.name}@${'socketPath' in target ? target.socketPath : `${target.host}:${target.port}`}`;
    this.pools ??= import('../../shared/http/upstream-pools.js').then(({ UpstreamPools }) => new UpstreamPools(null));
    return (await this.pools).get(key, target);
  }
}

/** The path to ask the service for: its base path, the rest of ours, and the query. */
export function servicePath(target: ServiceTarget, tail: string, query: string): string {
  return `${'basePath' in target ? target.basePath : ''}${tail || '/'}${query}`;
}

/**
 * The raw workspace-service proxy: `/v0/city/{cityName}/svc/<service>/<rest>` goes, untouched and streaming
 * both ways (SSE included), to the `[[service]]` of that name — a URL somebody else runs, or a program the
 * controller runs, on its port or Unix socket — as `<rest>`.
 */
export function serviceProxy(city: CityRuntime, connections: ServiceConnections): Middleware {
  const prefix = `/v0/city/${encodeURIComponent(city.name)}/svc`;
  return async (ctx, next) => {
    if (ctx.path !== prefix && !ctx.path.startsWith(`${prefix}/`)) {
      await next();
      return;
    }
    const { target, tail, service } = routeService(city, ctx.path.slice(prefix.length));
    await forwardRequest(ctx.req, ctx.res, await connections.pool(service, target), {
      path: servicePath(target, tail, ctx.querystring ? `?${ctx.querystring}` : ''),
      hostHeader: target.hostHeader,
      requestId: ctx.state.requestId as string,
      upstreamName: 'the service',
    });
    ctx.respond = false;
  };
}

/** The controller server's `upgrade` listener: a WebSocket to `svc/<name>/…` spliced through to the service. */
export function serviceUpgrade(city: CityRuntime): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const prefix = `/v0/city/${encodeURIComponent(city.name)}/svc`;
  return (req, socket, head) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q);
    try {
      if (path !== prefix && !path.startsWith(`${prefix}/`)) {
        throw new Problem('route-not-found', 'not_found: only workspace services (svc/<name>/…) take WebSockets');
      }
      const { target, tail } = routeService(city, path.slice(prefix.length));
      tunnelUpgrade(req, socket, head, {
        ...('socketPath' in target ? { socketPath: target.socketPath } : { host: target.host, port: target.port }),
        path: servicePath(target, tail, query),
        hostHeader: target.hostHeader,
      });
    } catch (err) {
      if (err instanceof Problem) refuseWithProblem(socket, err);
      else socket.destroy();
    }
  };
}

/** `/<service>/<rest>` to the service and what to ask it for; a Problem when it cannot be reached. */
export function routeService(
  city: CityRuntime,
  afterPrefix: string,
): { target: ServiceTarget; tail: string; service: CityServiceConfig } {
  // The service would resolve a dot segment against its own root, outside the path the city exposes; an
  // encoded slash would name a path the city's own routing never saw.
  if (hasDotSegment(afterPrefix))
    throw new Problem('invalid-request', 'invalid: a service path may not have . or .. segments');
  if (/%2f|%5c/i.test(afterPrefix))
    throw new Problem('invalid-request', 'invalid: a service path may not have encoded slashes');
  const rest = afterPrefix.slice(1);
  const slash = rest.indexOf('/');
  const serviceName = decodeSegment(slash < 0 ? rest : rest.slice(0, slash));
  const service = city.config.services.find((s) => s.name === serviceName);
  if (!service) throw new Problem('service-not-found', `not_found: service not found: ${serviceName || '(none)'}`);
  const target = city.services.target(service);
  if ('unavailable' in target)
    throw new Problem('service-unavailable', `service_unavailable: ${target.unavailable}`, {
      headers: { 'Retry-After': '1' },
    });
  return { target, tail: slash < 0 ? '' : rest.slice(slash), service };
}
