import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import type { Logger } from 'pino';
import { cors } from './cors.js';
import { hostGuard } from './host-guard.js';
import { mutationGuard } from './mutation-guard.js';
import { originGuard } from './origin-guard.js';
import { problems } from './problems.js';
import { requestId } from './request-id.js';

export interface HttpConventions {
  logger: Logger;
  /** Host header values accepted besides loopback names (`allowed_hosts`). */
  allowedHosts: string[];
  /** Origins answered with CORS headers besides localhost ones (`allowed_origins`). */
  allowedOrigins: string[];
  /** Refuse every mutation (bound to a non-loopback address without `allow_mutations`). */
  readOnly: boolean;
  /** Keep an `X-CTL-Request-Id` assigned by the supervisor in front of us. */
  trustUpstreamRequestId: boolean;
}

/**
 * A Koa application with the conventions both processes share, in the order they must run: the request id
 * first (so every response has it), then the problem handler (so everything after it fails as problem+json),
 * then the Host check, CORS, the cross-origin refusal and the mutation guard. Callers add body parsing and routes after these.
 */
export function createApp(conventions: HttpConventions): Koa {
  const app = new Koa();
  app.silent = true;
  app.proxy = false;
  app.on('error', (err: unknown) => conventions.logger.warn({ err }, 'connection error'));
  app.use(requestId({ trustUpstream: conventions.trustUpstreamRequestId }));
  app.use(async (ctx, next) => {
    const started = performance.now();
    await next();
    conventions.logger.debug(
      { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, status: ctx.status },
      `${ctx.method} ${ctx.path} ${ctx.status} ${(performance.now() - started).toFixed(1)}ms`,
    );
  });
  app.use(problems(conventions.logger));
  app.use(hostGuard(conventions.allowedHosts));
  app.use(cors(conventions.allowedOrigins));
  app.use(originGuard(conventions.allowedOrigins));
  app.use(mutationGuard({ readOnly: conventions.readOnly }));
  return app;
}

/** A node:http request listener for a Koa app (Koa's callback returns a promise node ignores). */
export function handlerOf(app: Koa): (req: IncomingMessage, res: ServerResponse) => void {
  const callback = app.callback();
  return (req, res) => void callback(req, res);
}
