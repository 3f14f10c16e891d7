import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, seriousViolations, watchedPage, type WatchedPage } from './helpers/browser.js';
import type { CityApi } from './helpers/city-api.js';
import { createSession, startSessionCity } from './helpers/sessions.js';
import type { TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against a real supervisor and
// controller: one city of the shipped example agents, one browser, a fresh page per test. The page is driven
// by role and accessible name, as a screen reader would. Issue 23.

const CITY = 'town';

// Run in the page (as strings: the tests are typed for Node, not the DOM). A mark on the document, to tell that
// a view changed without the page being loaded again.
const MARK_DOCUMENT = 'window.sameDocument = true';
const SAME_DOCUMENT = 'window.sameDocument === true';
const FOCUSED_NAME = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return '';
  const label = el.getAttribute('aria-label') ?? el.labels?.[0]?.textContent ?? '';
  return el.tagName.toLowerCase() + ':' + (label || el.textContent || '').trim();
})()`;

async function heading(page: Page, name: string | RegExp): Promise<void> {
  await page.getByRole('heading', { level: 1, name }).waitFor({ timeout: 15_000 });
}

/** The view's live badge says "Live": its event stream is open. */
async function live(page: Page): Promise<void> {
  await page.getByText('Live', { exact: true }).first().waitFor({ timeout: 15_000 });
}

describe('dashboard in Chromium', function () {
  this.timeout(90_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let browser: Browser;
  let watched: WatchedPage;

  before(async function () {
    this.timeout(120_000);
    ({ sup, api } = await startSessionCity(CITY));
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await sup?.cleanup();
  });

  beforeEach(async () => {
    watched = await watchedPage(browser);
  });

  afterEach(async () => {
    await watched.context.close();
  });

  it('opens every view at its own URL, live, with no console error and no request off the machine', async () => {
    const { page } = watched;
    const bead = await api.create({ title: 'a bead to look at' });
    const session = await createSession(api, { name: 'echo' });
    // A browser opening the supervisor's address lands on the dashboard.
    await page.goto(`${sup.base}/`);
    expect(new URL(page.url()).pathname).to.equal('/ui/');
    const views: [string, string | RegExp][] = [
      ['/ui/', 'Cities'],
      ['/ui/events', 'Events'],
      [`/ui/city/${CITY}`, `City ${CITY}`],
      [`/ui/city/${CITY}/beads`, `Beads of ${CITY}`],
      [`/ui/city/${CITY}/beads?view=table&type=task`, `Beads of ${CITY}`],
      [`/ui/city/${CITY}/bead/${bead.id}`, `${bead.id}: a bead to look at`],
      [`/ui/city/${CITY}/session/${session}`, /^Session /],
      [`/ui/city/${CITY}/runs`, `Runs of ${CITY}`],
      [`/ui/city/${CITY}/orders`, `Orders of ${CITY}`],
      [`/ui/city/${CITY}/config`, `Config of ${CITY}`],
    ];
    for (const [path, name] of views) {
      await page.goto(`${sup.base}${path}`);
      await heading(page, name);
      await live(page);
      expect(await page.getByRole('alert').count(), `an error shown on ${path}`).to.equal(0);
    }
    // Links move between views without a reload, and the table view shows the filtered bead.
    await page.goto(`${sup.base}/ui/city/${CITY}/beads?view=table`);
    await page.getByRole('link', { name: bead.id }).click();
    await heading(page, `${bead.id}: a bead to look at`);
    expect(watched.consoleErrors).to.deep.equal([]);
    expect(watched.offMachine).to.deep.equal([]);
  });

  it('fits a 390-pixel-wide phone screen', async () => {
    const phone = await watchedPage(browser, { width: 390, height: 844 });
    try {
      const session = await createSession(api, { name: 'echo' });
      for (const path of [
        '/ui/',
        `/ui/city/${CITY}`,
        `/ui/city/${CITY}/beads`,
        `/ui/city/${CITY}/session/${session}`,
      ]) {
        await phone.page.goto(`${sup.base}${path}`);
        await live(phone.page);
        const width = await phone.page.evaluate<number>('document.documentElement.scrollWidth');
        expect(width, `${path} is ${width}px wide`).to.be.at.most(390);
      }
    } finally {
      await phone.context.close();
    }
  });

  it('shows a bead created through the API on the beads page without a reload', async () => {
    const { page } = watched;
    await page.goto(`${sup.base}/ui/city/${CITY}/beads`);
    await live(page);
    await page.evaluate(MARK_DOCUMENT);
    const bead = await api.create({ title: 'made through the API' });
    await page.getByRole('link', { name: new RegExp(`${bead.id}.*made through the API`) }).waitFor();
    expect(await page.evaluate<boolean>(SAME_DOCUMENT)).to.equal(true);
  });

  it("shows the echo agent's reply to a message typed on the session page", async () => {
    const { page } = watched;
    const session = await createSession(api, { name: 'echo' });
    await page.goto(`${sup.base}/ui/city/${CITY}/session/${session}`);
    await live(page);
    await page.getByLabel('Message').fill('hello from the page');
    await page.getByRole('button', { name: 'Send' }).click();
    const log = page.getByRole('log', { name: 'Transcript' });
    await log.getByText('echo: hello from the page').waitFor();
    await log.getByText('hello from the page', { exact: true }).waitFor();
  });

  it('answers a pending permission of the stream-json agent with Allow, and the program runs the tool', async () => {
    const { page } = watched;
    const session = await createSession(api, { name: 'pretend-claude' });
    await page.goto(`${sup.base}/ui/city/${CITY}/session/${session}`);
    await live(page);
    await page.getByLabel('Message').fill('run ls -la');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('heading', { name: 'Waiting for you: a permission' }).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    const log = page.getByRole('log', { name: 'Transcript' });
    await log.getByText('I ran `ls -la`.').waitFor();
    await page.getByRole('heading', { name: 'Waiting for you: a permission' }).waitFor({ state: 'detached' });
    // The tool call and its result, folded: opened, it shows what the program reported.
    await log.getByText(/Bash .*— done/).click();
    await log.getByText('ran: ls -la').waitFor();
  });

  it('reaches and works every action of the session page with the keyboard alone', async () => {
    const { page } = watched;
    const session = await createSession(api, { name: 'echo' });
    await page.goto(`${sup.base}/ui/city/${CITY}/session/${session}`);
    await live(page);
    const reached = new Set<string>();
    // The focused element as `tag:accessible name` (its aria-label, else its label's text, else its own text).
    const nameOfFocused = () => page.evaluate<string>(FOCUSED_NAME);
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      const name = await nameOfFocused();
      reached.add(name);
      if (name.startsWith('textarea:')) await page.keyboard.type('typed by keyboard');
      if (name === 'button:Send') break;
    }
    for (const action of ['Stop', 'Kill', 'Suspend', 'Wake', 'Close']) expect(reached).to.include(`button:${action}`);
    expect([...reached].some((n) => n.startsWith('textarea:Message'))).to.equal(true, [...reached].join(', '));
    expect([...reached].some((n) => n.startsWith('select:Deliver'))).to.equal(true, [...reached].join(', '));
    expect(reached).to.include('button:Send');
    // Focus is visible: the focused control has an outline.
    const outline = await page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).to.not.equal('none');
    await page.keyboard.press('Enter');
    await page.getByRole('log', { name: 'Transcript' }).getByText('echo: typed by keyboard').waitFor();
  });

  it('has no serious accessibility violation on the main views, light and dark (axe-core)', async () => {
    const session = await createSession(api, { name: 'echo' });
    const paths = [
      '/ui/',
      '/ui/events',
      `/ui/city/${CITY}`,
      `/ui/city/${CITY}/beads`,
      `/ui/city/${CITY}/session/${session}`,
    ];
    for (const scheme of ['light', 'dark'] as const) {
      const context = await browser.newContext({ colorScheme: scheme, viewport: { width: 1280, height: 800 } });
      try {
        const page = await context.newPage();
        for (const path of paths) {
          await page.goto(`${sup.base}${path}`);
          await live(page);
          const violations = await seriousViolations(page);
          expect(
            violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join('; ')})`),
            `${path} (${scheme})`,
          ).to.deep.equal([]);
        }
      } finally {
        await context.close();
      }
    }
  });

  it('draws a formula run as a graph, and shows each step closing as it happens', async () => {
    const { page } = watched;
    const formula =
      '[[steps]]\nid = "compile"\ntitle = "Compile"\n\n[[steps]]\nid = "publish"\ntitle = "Publish"\nneeds = ["compile"]\n';
    const put = await fetch(api.url('/formulas/pipeline'), {
      method: 'PUT',
      headers: { 'X-CTL-Request': 'test', 'Content-Type': 'application/octet-stream' },
      body: formula,
    });
    expect(put.status, await put.text()).to.be.oneOf([200, 201]);
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>(
      '/formulas/pipeline/cook',
      {},
    );
    expect(cooked.status, JSON.stringify(cooked.body)).to.equal(201);
    const runId = cooked.body.root_bead_id;
    await page.goto(`${sup.base}/ui/city/${CITY}/runs/${runId}`);
    await live(page);
    const graph = page.getByRole('img', { name: /steps and their order/ });
    await graph.waitFor();
    const node = (step: string) => page.locator('svg g.node', { hasText: step });
    expect(await node('compile').count()).to.equal(1);
    expect(await node('publish').count()).to.equal(1);
    expect(await page.locator('svg .edge').count()).to.be.greaterThan(0);
    for (const step of ['compile', 'publish']) {
      const id = cooked.body.beads[step];
      await waitUntil(`${step} to be ready`, async () => {
        const ready = await api.get<{ items: { id: string }[] }>('/beads/ready?limit=1000');
        return ready.body.items.some((b) => b.id === id);
      });
      expect((await api.post(`/bead/${id}/close`)).status).to.equal(200);
      await page.locator('svg g.node.status-completed', { hasText: step }).waitFor();
    }
  });

  // Last: it restarts the supervisor.
  it('says the supervisor is gone, and follows events again once it is back, without a reload', async () => {
    const { page } = watched;
    await page.goto(`${sup.base}/ui/city/${CITY}/beads`);
    await live(page);
    await page.evaluate(MARK_DOCUMENT);
    await sup.stop();
    await page
      .getByRole('alert')
      .filter({ hasText: /supervisor/ })
      .waitFor();
    await sup.launch();
    await waitUntil(`${CITY} to run again`, async () => (await sup.city(CITY))?.running === true, 30_000);
    await page
      .getByRole('alert')
      .filter({ hasText: /supervisor/ })
      .waitFor({ state: 'detached', timeout: 30_000 });
    await live(page);
    const bead = await api.create({ title: 'made after the restart' });
    await page
      .getByRole('link', { name: new RegExp(`${bead.id}.*made after the restart`) })
      .waitFor({ timeout: 20_000 });
    expect(await page.evaluate<boolean>(SAME_DOCUMENT)).to.equal(true);
  });
});
