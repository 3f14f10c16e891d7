import type { Middleware } from 'koa';
import { Problem } from './problem.js';

/** The methods served without `X-CTL-Request`: every other one, WebDAV's and unknown ones too, may change state. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every method but GET, HEAD and OPTIONS needs a non-empty `X-CTL-Request` header, on every path, `svc/*`
 * included (a browser cannot send it cross-origin without a CORS preflight we refuse), and is refused outright
 * when the server is read-only. There is no exception (decisions.md, fourth round): webhook deliveries, which
 * carry no marker, are served on a listener of their own (supervisor/webhook-listener.ts).
 */
export function mutationGuard(options: { readOnly: boolean }): Middleware {
  return async (ctx, next) => {
    const problem = mutationProblem(ctx.method, ctx.get('X-CTL-Request'), options.readOnly);
    if (problem) throw problem;
    await next();
  };
}

/** Why a request with this method and `X-CTL-Request` value may not proceed, or undefined when it may. */
export function mutationProblem(method: string, marker: string | undefined, readOnly: boolean): Problem | undefined {
  if (SAFE_METHODS.has(method)) return undefined;
  if ((marker ?? '').trim() === '') {
    return new Problem('forbidden', 'csrf: X-CTL-Request header required on mutation endpoints');
  }
  if (readOnly) return new Problem('forbidden', 'read_only: mutations disabled: server bound to non-localhost address');
  return undefined;
}
