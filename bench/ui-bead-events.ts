/**
 * What the beads board asks the API for while beads change (issue 31, point 6): the board of a city open in
 * Chromium, 100 `bead.*` events made through the API at 10 a second (creates, updates, closes), and every HTTP
 * request the page makes from the first change until it shows the final state (each column's count and its
 * first cards as the API lists them). Run alone with `npm run bench -- ui-events`, or as part of `ui`.
 */
import { loadavg } from 'node:os';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../test/helpers/browser.js';
import { CityApi, idNumber, type Bead } from '../test/helpers/city-api.js';
import { TestSupervisor } from '../test/helpers/supervisor.js';
import { benchRoot } from './bench-root.js';
import { formatTable, ms } from './table.js';

const CITY = 'events';
/** Beads the city holds before the changes: the open column's first page (200) full, more past it. */
const BEADS = 250;
const EVENTS = 100;
const RATE = 10;
/** Requests the page may make per 100 bead events it can apply from their payloads. */
const GOAL = 10;
const COLUMNS = ['open', 'in_progress', 'closed'] as const;

export interface BeadEventRequests {
  events: number;
  requests: number;
  /** Beads those requests asked for (the sum of their `limit`s). */
  rowsAsked: number;
  /** Requests by path and kind (`GET /beads?status=open`, `GET /bead/{id}`, …). */
  byKind: Record<string, number>;
  /** The last change made to the page showing the final state, ms. */
  settleMs: number;
  loadavg: number[];
}

/** The column counts and first cards the page shows, as `open: 251 | x-1 title, …`. */
const SHOWN = `(() => [...document.querySelectorAll('section.column')].map((s) => {
  const count = s.querySelector('h2 .muted')?.textContent ?? '';
  const cards = [...s.querySelectorAll('.card a')].slice(0, 5).map((a) => a.textContent);
  return s.getAttribute('aria-labelledby').slice(4) + ': ' + count + ' | ' + cards.join(', ');
}).join('\\n'))()`;

async function expected(api: CityApi): Promise<string> {
  const lines: string[] = [];
  for (const status of COLUMNS) {
    const page = await api.list({ status, limit: 5 });
    lines.push(`${status}: (${page.total}) | ${page.items.map((b) => `${b.id} ${b.title}`).join(', ')}`);
  }
  return lines.join('\n');
}

/** What a path is, for the table: ids and cursors folded away. */
function kindOf(url: URL): string {
  const path = url.pathname.replace(/^\/v0\/city\/[^/]+/, '').replace(/\/bead\/[^/]+/, '/bead/{id}');
  const status = url.searchParams.get('status');
  const cursor = url.searchParams.has('cursor') ? ' (next page)' : '';
  return `${path}${status ? `?status=${status}` : ''}${cursor}`;
}

/**
 * 100 changes: creates, then updates (title, assignee, in progress) and closes of what was made; every tenth
 * closes one of the oldest beads instead, past the open column's first page (the page cannot know its count).
 */
async function makeEvents(api: CityApi, oldest: Bead[]): Promise<void> {
  const made: Bead[] = [];
  const started = performance.now();
  for (let i = 0; i < EVENTS; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const n = i % 5;
    if (n === 0 || n === 1 || made.length === 0) made.push(await api.create({ title: `changed bead ${i}` }));
    else if (n === 2) await api.update(made.at(-1)!.id, { title: `retitled ${i}`, assignee: 'mayor' });
    else if (n === 3) await api.update(made.at(-2)!.id, { status: 'in_progress' });
    else if (i % 10 === 9) await api.close(oldest.pop()!.id);
    else await api.close(made.at(-2)!.id);
  }
}

/** Counts the board's requests while `EVENTS` bead events happen, on a supervisor and browser of the caller's. */
export async function measureBeadEventRequests(sup: TestSupervisor, browser: Browser): Promise<BeadEventRequests> {
  await sup.createCity(CITY);
  const api = new CityApi(sup, CITY);
  const resting: Bead[] = [];
  for (let i = 0; i < BEADS; i += 50) {
    resting.push(
      ...(await Promise.all(Array.from({ length: 50 }, (_, k) => api.create({ title: `resting bead ${i + k}` })))),
    );
  }
  resting.sort((a, b) => idNumber(b.id) - idNumber(a.id));
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page: Page = await context.newPage();
    await page.goto(`${sup.base}/ui/city/${CITY}/beads`);
    await page.getByText('Live', { exact: true }).first().waitFor({ timeout: 30_000 });
    await page.waitForFunction(`!document.querySelector('[aria-busy="true"], .card.placeholder')`);
    const requests: URL[] = [];
    page.on('request', (r) => requests.push(new URL(r.url())));
    await makeEvents(api, resting.slice(-20));
    const ended = performance.now();
    const want = await expected(api);
    // Drawn as the API lists it: bounded by how long the page may take to catch up, generously.
    const deadline = Date.now() + 60_000;
    let shown = '';
    while ((shown = await page.evaluate<string>(SHOWN)) !== want) {
      if (Date.now() > deadline) throw new Error(`the board never showed the final state:\n${shown}\nwanted:\n${want}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const settleMs = performance.now() - ended;
    const byKind: Record<string, number> = {};
    for (const url of requests) byKind[kindOf(url)] = (byKind[kindOf(url)] ?? 0) + 1;
    const rowsAsked = requests.reduce((n, url) => n + Number(url.searchParams.get('limit') ?? 0), 0);
    return { events: EVENTS, requests: requests.length, rowsAsked, byKind, settleMs, loadavg: loadavg() };
  } finally {
    await context.close();
  }
}

export function printBeadEventRequests(r: BeadEventRequests): void {
  const met = r.requests <= GOAL ? 'met' : 'MISSED';
  console.log(
    formatTable(
      `beads board: HTTP requests per ${r.events} bead events (${RATE}/s through the API: creates, updates, closes) until it shows the final state: ${r.requests} (goal ≤ ${GOAL}) ${met}, asking for ${r.rowsAsked} beads; final state ${ms(r.settleMs, 0)} ms after the last change; load average ${r.loadavg.map((l) => l.toFixed(2)).join(' ')}`,
      ['request', 'count'],
      Object.entries(r.byKind)
        .sort((a, b) => b[1] - a[1])
        .map(([kind, n]) => [kind, String(n)]),
    ),
  );
}

/** `npm run bench -- ui-events`: the measurement alone, on a supervisor and browser of its own. */
export async function runUiEvents(): Promise<void> {
  let sup: TestSupervisor | undefined;
  let browser: Browser | undefined;
  const { root, cleanup } = benchRoot('ctl-bench-ui-events-', async () => {
    await browser?.close();
    await sup?.stop();
  });
  try {
    sup = await TestSupervisor.start({ root });
    browser = await launchChromium();
    printBeadEventRequests(await measureBeadEventRequests(sup, browser));
  } finally {
    await cleanup();
  }
}
