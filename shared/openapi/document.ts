import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Middleware } from 'koa';
import { packageRoot } from '../paths.js';

/** Where `npm run gen` writes the OpenAPI document. */
export const OPENAPI_PATH = join(packageRoot, 'shared', 'generated', 'openapi.json');

/** The JSON Schema of one `ctl events` output line; it refers into the OpenAPI document. */
export const EVENTS_SCHEMA_PATH = join(packageRoot, 'docs', 'schema', 'events.json');

let documentText: string | undefined;
let eventsSchema: Record<string, unknown> | undefined;

/**
 * Serves the contract both processes implement: `GET /openapi.json` (also at `/schema/openapi.json`) and the
 * events line schema at `GET /schema/events.json`, its `$id` set to where it was fetched from, so that its
 * `openapi.json#…` references resolve to this server's document.
 */
export function serveOpenApi(): Middleware {
  return async (ctx, next) => {
    const isRead = ctx.method === 'GET' || ctx.method === 'HEAD';
    if (isRead && (ctx.path === '/openapi.json' || ctx.path === '/schema/openapi.json')) {
      documentText ??= readFileSync(OPENAPI_PATH, 'utf8');
      ctx.type = 'application/json';
      ctx.body = documentText;
      return;
    }
    if (isRead && ctx.path === '/schema/events.json') {
      eventsSchema ??= JSON.parse(readFileSync(EVENTS_SCHEMA_PATH, 'utf8')) as Record<string, unknown>;
      ctx.type = 'application/schema+json';
      ctx.body = { ...eventsSchema, $id: `${ctx.protocol}://${ctx.host}/schema/events.json` };
      return;
    }
    await next();
  };
}
