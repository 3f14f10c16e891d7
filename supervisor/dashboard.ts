import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Context, Middleware } from 'koa';
import { Problem } from '../shared/http/problem.js';
import { packageRoot } from '../shared/paths.js';

/** Where the page lives, and where the supervisor redirects a browser that opens `/`. */
export const DASHBOARD_PATH = '/ui/';

/**
 * Same origin only, nothing inline, no framing: the page loads its own script, style and images and talks to
 * this API (fetch and EventSource), and nothing else — no CDN, no remote font, no request leaving the machine.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

interface StaticFile {
  body: Buffer;
  /** Gzipped once at load, when that is smaller (the bundle goes out compressed to every browser that asks). */
  gzipped?: Buffer;
  type: string;
  /** Vite names assets by their content hash: they never change under their URL. */
  immutable: boolean;
}

/** The built page's files (`npm run build` → dist/ui/), by URL path under `/ui/`, read once. */
function loadFiles(root: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        walk(path);
        continue;
      }
      const rel = relative(root, path).split(sep).join('/');
      const body = readFileSync(path);
      const gzipped = body.length > 1024 ? gzipSync(body) : undefined;
      files.set(rel, {
        body,
        gzipped: gzipped && gzipped.length < body.length ? gzipped : undefined,
        type: TYPES[extname(name)] ?? 'application/octet-stream',
        immutable: rel.startsWith('assets/'),
      });
    }
  };
  walk(root);
  return files;
}

function wantsHtml(ctx: Context): boolean {
  return (ctx.get('Accept') ?? '').toLowerCase().includes('text/html');
}

/**
 * The dashboard: the static files `npm run build` made (dist/ui/), served at `/ui/` behind the same Host guard
 * and access gate as the API. Every path under `/ui/` that is not a file is the page itself, which routes on
 * its URL, so a bookmarked `/ui/city/x/beads` opens that view. `GET /` from a browser redirects here. Files
 * are read on the first request (a supervisor that nobody opens in a browser never reads them) and kept.
 */
export function dashboard(root = join(packageRoot, 'dist', 'ui')): Middleware {
  let files: Map<string, StaticFile> | undefined;
  const filesNow = () => {
    if (files) return files;
    try {
      files = loadFiles(root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      throw new Problem(
        'service-unavailable',
        `unavailable: the dashboard is not built (no ${root}); run npm run build`,
      );
    }
    if (!files.has('index.html')) {
      files = undefined;
      throw new Problem('service-unavailable', `unavailable: the dashboard is not built (no index.html in ${root})`);
    }
    return files;
  };
  return async (ctx, next) => {
    const path = ctx.path;
    if (path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD') && wantsHtml(ctx)) {
      ctx.status = 302;
      ctx.redirect(DASHBOARD_PATH);
      return;
    }
    if (path === '/ui') {
      ctx.status = 301;
      ctx.redirect(DASHBOARD_PATH + (ctx.querystring ? `?${ctx.querystring}` : ''));
      return;
    }
    if (!path.startsWith(DASHBOARD_PATH)) {
      await next();
      return;
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw new Problem(
        'method-not-allowed',
        `method_not_allowed: ${ctx.method} ${path}; the dashboard is read with GET`,
      );
    }
    const all = filesNow();
    const rel = path.slice(DASHBOARD_PATH.length);
    let file = all.get(rel);
    if (!file) {
      // A missing asset is a 404 (a stale page asking for an old bundle must see it fail, not get HTML as JS).
      if (rel.startsWith('assets/') || /\.[a-z0-9]+$/i.test(rel)) {
        throw new Problem('route-not-found', `not_found: no dashboard file ${path}`);
      }
      file = all.get('index.html')!;
    }
    ctx.set('Content-Security-Policy', DASHBOARD_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.vary('Accept-Encoding');
    ctx.type = file.type;
    if (file.gzipped && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = file.gzipped;
    } else {
      ctx.body = file.body;
    }
  };
}
