import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { Problem } from './problem.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses a mutation a browser sent on behalf of another site: an `Origin` other than the API's own (scheme, host
 * and port, as the Host header names it) or one of `allowedOrigins`, `Origin: null` (a sandboxed page, a file, a
 * redirect), `Sec-Fetch-Site: cross-site`, or — without an `Origin` — a `Referer` from another origin. The CSRF
 * header alone leaves only a browser's preflight in the way; this does not depend on it. A request without these
 * headers (curl, `ctl`, any script) is not a browser's and passes, as does the API's own page.
 *
 * A request that arrived over a Unix socket is not checked: no browser reaches one, and the supervisor in front of
 * a controller has checked it against the Host the browser used (the controller sees `Host: localhost`).
 */
export function originGuard(allowedOrigins: string[]): Middleware {
  const check = originCheck(allowedOrigins);
  return async (ctx, next) => {
    const problem = check(ctx.req);
    if (problem) throw problem;
    await next();
  };
}

/** The origin rules as a function of a request: the 403 problem of one they refuse, else undefined. */
export function originCheck(allowedOrigins: string[]): (req: IncomingMessage) => Problem | undefined {
  const allowed = new Set(allowedOrigins.map((o) => o.toLowerCase()));
  return (req) => {
    if (SAFE_METHODS.has(req.method ?? 'GET')) return undefined;
    if (req.socket.remoteAddress === undefined) return undefined;
    const why = foreignOrigin(req.headers, allowed);
    return why === undefined ? undefined : new Problem('forbidden', `cross_origin: ${why}`);
  };
}

/** Why these headers name a foreign origin, or undefined when they name ours (or none). */
export function foreignOrigin(headers: IncomingHttpHeaders, allowed: Set<string>): string | undefined {
  const own = `http://${(headers.host ?? '').toLowerCase()}`;
  const ours = (origin: string) => {
    const normal = normalOrigin(origin);
    return normal !== undefined && (normal === normalOrigin(own) || allowed.has(normal));
  };
  const origin = headers.origin;
  if (origin !== undefined) {
    if (origin.trim().toLowerCase() === 'null') return 'a mutation from an opaque origin (Origin: null) is refused';
    if (!ours(origin)) return `a mutation from origin ${JSON.stringify(origin)} is refused (not ${own})`;
  }
  const site = headers['sec-fetch-site'];
  if (typeof site === 'string' && site.trim().toLowerCase() === 'cross-site') {
    return 'a mutation a browser marked Sec-Fetch-Site: cross-site is refused';
  }
  const referer = headers.referer;
  if (origin === undefined && referer !== undefined && referer !== '' && !ours(referer)) {
    return `a mutation from a page of another origin (Referer ${JSON.stringify(referer)}) is refused`;
  }
  return undefined;
}

/** `scheme://host[:port]` of a URL, lowercased, the scheme's default port left out; undefined when not a URL. */
function normalOrigin(value: string): string | undefined {
  try {
    const url = new URL(value.trim());
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    return `${url.protocol}//${url.host}`.toLowerCase();
  } catch {
    return undefined;
  }
}
