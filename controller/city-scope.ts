import { decodeSegment } from '../shared/http/path-segment.js';
import type { Middleware } from 'koa';
import { cityNotRunning, serviceProxyCityNotRunning } from '../shared/http/problem.js';

const CITY_PATH = /^\/v0\/city\/([^/]+)(\/.*)?$/;

/** A controller serves one city: per-city paths naming any other city answer the not-running 404. */
export function cityScope(name: string): Middleware {
  return async (ctx, next) => {
    const match = CITY_PATH.exec(ctx.path);
    if (match) {
      const requested = decodeSegment(match[1]);
      if (requested !== name) {
        const rest = match[2] ?? '';
        throw rest === '/svc' || rest.startsWith('/svc/') ? serviceProxyCityNotRunning() : cityNotRunning(requested);
      }
    }
    await next();
  };
}
