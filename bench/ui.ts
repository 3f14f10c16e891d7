/**
 * The dashboard (issue 23), against a real supervisor and controller, in Debian's Chromium (playwright-core):
 *  - bundle sizes: what the first view loads (entry script, its CSS, preloaded chunks), raw and gzipped, against
 *    the 250 KB goal, and each view's own chunk;
 *  - time to the first interactive view: navigation start to the beads board of a 500-bead city drawn (its
 *    columns' first cards, nothing still loading) and its event stream live, with a cold cache (a new browser
 *    context each time) and a warm one;
 *  - scrolling a 10,000-bead board: the open column scrolled from top to bottom in 4 s while its pages load,
 *    frames drawn and frames dropped (a frame taking more than one 60 Hz interval drops the ones it spans);
 *  - frames while 500 events/s arrive (5 s, appended to the city's log as any writer may): frames drawn and
 *    frames longer than 50 ms, on the events view (rendered once per animation frame) and the city overview;
 *  - the page's JS heap after 36,000 events (an hour of a busy city at 10 events/s), on the same two views;
 *  - the beads board's HTTP requests per 100 bead events (`ui-bead-events.ts`).
 * Prints tables and writes `.bench-out/ui.json`. Run with `npm run bench -- ui`.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { EventLog } from '../shared/events/event-log.js';
import { cityPaths } from '../shared/paths.js';
import { launchChromium } from '../test/helpers/browser.js';
import { CityApi } from '../test/helpers/city-api.js';
import { TestSupervisor } from '../test/helpers/supervisor.js';
import { benchRoot } from './bench-root.js';
import { measureBeadEventRequests, printBeadEventRequests } from './ui-bead-events.js';
import { round, summarize, type Summary } from './stats.js';
import { formatTable, ms } from './table.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST_UI = join(repoRoot, 'dist', 'ui');
const OUT_FILE = join(repoRoot, '.bench-out', 'ui.json');
const CITY = 'dash';
const BEADS = 500;
const LOADS = 8;
const RATE = 500;
const RATE_SECONDS = 5;
const HOUR_EVENTS = 36_000;
const BIG_CITY = 'big';
const BIG_BEADS = 10_000;
const SCROLL_SECONDS = 4;
const GOAL_KB = 250;

interface Sized {
  file: string;
  bytes: number;
  gzipped: number;
}

function sized(file: string): Sized {
  const body = readFileSync(join(DIST_UI, file));
  return { file, bytes: body.length, gzipped: gzipSync(body, { level: 9 }).length };
}

/** The first view's files (what index.html loads before anything is clicked) and every other chunk. */
function bundleSizes(): { firstView: Sized[]; others: Sized[] } {
  const html = readFileSync(join(DIST_UI, 'index.html'), 'utf8');
  const first = [...html.matchAll(/(?:src|href)="\/ui\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
  const all = readdirSync(join(DIST_UI, 'assets'))
    .filter((f) => /\.(js|css)$/.test(f) && statSync(join(DIST_UI, 'assets', f)).isFile())
    .map((f) => `assets/${f}`);
  return { firstView: first.map(sized), others: all.filter((f) => !first.includes(f)).map(sized) };
}

const kb = (bytes: number) => (bytes / 1024).toFixed(1);

/**
 * Navigation start to the view drawn (the board's columns with their first cards, nothing still loading), its
 * stream live and the main thread free again, in ms, by the page's own clock: polled with a cheap DOM check.
 */
async function timeToInteractive(page: Page, url: string): Promise<number> {
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction(
    () => {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const doc = (globalThis as any).document;
      return (
        Boolean(doc.querySelector('.live-live')) &&
        doc.querySelectorAll('.card a').length > 0 &&
        !doc.querySelector('[aria-busy="true"], .card.placeholder')
      );
    },
    undefined,
    { polling: 'raf' },
  );
  // The first frame after it: what was drawn is on the screen and the page takes input.
  return page.evaluate<number>('new Promise((r) => requestAnimationFrame(() => r(performance.now())))');
}

/**
 * Scrolls the open column of a 10,000-bead board from top to bottom in `seconds` (a step every animation frame),
 * then waits for its oldest bead: frame durations while it scrolls, the rows in the document at most, how long
 * the last page took to arrive after the scroll reached the end.
 */
const SCROLL_BOARD = (seconds: number) => `new Promise((resolve) => {
  const el = document.querySelector('.scroller');
  const frames = [];
  let maxRows = 0;
  const started = performance.now();
  let last = started;
  const tick = (now) => {
    frames.push(now - last);
    last = now;
    maxRows = Math.max(maxRows, el.querySelectorAll('li').length);
    const f = Math.min(1, (now - started) / (${seconds} * 1000));
    el.scrollTop = f * (el.scrollHeight - el.clientHeight);
    if (f < 1) return requestAnimationFrame(tick);
    const ended = performance.now();
    const settle = () => {
      if (!el.querySelector('.placeholder') && el.querySelectorAll('.card a').length > 0)
        return resolve({ frames, maxRows, settleMs: performance.now() - ended });
      requestAnimationFrame(settle);
    };
    requestAnimationFrame(settle);
  };
  requestAnimationFrame(tick);
})`;

/** Frames a run of frame durations dropped: a frame of d ms spans round(d / 16.7) intervals, one of them its own. */
const droppedFrames = (durations: number[]) =>
  durations.reduce((n, d) => n + Math.max(0, Math.round(d / (1000 / 60)) - 1), 0);

/** Starts counting animation frames in the page (their durations, in ms). */
const START_FRAMES = `(() => {
  window.__frames = [];
  let last = performance.now();
  const tick = (now) => { window.__frames.push(now - last); last = now; if (!window.__stopFrames) requestAnimationFrame(tick); };
  window.__stopFrames = false;
  requestAnimationFrame(tick);
})()`;
const STOP_FRAMES = '(window.__stopFrames = true, window.__frames)';

async function appendPaced(log: EventLog, rate: number, seconds: number): Promise<number> {
  const total = rate * seconds;
  const started = performance.now();
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(log.appendCustom({ type: 'bench.ui', actor: 'bench', subject: `s-${i % 50}`, payload: { i } }));
  }
  await Promise.all(pending);
  return (performance.now() - started) / 1000;
}

/** The page's main-thread time so far (CDP Performance metrics, counted from `enable`), in ms. */
async function mainThread(cdp: CDPSession): Promise<{ task: number; script: number }> {
  const { metrics } = await cdp.send('Performance.getMetrics');
  const of = (name: string) => (metrics.find((m) => m.name === name)?.value ?? NaN) * 1000;
  return { task: of('TaskDuration'), script: of('ScriptDuration') };
}

async function heapMiB(page: Page): Promise<number> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  const { usedSize } = await cdp.send('Runtime.getHeapUsage');
  await cdp.detach();
  return usedSize / 1024 / 1024;
}

export async function runUi(): Promise<void> {
  let sup: TestSupervisor | undefined;
  let browser: Browser | undefined;
  let log: EventLog | undefined;
  const { root, cleanup } = benchRoot('ctl-bench-ui-', async () => {
    log?.close();
    await browser?.close();
    await sup?.stop();
  });
  try {
    const sizes = bundleSizes();
    const firstRaw = sizes.firstView.reduce((a, f) => a + f.bytes, 0);
    const firstGz = sizes.firstView.reduce((a, f) => a + f.gzipped, 0);
    console.log(
      formatTable(
        `dashboard bundle (dist/ui/): first view ${kb(firstGz)} KB gzipped (goal ≤ ${GOAL_KB} KB)`,
        ['file', 'KB', 'KB gzipped'],
        [...sizes.firstView, ...sizes.others].map((f) => [
          `${sizes.firstView.includes(f) ? '* ' : '  '}${f.file}`,
          kb(f.bytes),
          kb(f.gzipped),
        ]),
      ),
    );
    console.log('(* loaded by the first view; the others when their view opens)\n');

    sup = await TestSupervisor.start({ root });
    await sup.createCity(CITY);
    const api = new CityApi(sup, CITY);
    for (let i = BEADS; i >= 1; i -= 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, k) => api.create({ title: `bench bead ${i - k}` })).filter(Boolean),
      );
    }
    browser = await launchChromium();
    const url = `${sup.base}/ui/city/${CITY}/beads`;
    const cold: number[] = [];
    for (let i = 0; i < LOADS; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      cold.push(await timeToInteractive(page, url));
      await context.close();
    }
    const warm: number[] = [];
    {
      const context = await browser.newContext();
      const page = await context.newPage();
      await timeToInteractive(page, url);
      for (let i = 0; i < LOADS; i++) warm.push(await timeToInteractive(page, url));
      await context.close();
    }
    const row = (name: string, s: Summary) => [name, ms(s.median, 0), ms(s.p90, 0), ms(s.max, 0)];
    console.log(
      formatTable(
        `first interactive view: ${BEADS}-bead beads board drawn and live, ms (${LOADS} loads; goal ≤ 1000; load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')})`,
        ['cache', 'median', 'p90', 'max'],
        [row('cold (new context)', summarize(cold)), row('warm', summarize(warm))],
      ),
    );

    await sup.createCity(BIG_CITY);
    const big = new CityApi(sup, BIG_CITY);
    const creating = performance.now();
    for (let i = 0; i < BIG_BEADS; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, k) => big.create({ title: `big bead ${i + k}` })));
    }
    console.log(
      `\n(${BIG_BEADS} beads created through the API in ${((performance.now() - creating) / 1000).toFixed(0)} s)`,
    );
    const scrolls: {
      frames: number;
      dropped: number;
      long: number;
      worst: number;
      maxRows: number;
      settleMs: number;
    }[] = [];
    for (let i = 0; i < 3; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${sup.base}/ui/city/${BIG_CITY}/beads?status=open`);
      await page.getByRole('region', { name: `open beads, ${BIG_BEADS}` }).waitFor();
      await page.locator('.card a').first().waitFor();
      const run = await page.evaluate<{ frames: number[]; maxRows: number; settleMs: number }>(
        SCROLL_BOARD(SCROLL_SECONDS),
      );
      scrolls.push({
        frames: run.frames.length,
        dropped: droppedFrames(run.frames),
        long: run.frames.filter((d) => d > 50).length,
        worst: Math.max(...run.frames),
        maxRows: run.maxRows,
        settleMs: run.settleMs,
      });
      await context.close();
    }
    console.log(
      formatTable(
        `\nscrolling a ${BIG_BEADS}-bead board's open column top to bottom in ${SCROLL_SECONDS} s (~${60 * SCROLL_SECONDS} frames at 60 Hz)`,
        [
          'run',
          'frames',
          'frames dropped',
          'frames > 50 ms',
          'worst ms',
          'rows in the page at most',
          'last page after the end, ms',
        ],
        scrolls.map((r, i) => [
          String(i + 1),
          String(r.frames),
          String(r.dropped),
          String(r.long),
          ms(r.worst, 0),
          String(r.maxRows),
          ms(r.settleMs, 0),
        ]),
      ),
    );

    log = EventLog.at(cityPaths(sup.cityDir(CITY)).events, cityPaths(sup.cityDir(CITY)).eventsLock);
    const frames: Record<
      string,
      { seconds: number; frames: number; long: number; worst: number; busyPct: number; scriptPct: number }
    > = {};
    const heaps: Record<string, number> = {};
    for (const [view, path, name] of [
      ['events', '/ui/events', 'Events'],
      ['city overview', `/ui/city/${CITY}`, `City ${CITY}`],
    ] as const) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${sup.base}${path}`);
      await page.getByRole('heading', { level: 1, name }).waitFor();
      await page.getByText('Live', { exact: true }).first().waitFor();
      const cdp = await context.newCDPSession(page);
      await cdp.send('Performance.enable');
      await page.evaluate(START_FRAMES);
      const busyBefore = await mainThread(cdp);
      const seconds = await appendPaced(log, RATE, RATE_SECONDS);
      await new Promise((r) => setTimeout(r, 500));
      const durations = await page.evaluate<number[]>(STOP_FRAMES);
      const busyAfter = await mainThread(cdp);
      await cdp.detach();
      const wall = (seconds + 0.5) * 1000;
      frames[view] = {
        seconds,
        frames: durations.length,
        long: durations.filter((d) => d > 50).length,
        worst: Math.max(...durations),
        busyPct: (100 * (busyAfter.task - busyBefore.task)) / wall,
        scriptPct: (100 * (busyAfter.script - busyBefore.script)) / wall,
      };
      const before = await heapMiB(page);
      await appendPaced(log, 4_000, HOUR_EVENTS / 4_000);
      await new Promise((r) => setTimeout(r, 1_000));
      heaps[view] = await heapMiB(page);
      heaps[`${view} (before)`] = before;
      await context.close();
    }
    console.log(
      formatTable(
        `\nframes while ${RATE} events/s arrive for ${RATE_SECONDS} s (a 60 Hz screen draws ~${60 * RATE_SECONDS})`,
        ['view', 'frames', 'frames > 50 ms', 'worst ms', 'page main thread busy %', 'of it script %'],
        Object.entries(frames).map(([v, f]) => [
          v,
          String(f.frames),
          String(f.long),
          ms(f.worst, 0),
          f.busyPct.toFixed(0),
          f.scriptPct.toFixed(0),
        ]),
      ),
    );
    console.log(
      formatTable(
        `\nJS heap of the page, MiB, before and after ${HOUR_EVENTS} more events (an hour at 10 events/s)`,
        ['view', 'before', 'after'],
        ['events', 'city overview'].map((v) => [v, heaps[`${v} (before)`].toFixed(1), heaps[v].toFixed(1)]),
      ),
    );
    console.log('');
    const beadEvents = await measureBeadEventRequests(sup, browser);
    printBeadEventRequests(beadEvents);
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(
      OUT_FILE,
      JSON.stringify(
        {
          bundle: {
            first_view_bytes: firstRaw,
            first_view_gzipped: firstGz,
            files: [...sizes.firstView, ...sizes.others],
          },
          first_interactive_ms: { cold: summarize(cold), warm: summarize(warm) },
          board_scroll: scrolls,
          frames,
          heap_mib: Object.fromEntries(Object.entries(heaps).map(([k, v]) => [k, round(v, 1)])),
          board_requests_per_bead_events: beadEvents,
        },
        null,
        2,
      ),
    );
    console.log(`\nwrote ${OUT_FILE}`);
  } finally {
    await cleanup();
  }
}
