import type { Middleware } from 'koa';
import { Problem } from './problem.js';

/** The methods served without `X-CTL-Request`: every other one, WebDAV's and unknown ones too, may change state. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every method but GET, HEAD and OPTIONS needs a non-empty `X-CTL-Request` header, on every path, `svc/*`
 * included (a browser cannot send it cross-origin without a CORS preflight we refuse), and is refused outright
 * when the server is read-only.
 */
export function mutationGuard(options: { readOnly: boolean }): Middleware {
  return async (ctx, next) => {
    if (!SAFE_METHODS.has(ctx.method)) {
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
