import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { pino } from 'pino';
import { createApp, handlerOf } from '../../shared/http/app.js';
import { DASHBOARD_CSP, dashboard } from '../../supervisor/dashboard.js';

// supervisor/dashboard.ts on a directory of files like the ones Vite builds: what is served where, with which
// headers, and what is refused. The real build behind a real supervisor is test/dashboard-serving.test.ts.

const INDEX = '<!doctype html><title>ctl</title><script type="module" src="/ui/assets/index-abc123.js"></script>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

describe('dashboard files (supervisor/dashboard.ts)', () => {
  let root: string;
  let server: Server;
  let base: string;

  const start = async (dir: string) => {
    const app = createApp({
      logger: pino({ level: 'silent' }),
      allowedHosts: [],
      allowedOrigins: [],
      readOnly: false,
      trustUpstreamRequestId: false,
    });
    app.use(dashboard(dir));
    app.use((ctx) => {
      ctx.body = { fallthrough: ctx.path };
    });
    server = createServer(handlerOf(app));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'ctl-ui-files-'));
    mkdirSync(join(root, 'assets'));
    writeFileSync(join(root, 'index.html'), INDEX);
    writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    writeFileSync(join(root, 'assets', 'index-abc123.js'), SCRIPT);
    await start(root);
  });

  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(root, { recursive: true, force: true });
  });

  it('serves the page at /ui/ with a strict CSP, not cached, so a new build is seen at once', async () => {
    const res = await fetch(`${base}/ui/`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).to.equal(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).to.match(/^default-src 'self';/);
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(res.headers.get('cache-control')).to.equal('no-cache');
    expect(await res.text()).to.equal(INDEX);
  });

  it('answers every view URL with the page, which routes on its URL (bookmarks work)', async () => {
    for (const path of ['/ui/city/alpha', '/ui/city/alpha/beads', '/ui/city/a/bead/a-1', '/ui/events']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).to.equal(200);
      expect(await res.text(), path).to.equal(INDEX);
    }
  });

  it('serves hashed assets for good, gzipped to a browser that takes it', async () => {
    const res = await fetch(`${base}/ui/assets/index-abc123.js`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
    expect(res.headers.get('vary')).to.match(/Accept-Encoding/);
    // fetch decompresses; the raw bytes are checked through node:http below.
    expect(await res.text()).to.equal(SCRIPT);
    const raw = await new Promise<{ encoding?: string; body: Buffer }>((resolve, reject) => {
      const req = get(`${base}/ui/assets/index-abc123.js`, { headers: { 'Accept-Encoding': 'gzip' } }, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => resolve({ encoding: r.headers['content-encoding'], body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
    });
    expect(raw.encoding).to.equal('gzip');
    expect(gunzipSync(raw.body).toString()).to.equal(SCRIPT);
  });

  it('refuses a missing asset with a 404 problem, not the page (a stale page must not run HTML as script)', async () => {
    for (const path of ['/ui/assets/index-old999.js', '/ui/nothing.css', '/ui/assets/../index.html.map']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).to.equal(404);
      expect(res.headers.get('content-type'), path).to.match(/^application\/problem\+json/);
    }
  });

  it('redirects a browser opening / to /ui/, and leaves / to the API for everyone else', async () => {
    const browser = await fetch(`${base}/`, {
      headers: { Accept: 'text/html,application/xhtml+xml' },
      redirect: 'manual',
    });
    expect(browser.status).to.equal(302);
    expect(browser.headers.get('location')).to.equal('/ui/');
    const program = await fetch(`${base}/`, { headers: { Accept: 'application/json' } });
    expect(await program.json()).to.deep.equal({ fallthrough: '/' });
    const bare = await fetch(`${base}/ui?x=1`, { redirect: 'manual' });
    expect(bare.status).to.equal(301);
    expect(bare.headers.get('location')).to.equal('/ui/?x=1');
  });

  it('refuses to change anything under /ui/ (405, Allow: GET, HEAD)', async () => {
    const res = await fetch(`${base}/ui/`, { method: 'POST', headers: { 'X-CTL-Request': 'test' } });
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('GET, HEAD');
  });

  it('says the page is not built (503) when dist/ui/ is missing, and serves it once it is', async () => {
    await new Promise((resolve) => server.close(resolve));
    const later = join(root, 'later');
    await start(later);
    const res = await fetch(`${base}/ui/`);
    expect(res.status).to.equal(503);
    expect(((await res.json()) as { detail: string }).detail).to.match(/dashboard is not built.*npm run build/);
    mkdirSync(later);
    writeFileSync(join(later, 'index.html'), INDEX);
    expect((await fetch(`${base}/ui/`)).status).to.equal(200);
  });
});
