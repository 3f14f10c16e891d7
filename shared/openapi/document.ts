import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Middleware } from 'koa';
import { packageRoot } from '../paths.js';

/** Where `npm run gen` writes the OpenAPI document. */
export const OPENAPI_PATH = join(packageRoot, 'shared', 'generated', 'openapi.json');

let documentText: string | undefined;

/** Serves `GET /openapi.json`: the contract both processes implement. */
export function serveOpenApi(): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/openapi.json' || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
      await next();
      return;
    }
    documentText ??= readFileSync(OPENAPI_PATH, 'utf8');
    ctx.type = 'application/json';
    ctx.body = documentText;
  };
}
