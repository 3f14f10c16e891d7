/**
 * Workflows benchmark: a real supervisor and controller, measuring
 *   1. instantiating a 100-step formula (`POST /formulas/{name}/cook`: 100 step beads, finalize and root, their
 *      edges and events): p50/p99 over 30 runs;
 *   2. 1,000 molecules in flight (3 steps each, none started): `GET /runs` (the newest 50, with the status
 *      counts of all 1,000) p50/p99 over 50 requests;
 *   3. 100 orders with cooldown triggers, none due: the order scheduler's evaluation (which orders are due), from
 *      `GET /status`, over 200 evaluations caused by moving the city's clock (CTL_CLOCK_FILE) a second at a
 *      time (goal ≤ 5 ms p50/p99).
 * Prints tables and writes `.bench-out/workflows.json`. Run with `npm run bench -- workflows`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { CSRF, tempDir } from '../test/helpers/supervisor.js';
import { startSessionCity, type SessionCity } from '../test/helpers/sessions.js';
import { waitUntil } from '../test/helpers/wait.js';
import { rounded, summarize } from './stats.js';
import { formatTable, ms } from './table.js';

const STEPS = 100;
const COOKS = 30;
const MOLECULES = 1000;
const RUNS_GETS = 50;
const ORDERS = 100;
const EVALUATIONS = 200;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'workflows.json');

/** A 100-step formula: ten chains of ten steps, the chains side by side. */
function bigFormula(): string {
  let text = 'formula = "big"\ndescription = "One hundred steps"\n';
  for (let chain = 0; chain < STEPS / 10; chain++) {
    for (let i = 0; i < 10; i++) {
      text += `\n[[steps]]\nid = "c${chain}s${i}"\ntitle = "Chain ${chain} step ${i}"\n`;
      if (i > 0) text += `needs = ["c${chain}s${i - 1}"]\n`;
    }
  }
  return text;
}

async function put(city: SessionCity, name: string, text: string): Promise<void> {
  const res = await fetch(city.api.url(`/formulas/${name}`), {
    method: 'PUT',
    headers: { ...CSRF, 'Content-Type': 'application/octet-stream' },
    body: text,
  });
  if (res.status !== 200) throw new Error(`PUT formula ${name}: ${res.status} ${await res.text()}`);
}

async function cook(city: SessionCity, name: string): Promise<number> {
  const started = performance.now();
  const res = await city.api.post<{ created: number }>(`/formulas/${name}/cook`, {});
  const took = performance.now() - started;
  if (res.status !== 201) throw new Error(`cook ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return took;
}

export async function runWorkflows(): Promise<void> {
  const clockFile = join(tempDir('ctl-bench-clock-'), 'now');
  writeFileSync(clockFile, '2026-06-01T00:00:00Z');
  const city = await startSessionCity('workflows', '', { CTL_CLOCK_FILE: clockFile });
  let cooks: number[];
  let runsGets: number[];
  let orders: { p50_ms: number; p99_ms: number; runs: number };
  try {
    // 1. A 100-step formula, instantiated.
    await put(city, 'big', bigFormula());
    await cook(city, 'big');
    cooks = [];
    for (let i = 0; i < COOKS; i++) cooks.push(await cook(city, 'big'));

    // 2. 1,000 molecules in flight, then the runs list.
    await put(
      city,
      'small',
      '[[steps]]\nid = "a"\ntitle = "A"\n[[steps]]\nid = "b"\ntitle = "B"\nneeds = ["a"]\n[[steps]]\nid = "c"\ntitle = "C"\nneeds = ["b"]\n',
    );
    for (let i = 0; i < MOLECULES - COOKS - 1; i++) await cook(city, 'small');
    runsGets = [];
    for (let i = 0; i < RUNS_GETS + 5; i++) {
      const started = performance.now();
      const res = await city.api.get<{ runs: unknown[]; status_counts: { pending: number } }>('/runs');
      if (i >= 5) runsGets.push(performance.now() - started);
      if (res.body.status_counts.pending !== MOLECULES)
        throw new Error(`expected ${MOLECULES} pending runs, got ${JSON.stringify(res.body.status_counts)}`);
    }

    // 3. 100 cooldown orders: each fires once (never run), then none is due while the clock moves.
    const dir = join(city.dir, 'orders');
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < ORDERS; i++) {
      writeFileSync(join(dir, `o${i}.toml`), `[order]\ntrigger = "cooldown"\ninterval = "24h"\nexec = "true"\n`);
    }
    await waitUntil(
      'every order to have fired once',
      async () => {
        const res = await city.api.get<{ checks: { due: boolean; last_run_outcome?: string }[] }>('/orders/check');
        return res.body.checks.length === ORDERS && res.body.checks.every((c) => c.last_run_outcome === 'success');
      },
      60_000,
      200,
    );
    const before = (await city.api.get<{ orders: { runs: number } }>('/status')).body.orders.runs;
    const start = Date.parse('2026-06-01T00:00:10Z');
    for (let i = 0; i < EVALUATIONS; i++) {
      writeFileSync(clockFile, new Date(start + i * 1000).toISOString());
      const want = before + i + 1;
      await waitUntil(
        'an evaluation',
        async () => (await city.api.get<{ orders: { runs: number } }>('/status')).body.orders.runs >= want,
        5000,
        5,
      );
    }
    orders = (await city.api.get<{ orders: { p50_ms: number; p99_ms: number; runs: number } }>('/status')).body.orders;
    const fired = await city.api.get<{ entries: unknown[] }>('/orders/history?limit=1000');
    if (fired.body.entries.length !== ORDERS)
      throw new Error(`expected ${ORDERS} firings, got ${fired.body.entries.length}`);
  } finally {
    await city.sup.cleanup();
  }
  const cookS = rounded(summarize(cooks));
  const runsS = rounded(summarize(runsGets));
  console.log(
    formatTable(
      `Instantiate a ${STEPS}-step formula (POST /formulas/big/cook: ${STEPS + 2} beads)`,
      ['runs', 'p50', 'p99'],
      [[String(cooks.length), ms(cookS.median), ms(cookS.p99)]],
    ),
  );
  console.log(
    formatTable(
      `GET /runs with ${MOLECULES} molecules in flight (newest 50, counts of all)`,
      ['requests', 'p50', 'p99'],
      [[String(runsGets.length), ms(runsS.median), ms(runsS.p99)]],
    ),
  );
  console.log(
    formatTable(
      `${ORDERS} cooldown orders, none due: one evaluation of the order scheduler (goal ≤ 5 ms)`,
      ['evaluations (last 256)', 'p50', 'p99'],
      [[String(Math.min(orders.runs, 256)), ms(orders.p50_ms, 3), ms(orders.p99_ms, 3)]],
    ),
  );
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(
    OUT_FILE,
    `${JSON.stringify({ cook_100_steps_ms: cookS, runs_list_1000_ms: runsS, order_evaluation_100_ms: orders }, null, 2)}\n`,
  );
  console.log(`wrote ${OUT_FILE}`);
}
