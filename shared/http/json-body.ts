import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { parseJsonText } from './json-text.js';
import { Problem } from './problem.js';

declare module 'koa' {
  interface Request {
    /** The request's body as jsonBody read it: JSON's value, or a raw-text operation's text. */
    body?: unknown;
    /** A raw-bytes operation's body (a webhook delivery: its signature covers these very bytes). */
    rawBody?: Buffer;
  }
}

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
 * validation); any other content type with a body is a 415. The body is read by raw-body and parsed here
 * (./json-text.ts), not by koa-body: koa-body pulls in zod and formidable for the forms and files we refuse
 * anyway, and loading them made the first request with a body to each process ~140 ms slower and its
 * memory ~24 MB larger.
 */
export function jsonBody(options: { rawText?: RegExp[]; rawBytes?: RegExp[] } = {}): Middleware {
  return async (ctx, next) => {
    if (!BODY_METHODS.has(ctx.method) || !hasBody(ctx.req.headers)) {
      await next();
      return;
    }
    // A few take their body as bytes, whatever its type (a webhook's sender chooses it; its signature covers it).
    if (options.rawBytes?.some((path) => path.test(ctx.path))) {
      ctx.request.rawBody = await readBytes(ctx.req);
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
    const body = parseJsonText(await readBody(ctx.req));
    if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
      const message = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
      throw new Problem('validation-failed', `invalid: body: ${message}`, {
        errors: [{ location: 'body', message }],
      });
    }
    ctx.request.body = body;
    await next();
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
  return utf8(await readBytes(req));
}

async function readBytes(req: IncomingMessage): Promise<Buffer> {
  try {
    return await getRawBody(req, { limit: BODY_LIMIT });
  } catch (err) {
    if ((err as { status?: number }).status === 413) {
      throw new Problem('payload-too-large', 'too_large: request body exceeds the 1 MiB limit');
    }
    throw new Problem('invalid-request', `invalid: request body could not be read: ${(err as Error).message}`);
  }
}

/**
 * A JSON body's text, decoded as UTF-8 (JSON's encoding, RFC 8259) and inflated when it comes compressed (gzip,
 * deflate or br, as koa-body took it); the 1 MiB limit counts the inflated text.
 */
async function readBody(req: IncomingMessage): Promise<string> {
  const coding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  let source: Readable = req;
  if (coding === 'gzip' || coding === 'x-gzip') source = req.pipe(createGunzip());
  else if (coding === 'deflate') source = req.pipe(createInflate());
  else if (coding === 'br') source = req.pipe(createBrotliDecompress());
  else if (coding !== 'identity') {
    throw new Problem(
      'unsupported-media-type',
      `unsupported_media_type: request body encoded as ${coding}; send it as it is, gzip, deflate or br`,
    );
  }
  const length = req.headers['content-length'];
  try {
    return utf8(
      await getRawBody(source, {
        limit: BODY_LIMIT,
        length: source === req && length !== undefined ? Number(length) : undefined,
      }),
    );
  } catch (err) {
    if ((err as { status?: number }).status === 413) {
      throw new Problem('payload-too-large', 'too_large: request body exceeds the 1 MiB limit');
    }
    throw new Problem('invalid-request', `invalid: request body could not be read: ${(err as Error).message}`);
  }
}

/**
 * Bytes as UTF-8 text, without a leading byte order mark. Decoded here rather than by raw-body's `encoding`:
 * that loads iconv-lite's every encoding table (~1 MB of code) for the one encoding Node decodes natively.
 */
function utf8(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
