// Screenshots of the dashboard's main views for docs/screenshots/ (README links them): a real supervisor and city
// of the shipped example agents, some work, a session waiting on a permission, a run half done; Debian's Chromium.
// Run after `npm run build`: `npx tsx tools/dashboard-screenshots.ts`.
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../test/helpers/browser.js';
import { createSession, send, startSessionCity } from '../test/helpers/sessions.js';
import { waitUntil } from '../test/helpers/wait.js';

const out = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'docs', 'screenshots');
mkdirSync(out, { recursive: true });
const CITY = 'alpha';
const { sup, api } = await startSessionCity(CITY);
const browser = await launchChromium();
try {
  const titles = ['Write the release notes', 'Fix the flaky login test', 'Review the cache patch', 'Update the docs'];
  const beads = [];
  for (const [i, title] of titles.entries()) beads.push(await api.create({ title, type: i % 2 ? 'bug' : 'task' }));
  await api.post(`/bead/${beads[1].id}/assign`, { assignee: 'echo' });
  await api.post(`/bead/${beads[3].id}/close`);
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
  const shots: [string, string, 'light' | 'dark', number][] = [
    ['cities', '/ui/', 'light', 1280],
    ['city', `/ui/city/${CITY}`, 'light', 1280],
    ['session', `/ui/city/${CITY}/session/${claude}`, 'light', 1280],
    ['beads', `/ui/city/${CITY}/beads`, 'dark', 1280],
    ['run', `/ui/city/${CITY}/runs/${cooked.body.root_bead_id}`, 'light', 1280],
    ['events', '/ui/events', 'dark', 1280],
    ['session-phone', `/ui/city/${CITY}/session/${claude}`, 'dark', 390],
  ];
  for (const [name, path, colorScheme, width] of shots) {
    const context = await browser.newContext({ colorScheme, viewport: { width, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${sup.base}${path}`);
    await page.getByText('Live', { exact: true }).first().waitFor();
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: join(out, `${name}.png`) });
    await context.close();
    console.log(`docs/screenshots/${name}.png`);
  }
} finally {
  await browser.close();
  await sup.cleanup();
}
