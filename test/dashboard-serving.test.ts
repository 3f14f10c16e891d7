import { execFile } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { lines } from './helpers/cli.js';
import { RawConnection } from './helpers/raw-http.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// The dashboard as the real supervisor serves the real build (dist/ui/, made by `npm run build`): behind the
// Host guard and the access gate like the API, reached signed in through `ctl ui`. Issue 23. What the files
// middleware does on its own is test/unit/dashboard-files.test.ts; the page in a browser, dashboard-browser.

const run = promisify(execFile);
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

/** curl as `nobody` (another account than the supervisor's): status, headers (lowercased) and body. */
async function curlAsNobody(url: string, args: string[] = []) {
  const { stdout } = await run(
    'setpriv',
    [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'curl', '-s', '-i', '--max-time', '10', ...args, url],
    { encoding: 'utf8' },
  );
  const split = stdout.indexOf('\r\n\r\n');
  const head = stdout.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(head[0].split(' ')[1]), headers, body: stdout.slice(split + 4) };
}

describe('dashboard served by the supervisor', () => {
  let sup: TestSupervisor;

  before(async () => {
    sup = await TestSupervisor.start();
  });

  after(async () => {
    await sup?.cleanup();
  });

  it('serves the built page and every file it loads, under a strict CSP', async () => {
    const page = await fetch(`${sup.base}/ui/city/alpha/beads`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-security-policy')).to.match(/^default-src 'self';/);
    const html = await page.text();
    const files = [...html.matchAll(/(?:src|href)="(\/ui\/[^"]+)"/g)].map((m) => m[1]);
    expect(
      files.some((f) => /^\/ui\/assets\/index-[\w-]+\.js$/.test(f)),
      html,
    ).to.equal(true);
    expect(
      files.some((f) => f.endsWith('.css')),
      html,
    ).to.equal(true);
    // Nothing inline (the CSP would refuse it), nothing from elsewhere.
    expect(html).to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).to.not.match(/(?:src|href)="(?:https?:)?\/\//);
    for (const file of files) {
      const res = await fetch(`${sup.base}${file}`);
      expect(res.status, file).to.equal(200);
      await res.arrayBuffer();
    }
  });

  it('answers /ui/ only for a Host the API accepts (421 otherwise: DNS rebinding)', async () => {
    const conn = await RawConnection.open(sup.port);
    try {
      conn.socket.write('GET /ui/ HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n');
      const res = await conn.response();
      expect(res.status).to.equal(421);
    } finally {
      conn.socket.destroy();
    }
  });

  it('refuses the page to another account, and lets it in through the one-time link ctl ui prints', async function () {
    if (!isRoot) this.skip(); // acting as another account takes root (setpriv), as in CI
    const refused = await curlAsNobody(`${sup.base}/ui/`);
    expect(refused.status).to.equal(403);
    const printed = await sup.ctl(['ui', '--print']);
    expect(printed.code, printed.stderr).to.equal(0);
    const [link] = lines(printed.stdout);
    expect(link).to.match(new RegExp(`^${sup.base}/v0/auth/exchange\\?code=[\\w-]+$`));
    expect(printed.stderr).to.match(/within a minute/);
    const exchanged = await curlAsNobody(link);
    expect(exchanged.status).to.equal(303);
    expect(exchanged.headers.location).to.equal('/ui/');
    const cookie = exchanged.headers['set-cookie'].split(';')[0];
    const page = await curlAsNobody(`${sup.base}/ui/`, ['-H', `Cookie: ${cookie}`]);
    expect(page.status).to.equal(200);
    expect(page.body).to.match(/<div id="app">/);
    // The page's API calls and streams go through with the same cookie.
    expect((await curlAsNobody(`${sup.base}/v0/cities`, ['-H', `Cookie: ${cookie}`])).status).to.equal(200);
  });

  it('ctl ui opens the link in $BROWSER, and prints it where no browser can be opened', async () => {
    const opened = join(sup.root, 'opened.txt');
    const browser = join(sup.root, 'fake-browser.sh');
    writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`);
    chmodSync(browser, 0o755);
    const viaBrowser = await sup.ctl(['ui'], { env: { BROWSER: browser } });
    expect(viaBrowser.code, viaBrowser.stderr).to.equal(0);
    expect(viaBrowser.stdout).to.equal('');
    expect(viaBrowser.stderr).to.match(/Opened the dashboard/);
    const link = await waitUntil('the browser to get the link', async () => {
      try {
        return readFileSync(opened, 'utf8') || undefined;
      } catch {
        return undefined;
      }
    });
    expect(link).to.match(/\/v0\/auth\/exchange\?code=/);
    const exchanged = await fetch(link, { redirect: 'manual' });
    expect(exchanged.status).to.equal(303);

    const headless = await sup.ctl(['ui'], { env: { BROWSER: '', DISPLAY: '', WAYLAND_DISPLAY: '' } });
    expect(headless.code, headless.stderr).to.equal(0);
    expect(lines(headless.stdout)[0]).to.match(/\/v0\/auth\/exchange\?code=/);

    const broken = await sup.ctl(['ui'], { env: { BROWSER: '/nonexistent/browser' } });
    expect(broken.code, broken.stderr).to.equal(0);
    expect(lines(broken.stdout)[0]).to.match(/\/v0\/auth\/exchange\?code=/);
    expect(broken.stderr).to.match(/Could not start \/nonexistent\/browser/);
  });

  it('lands a sign-in link on the dashboard page it names, and refuses anywhere else before spending the code', async () => {
    const mint = async () => {
      const { data } = await sup.api.POST('/v0/auth/codes', { params: { header: CSRF } });
      return `${sup.base}${data!.url}`;
    };
    const link = await mint();
    for (const to of [
      'https://elsewhere.example/',
      '//elsewhere.example/ui/',
      '/ui/../v0/cities',
      '/v0/cities',
      '/ui/\\x',
    ]) {
      const refused = await fetch(`${link}&to=${encodeURIComponent(to)}`, { redirect: 'manual' });
      expect(refused.status, to).to.equal(400);
      expect(((await refused.json()) as { detail: string }).detail).to.match(/expected a path under \/ui\//);
    }
    // The refusals did not spend it.
    const landed = await fetch(`${link}&to=${encodeURIComponent('/ui/city/alpha/session/alp-1')}`, {
      redirect: 'manual',
    });
    expect(landed.status).to.equal(303);
    expect(landed.headers.get('location')).to.equal('/ui/city/alpha/session/alp-1');
  });
});
