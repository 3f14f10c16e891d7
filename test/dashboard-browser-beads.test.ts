import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchedPage, type WatchedPage } from './helpers/browser.js';
import { CityApi } from './helpers/city-api.js';
import { TestSupervisor } from './helpers/supervisor.js';

// The beads page takes a `bead.*` event's payload (the bead as it is now) into the rows it shows, instead of
// asking the API for its columns again: in Debian's Chromium against a real supervisor and controller, every
// request the page makes is counted while beads are created, changed, moved and closed through the API. Issue 31,
// point 6.

const CITY = 'board';

async function live(page: Page): Promise<void> {
  await page.getByText('Live', { exact: true }).first().waitFor({ timeout: 15_000 });
}

/** The requests a page makes from now on, as path and query. */
function countRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    seen.push(url.pathname + url.search);
  });
  return seen;
}

describe('dashboard in Chromium: the beads page kept live from the events’ payloads', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let browser: Browser;
  let watched: WatchedPage;

  before(async function () {
    this.timeout(120_000);
    sup = await TestSupervisor.start();
    await sup.createCity(CITY);
    api = new CityApi(sup, CITY);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await sup?.cleanup();
  });

  beforeEach(async () => {
    watched = await watchedPage(browser, { width: 1280, height: 900 });
  });

  afterEach(async () => {
    await watched.context.close();
  });

  it('shows a bead created, changed, moved and closed without asking for the columns again', async () => {
    const { page } = watched;
    const resting = await api.create({ title: 'already there' });
    await page.goto(`${sup.base}/ui/city/${CITY}/beads`);
    await live(page);
    const column = (status: string) => page.locator(`section.column[aria-labelledby="col-${status}"]`);
    const card = (status: string, id: string, title: string) =>
      column(status).getByRole('link', { name: `${id} ${title}`, exact: true });
    await card('open', resting.id, 'already there').waitFor();
    const open = await api.list({ status: 'open' });
    const requests = countRequests(page);

    const bead = await api.create({ title: 'made through the API' });
    await card('open', bead.id, 'made through the API').waitFor();
    await column('open')
      .getByRole('region', { name: `open beads, ${open.total + 1}` })
      .waitFor();
    // The newest first, above the one already there.
    const first = await column('open').locator('.card a').first().textContent();
    expect(first).to.equal(`${bead.id} made through the API`);

    await api.update(bead.id, { title: 'renamed', assignee: 'mayor' });
    await card('open', bead.id, 'renamed').waitFor();
    await column('open').getByText('task · mayor').waitFor();

    await api.update(bead.id, { status: 'in_progress' });
    await card('in_progress', bead.id, 'renamed').waitFor();
    await column('open')
      .getByRole('region', { name: `open beads, ${open.total}` })
      .waitFor();
    expect(await card('open', bead.id, 'renamed').count()).to.equal(0);

    await api.close(bead.id);
    await card('closed', bead.id, 'renamed').waitFor();
    await column('in_progress').getByRole('region', { name: 'in progress beads, 0' }).waitFor();
    await column('closed').getByRole('region', { name: 'closed beads, 1' }).waitFor();

    // A comment changes no row.
    await api.post(`/bead/${resting.id}/comments`, { text: 'nothing to redraw' });
    const marker = await api.create({ title: 'after the comment' });
    await card('open', marker.id, 'after the comment').waitFor();

    expect(
      requests.filter((u) => u.includes('/beads?') || u.includes('/bead/')),
      requests.join('\n'),
    ).to.deep.equal([]);
    expect(watched.consoleErrors).to.deep.equal([]);
  });

  it('reads again only the bead whose blocked state a closing changed', async () => {
    const { page } = watched;
    const blocker = await api.create({ title: 'in the way' });
    const waiting = await api.create({ title: 'waits for it' });
    await api.addDep(waiting.id, blocker.id);
    await page.goto(`${sup.base}/ui/city/${CITY}/beads`);
    await live(page);
    const waitingCard = page.locator('.card', { has: page.getByRole('link', { name: `${waiting.id} waits for it` }) });
    await waitingCard.getByText('task · blocked').waitFor();
    const requests = countRequests(page);
    await api.close(blocker.id);
    await waitingCard.getByText('task', { exact: true }).waitFor();
    const beadRequests = requests.filter((u) => u.includes('/beads?') || u.includes('/bead/'));
    expect(beadRequests, requests.join('\n')).to.deep.equal([`/v0/city/${CITY}/bead/${waiting.id}`]);
  });

  it('keeps a filtered table to its filter as beads come into it and leave it', async () => {
    const { page } = watched;
    const bead = await api.create({ title: 'not yet labelled' });
    await page.goto(`${sup.base}/ui/city/${CITY}/beads?view=table&label=picked`);
    await live(page);
    await page.getByText('No beads match.').waitFor();
    const requests = countRequests(page);
    await api.update(bead.id, { labels: ['picked'] });
    const table = page.getByRole('region', { name: 'Beads table' });
    await table.getByRole('link', { name: bead.id, exact: true }).waitFor();
    await page.getByText('1 beads.').waitFor();
    await api.close(bead.id);
    // Closed, it stays (the table lists every status), its status shown.
    await table.getByRole('row', { name: new RegExp(`${bead.id} not yet labelled closed`) }).waitFor();
    await api.update(bead.id, { remove_labels: ['picked'] });
    await page.getByText('No beads match.').waitFor();
    expect(
      requests.filter((u) => u.includes('/beads?') || u.includes('/bead/')),
      requests.join('\n'),
    ).to.deep.equal([]);
  });

  it('shows a bead’s changes and its neighbours’ on its page, reading the neighbours only when its edges change', async () => {
    const { page } = watched;
    const bead = await api.create({ title: 'looked at' });
    const other = await api.create({ title: 'its neighbour' });
    await page.goto(`${sup.base}/ui/city/${CITY}/bead/${bead.id}`);
    await live(page);
    await page.getByRole('heading', { level: 1, name: `${bead.id}: looked at` }).waitFor();
    const history = page.locator('section[aria-labelledby="history-h"] li');
    await history.first().waitFor();
    const lines = await history.count();
    const requests = countRequests(page);

    await api.update(bead.id, { title: 'looked at again', assignee: 'mayor' });
    await page.getByRole('heading', { level: 1, name: `${bead.id}: looked at again` }).waitFor();
    await page.getByText('mayor', { exact: true }).waitFor();
    await history.nth(lines).waitFor();
    expect(await history.first().textContent()).to.contain('bead.updated');
    expect(requests, requests.join('\n')).to.deep.equal([]);

    // A new edge: who the neighbours are changed, and only they are read again.
    await api.addDep(bead.id, other.id);
    const deps = page.locator('section[aria-labelledby="deps-h"]');
    await deps.getByText(`depends on ${other.id} its neighbour open`).waitFor();
    expect(requests, requests.join('\n')).to.deep.equal([`/v0/city/${CITY}/bead/${bead.id}/deps`]);

    // The neighbour closing changes its line, from the event alone.
    await api.close(other.id);
    await deps.getByText(`depends on ${other.id} its neighbour closed`).waitFor();
    expect(requests, requests.join('\n')).to.deep.equal([`/v0/city/${CITY}/bead/${bead.id}/deps`]);
    expect(watched.consoleErrors).to.deep.equal([]);
  });
});
