import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { ErrorDetail } from '../dto/errors.js';
import { discardBody } from './discard-body.js';
import { Problem, sendProblem } from './problem.js';

interface ErrorLike {
  status?: number;
  statusCode?: number;
  message?: string;
  expose?: boolean;
  headers?: Record<string, string>;
  /** tsoa's ValidateError fields, copied onto the HttpError the generated routes throw. */
  fields?: Record<string, { message: string; value?: unknown }>;
}

/**
 * The one place errors become responses: every thrown error, and every 404/405 nobody answered, leaves as
 * `application/problem+json`. Errors never reach Koa's default handler, which would drop our headers.
 */
export function problems(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body == null && ctx.status === 404) {
        sendProblem(ctx, new Problem('route-not-found', `not_found: no route for ${ctx.method} ${ctx.path}`));
      } else if (ctx.status === 405 && (ctx.body == null || typeof ctx.body === 'string')) {
        sendProblem(
          ctx,
          new Problem('method-not-allowed', `method_not_allowed: ${ctx.method} is not allowed on ${ctx.path}`),
        );
      }
    } catch (err) {
      const problem = toProblem(err, ctx);
      if (problem.status >= 500)
        logger.error({ err, requestId: ctx.state.requestId, path: ctx.path }, 'request failed');
      if (ctx.headerSent || !ctx.writable) {
        ctx.res.destroy();
        return;
      }
      sendProblem(ctx, problem);
      discardBody(ctx.req);
    }
  };
}

function toProblem(err: unknown, ctx: Context): Problem {
  if (err instanceof Problem) return err;
  const e = (err ?? {}) as ErrorLike;
  if (e.fields) {
    const errors: ErrorDetail[] = Object.entries(e.fields).map(([key, field]) => ({
      location: locationOf(key, ctx),
      message: field.message,
      ...(field.value !== undefined ? { value: field.value } : {}),
    }));
    const summary = errors.map((d) => `${d.location}: ${d.message}`).join('; ');
    return new Problem('validation-failed', `invalid: ${summary}`, { errors });
  }
  const status = e.status ?? e.statusCode ?? 500;
  switch (status) {
    case 400:
      return new Problem('invalid-request', `invalid: ${e.message ?? 'bad request'}`);
    case 413:
      return new Problem('payload-too-large', 'too_large: request body exceeds the 1 MiB limit');
    case 415:
      return new Problem('unsupported-media-type', `unsupported_media_type: ${e.message ?? ''}`);
    default:
      if (status >= 500 || status < 400) return new Problem('internal', 'internal: unexpected server error');
      return new Problem(status === 404 ? 'route-not-found' : 'invalid-request', `error: ${e.message ?? 'error'}`, {
        status,
        headers: e.headers,
      });
  }
}

/** tsoa names a failing input `body.x` or bare (`limit`); say which part of the request it came from. */
function locationOf(key: string, ctx: Context): string {
  if (key === 'body' || key.startsWith('body.') || key.startsWith('body[')) return key;
  const params = (ctx as Context & { params?: Record<string, string> }).params ?? {};
  if (key in params) return `path.${key}`;
  if (key in ctx.query) return `query.${key}`;
  if (key.includes('-') || key in ctx.headers) return `header.${key}`;
  return `query.${key}`;
}
