import { Agent } from 'node:http';
import type { Middleware } from 'koa';
import type { CityServiceConfig } from '../shared/config/city-config.js';
import { forward } from '../shared/http/forward.js';
import { decodeSegment, hasDotSegment } from '../shared/http/path-segment.js';
import { Problem } from '../shared/http/problem.js';

/**
 * The raw workspace-service proxy: `/v0/city/{cityName}/svc/<service>/<rest>` goes, untouched and streaming,
 * to the `[[service]]` of that name in `city.toml` (as the controller last read it), as `<url>/<rest>`.
 */
export function serviceProxy(cityName: string, services: () => CityServiceConfig[]): Middleware {
  const prefix = `/v0/city/${encodeURIComponent(cityName)}/svc`;
  const agents = new Map<string, Agent>();
  return async (ctx, next) => {
    if (ctx.path !== prefix && !ctx.path.startsWith(`${prefix}/`)) {
      await next();
      return;
    }
    // The service would resolve a dot segment against its own root, outside the path the city exposes.
    if (hasDotSegment(ctx.path.slice(prefix.length))) {
      throw new Problem('invalid-request', 'invalid: a service path may not have . or .. segments');
    }
    const rest = ctx.path.slice(prefix.length + 1);
    const slash = rest.indexOf('/');
    const serviceName = decodeSegment(slash < 0 ? rest : rest.slice(0, slash));
    const service = services().find((s) => s.name === serviceName);
    if (!service) {
      throw new Problem('service-not-found', `not_found: service not found: ${serviceName || '(none)'}`);
    }
    const upstream = new URL(service.url);
    const tail = slash < 0 ? '' : rest.slice(slash);
    const base = upstream.pathname === '/' ? '' : upstream.pathname;
    await forward(ctx, {
      host: upstream.hostname,
      port: Number(upstream.port || 80),
      path: `${base}${tail || '/'}${ctx.querystring ? `?${ctx.querystring}` : ''}`,
      agent: agents.get(service.name) ?? agents.set(service.name, new Agent({ keepAlive: true })).get(service.name),
      hostHeader: upstream.host,
    });
  };
}
