import type { Middleware } from 'koa';
import { Problem } from './problem.js';

export const BODY_LIMIT = '1mb';

/** The methods whose bodies the routes read. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Parses JSON request bodies up to 1 MiB; any other content type with a body is a 415. koa-body is loaded
 * on the first request with a body: it pulls in zod and formidable (~140 ms and ~24 MB), which would
 * otherwise slow down the start of every controller, body or not.
 */
export function jsonBody(): Middleware {
  let parser: Promise<Middleware> | undefined;
  const load = async (): Promise<Middleware> => {
    const { koaBody } = await import('koa-body');
    return koaBody({
      json: true,
      urlencoded: false,
      text: false,
      multipart: false,
      jsonLimit: BODY_LIMIT,
      jsonStrict: true,
      onError: (err) => {
        const status = (err as { status?: number }).status;
        if (status === 413) throw new Problem('payload-too-large', 'too_large: request body exceeds the 1 MiB limit');
        throw new Problem('invalid-request', `invalid: request body is not valid JSON: ${err.message}`);
      },
    });
  };
  return async (ctx, next) => {
    if (!BODY_METHODS.has(ctx.method) || !hasBody(ctx.req.headers)) {
      await next();
      return;
    }
    if (!ctx.is('application/json', '+json')) {
      throw new Problem(
        'unsupported-media-type',
        `unsupported_media_type: request body must be application/json, got ${ctx.get('Content-Type') || 'none'}`,
      );
    }
    parser ??= load();
    const parse = await parser;
    await parse(ctx, next);
  };
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
