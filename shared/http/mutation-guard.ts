import type { Middleware } from 'koa';
import { Problem } from './problem.js';

export const MUTATION_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Mutations need a non-empty `X-CTL-Request` header (a browser cannot send it cross-origin without a CORS
 * preflight we refuse), and are refused outright when the server is read-only.
 */
export function mutationGuard(options: { readOnly: boolean }): Middleware {
  return async (ctx, next) => {
    if (MUTATION_METHODS.has(ctx.method)) {
      if (ctx.get('X-CTL-Request').trim() === '') {
        throw new Problem('forbidden', 'csrf: X-CTL-Request header required on mutation endpoints');
      }
      if (options.readOnly) {
        throw new Problem('forbidden', 'read_only: mutations disabled: server bound to non-localhost address');
      }
    }
    await next();
  };
}
