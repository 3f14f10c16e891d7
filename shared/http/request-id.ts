import { randomBytes } from 'node:crypto';
import type { Middleware } from 'koa';

export const REQUEST_ID_HEADER = 'X-CTL-Request-Id';
const UPSTREAM_ID = /^[0-9a-f]{16}$/;

/** Ids drawn from one read of the random source: a read per id was ~18 % of the proxy's CPU per request. */
const IDS_PER_READ = 512;
let randomPool = Buffer.alloc(0);
let poolOffset = 0;

/** 8 random bytes as 16 lowercase hex characters (not the `req-…` id of asynchronous operations). */
export function newResponseId(): string {
  if (poolOffset >= randomPool.length) {
    randomPool = randomBytes(8 * IDS_PER_READ);
    poolOffset = 0;
  }
  const id = randomPool.toString('hex', poolOffset, poolOffset + 8);
  poolOffset += 8;
  return id;
}

/**
 * Stamps `X-CTL-Request-Id` on every response, first thing, so success, error, unknown route and stream
 * responses all carry it. With `trustUpstream` (the controller behind the supervisor's proxy) an id the
 * supervisor already assigned is kept, so one request has one id in both processes' logs.
 */
export function requestId(options: { trustUpstream: boolean }): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get(REQUEST_ID_HEADER);
    const id = options.trustUpstream && UPSTREAM_ID.test(incoming) ? incoming : newResponseId();
    ctx.state.requestId = id;
    ctx.set(REQUEST_ID_HEADER, id);
    await next();
  };
}
