import type { Middleware } from 'koa';

const LOCAL_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

/** CORS for pages served from localhost (and `allowedOrigins`) only; any other origin gets no CORS headers. */
export function cors(allowedOrigins: string[]): Middleware {
  const allowed = new Set(allowedOrigins);
  return async (ctx, next) => {
    ctx.vary('Origin');
    const origin = ctx.get('Origin');
    const permitted = origin !== '' && (LOCAL_ORIGIN.test(origin) || allowed.has(origin));
    if (permitted) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Expose-Headers', 'X-CTL-Index, X-CTL-Request-Id, Retry-After');
    }
    if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
      if (permitted) {
        ctx.set('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE, OPTIONS');
        ctx.set('Access-Control-Allow-Headers', 'Content-Type, Last-Event-ID, X-CTL-Request, Idempotency-Key');
        ctx.set('Access-Control-Max-Age', '600');
      }
      ctx.status = 204;
      return;
    }
    await next();
  };
}
