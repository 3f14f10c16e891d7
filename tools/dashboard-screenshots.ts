// Screenshots of the dashboard's main views for docs/screenshots/ (README links them): a real supervisor and city
// of the shipped example agents, some work, a session waiting on a permission, a run half done; Debian's Chromium.
// Run after `npm run build`: `npx tsx tools/dashboard-screenshots.ts`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { packageRoot } from '../shared/paths.js';
import { launchChromium } from '../test/helpers/browser.js';
import { createSession, send, startSessionCity } from '../test/helpers/sessions.js';
import { waitUntil } from '../test/helpers/wait.js';

const out = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'docs', 'screenshots');
mkdirSync(out, { recursive: true });
const CITY = 'alpha';
const { sup, api, dir } = await startSessionCity(
  CITY,
  `
[providers.tui]
command = "${process.execPath} ${join(packageRoot, 'examples', 'agents', 'tui-agent.mjs')}"
runtime = "tmux"
screen_rules = "tui-agent"
`,
);
const browser = await launchChromium();
try {
  const titles = ['Write the release notes', 'Fix the flaky login test', 'Review the cache patch', 'Update the docs'];
  const beads = [];
  for (const [i, title] of titles.entries()) beads.push(await api.create({ title, type: i % 2 ? 'bug' : 'task' }));
  await api.post(`/bead/${beads[1].id}/assign`, { assignee: 'echo' });
  await api.post(`/bead/${beads[3].id}/close`);
  // A bead among its dependencies: it waits for one, another waits for it, and it has a child.
  await api.addDep(beads[2].id, beads[0].id);
  await api.addDep(beads[1].id, beads[2].id);
  await api.create({ title: 'Benchmark the new cache', parent: beads[2].id });
  await api.post('/mail', { to: 'echo', from: 'mayor', subject: 'The release is Friday', body: 'Notes by Thursday.' });
  await api.post('/mail', { to: 'mayor', from: 'echo', subject: 'Login test fixed', body: 'It was a race.' });
  await api.post('/convoys', { title: 'Release 1.4', items: beads.map((b) => b.id) });
  mkdirSync(join(dir, 'orders'), { recursive: true });
  writeFileSync(
    join(dir, 'orders', 'disk-check.toml'),
    '[order]\ndescription = "How full the disk is"\ntrigger = "cooldown"\ninterval = "1h"\nexec = "df -h / | tail -1"\n',
  );
  await waitUntil('the order to run', async () => {
    const h = await api.get<{ entries: { status?: string }[] }>('/orders/history');
    return h.body.entries.some((e) => e.status === 'success');
  });
  const tui = await createSession(api, { name: 'tui', message: 'hello screen' });
  await createSession(api, { name: 'echo', message: 'hello' });
  const claude = await createSession(api, { name: 'pretend-claude', message: 'what can you do?' });
  await send(api, claude, 'run npm test');
  await waitUntil(
    'the permission request',
    async () => (await api.get<{ pending?: unknown }>(`/session/${claude}`)).body.pending,
  );
  await fetch(api.url('/formulas/release'), {
    method: 'PUT',
    headers: { 'X-CTL-Request': 'docs', 'Content-Type': 'application/octet-stream' },
    body: '[[steps]]\nid = "build"\ntitle = "Build"\n\n[[steps]]\nid = "test"\ntitle = "Test"\nneeds = ["build"]\n\n[[steps]]\nid = "docs"\ntitle = "Docs"\nneeds = ["build"]\n\n[[steps]]\nid = "ship"\ntitle = "Ship"\nneeds = ["test", "docs"]\n',
  });
  const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>('/formulas/release/cook', {});
  await waitUntil('build ready', async () =>
    (await api.get<{ items: { id: string }[] }>('/beads/ready')).body.items.some(
      (b) => b.id === cooked.body.beads.build,
    ),
  );
  await api.post(`/bead/${cooked.body.beads.build}/close`);
  const openFirstFiring = (page: Page) => page.locator('summary').first().click();
  const shots: [string, string, 'light' | 'dark', number, ((page: Page) => Promise<unknown>)?][] = [
    ['cities', '/ui/', 'light', 1280],
    ['city', `/ui/city/${CITY}`, 'light', 1280],
    ['session', `/ui/city/${CITY}/session/${claude}`, 'light', 1280],
    ['beads', `/ui/city/${CITY}/beads`, 'dark', 1280],
    ['run', `/ui/city/${CITY}/runs/${cooked.body.root_bead_id}`, 'light', 1280],
    ['events', '/ui/events', 'dark', 1280],
    ['session-phone', `/ui/city/${CITY}/session/${claude}`, 'dark', 390],
    ['session-terminal', `/ui/city/${CITY}/session/${tui}`, 'dark', 1280],
    ['bead', `/ui/city/${CITY}/bead/${beads[2].id}`, 'light', 1280],
    ['mail', `/ui/city/${CITY}/mail`, 'light', 1280],
    ['convoys', `/ui/city/${CITY}/convoys`, 'dark', 1280],
    ['orders', `/ui/city/${CITY}/orders`, 'light', 1280, openFirstFiring],
  ];
  for (const [name, path, colorScheme, width, prepare] of shots) {
    const context = await browser.newContext({ colorScheme, viewport: { width, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${sup.base}${path}`);
    await page.getByText('Live', { exact: true }).first().waitFor();
    await page.waitForLoadState('networkidle');
    if (prepare) {
      await prepare(page);
      await page.waitForLoadState('networkidle');
    }
    await page.screenshot({ path: join(out, `${name}.png`) });
    await context.close();
    console.log(`docs/screenshots/${name}.png`);
  }
} finally {
  await browser.close();
  await sup.cleanup();
}
