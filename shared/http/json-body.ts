import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { Problem } from './problem.js';

export const BODY_LIMIT = '1mb';

/**
 * How deep a JSON body may nest, counting each object or array and the body itself (`{"a": {}}` is 2). 1 MiB of
 * JSON can nest hundreds of thousands of levels: node parses that, but validation and JSON.stringify recurse,
 * and overflowed the stack (a 500). No operation's schema comes near the limit.
 */
export const MAX_JSON_DEPTH = 64;

/** The methods whose bodies the routes read. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Parses JSON request bodies up to 1 MiB and MAX_JSON_DEPTH levels (a 422 naming `body` past it, before
 * validation); any other content type with a body is a 415. koa-body is loaded on the first request with a
 * body: it pulls in zod and formidable (~140 ms and ~24 MB), which would otherwise slow down the start of
 * every controller, body or not.
 */
export function jsonBody(options: { rawText?: RegExp[] } = {}): Middleware {
  let parser: Promise<Middleware> | undefined;
  const load = async (): Promise<Middleware> => {
    const { koaBody } = await import('koa-body');
    type HttpMethod = NonNullable<Parameters<typeof koaBody>[0]>['parsedMethods'] extends (infer M)[] | undefined
      ? M
      : never;
    return koaBody({
      json: true,
      // koa-body reads POST, PUT and PATCH bodies only; some DELETEs carry one (DELETE /extmsg/adapters).
      parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'] as HttpMethod[],
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
    // A few operations take a document as it is (a formula's TOML): its text is the body, as a string.
    if (options.rawText?.some((path) => path.test(ctx.path)) && ctx.is(...RAW_TEXT_TYPES)) {
      ctx.request.body = await readText(ctx.req);
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
    await parse(ctx, async () => {
      if (nestsDeeperThan(ctx.request.body, MAX_JSON_DEPTH)) {
        const message = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
        throw new Problem('validation-failed', `invalid: body: ${message}`, {
          errors: [{ location: 'body', message }],
        });
      }
      await next();
    });
  };
}

/** Whether `value` nests objects or arrays deeper than `limit`; a loop, as recursion could overflow itself. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const current = values.pop();
    const depth = depths.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof child === 'object' && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** The media types a raw-text operation takes. */
export const RAW_TEXT_TYPES = ['application/octet-stream', 'text/plain', 'application/toml'];

async function readText(req: IncomingMessage): Promise<string> {
  const { default: getRawBody } = await import('raw-body');
  try {
    return await getRawBody(req, { limit: BODY_LIMIT, encoding: 'utf8' });
  } catch (err) {
    if ((err as { status?: number }).status === 413) {
      throw new Problem('payload-too-large', 'too_large: request body exceeds the 1 MiB limit');
    }
    throw new Problem('invalid-request', `invalid: request body could not be read: ${(err as Error).message}`);
  }
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
