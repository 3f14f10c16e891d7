import type { Middleware } from 'koa';
import { notRunning, parseCityPath } from '../../shared/http/city-path.js';

/** A controller serves one city: per-city paths naming any other city answer the not-running 404. */
export function cityScope(name: string): Middleware {
  return async (ctx, next) => {
    const path = parseCityPath(ctx.path);
    if (path && path.name !== name) throw notRunning(path);
    await next();
  };
}
