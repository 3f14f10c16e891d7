/**
 * Bead store benchmark (issue 4), on a real supervisor and real controllers, once per backend (SQLite, the
 * default, and the journal):
 *   1. create 100,000 beads through the supervisor's public API, 32 clients at once: beads/s and latency; the
 *      controller's RSS at 100,000 beads, then again after a restart (what opening the store costs), and the
 *      store's open time from the controller's own log;
 *   2. `GET …/beads/ready` over 100,000 beads with 10% open (some of those blocked by an open dependency), and a
 *      filtered list: latency through the API. That store is built in-process with the backend's own class (the
 *      API cannot create closed beads) and then registered, so the controller opens it cold;
 *   3. the store open time and first `ready` in-process, without HTTP or a controller around it.
 * Prints tables and writes `.bench-out/beads.json`. `BENCH_BEADS` and `BENCH_BEADS_CONCURRENCY` override the
 * 100,000 and 32; `BENCH_BEADS_BACKENDS=sqlite` measures one backend. Run with `npm run bench -- beads` (or, after a build, `npx tsx bench/run.ts beads`).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { BeadStore } from '../controller/beads/bead-store.js';
import { JournalBeadStore } from '../controller/beads/journal-store.js';
import type { BeadBackend } from '../controller/beads/open-store.js';
import { SqliteBeadStore } from '../controller/beads/sqlite-store.js';
import { cityPaths } from '../shared/paths.js';
import { CSRF, TestSupervisor } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { benchRoot } from './bench-root.js';
import { get, getJson, keepAliveAgent, sendJson, sequentialLatencies, type GetTarget } from './http.js';
import { memoryKiB, type MemoryKiB } from './proc.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const envNumber = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};
const BEADS = envNumber('BENCH_BEADS', 100_000);
const CONCURRENCY = envNumber('BENCH_BEADS_CONCURRENCY', 32);
/** One bead in ten stays open for the ready measurement. */
const OPEN_EVERY = 10;
const READY_WARMUP = 20;
const READY_SAMPLES = 200;
const BACKENDS: BeadBackend[] = (process.env.BENCH_BEADS_BACKENDS ?? 'sqlite,journal')
  .split(',')
  .filter((b): b is BeadBackend => b === 'sqlite' || b === 'journal');

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'beads.json');

interface Meta {
  date: string;
  node: string;
  cores: number;
  cpu_model: string;
  kernel: string;
  loadavg_at_start: number[];
}

// ---------------------------------------------------------------------------------------------------------------
// Cities

/** A city directory whose `city.toml` picks the bead backend and a fixed id prefix, registered and running. */
async function registerCity(sup: TestSupervisor, name: string, backend: BeadBackend): Promise<string> {
  const dir = sup.cityDir(name);
  writeCityConfig(dir, backend);
  const { data, error, response } = await sup.api.POST('/v0/cities/register', {
    params: { header: CSRF },
    body: { path: dir, name },
  });
  if (!data) throw new Error(`register ${name}: HTTP ${response.status}: ${JSON.stringify(error)}`);
  await waitUntil(`${name} to run`, async () => (await sup.city(name))?.running === true, 120_000);
  return dir;
}

function writeCityConfig(dir: string, backend: BeadBackend): void {
  mkdirSync(cityPaths(dir).runtimeDir, { recursive: true });
  writeFileSync(
    cityPaths(dir).config,
    ['[workspace]', 'prefix = "bn"', '', '[beads]', `backend = "${backend}"`, ''].join('\n'),
  );
}

async function controllerPid(sup: TestSupervisor, name: string): Promise<number> {
  const city = await sup.city(name);
  if (!city?.running || city.pid === undefined) throw new Error(`city ${name} is not running`);
  return city.pid;
}

/** Stops and starts the city's controller; the time `POST …/start` took (it answers once the city runs). */
async function restart(sup: TestSupervisor, name: string): Promise<number> {
  const stopped = await sup.api.POST('/v0/city/{cityName}/stop', {
    params: { path: { cityName: name }, header: CSRF },
  });
  if (!stopped.data) throw new Error(`stop ${name}: HTTP ${stopped.response.status}`);
  const started = performance.now();
  const res = await sup.api.POST('/v0/city/{cityName}/start', { params: { path: { cityName: name }, header: CSRF } });
  if (!res.data) throw new Error(`start ${name}: HTTP ${res.response.status}: ${JSON.stringify(res.error)}`);
  return performance.now() - started;
}

interface LogLine {
  time: number;
  pid: number;
  msg?: string;
  phase?: string;
  beads?: number;
}

/**
 * How long the controller (the latest one, by pid) took to open its bead store: from entering the
 * `starting_bead_store` phase to its `bead store open` line, both in `.ctl/controller.log`.
 */
function storeOpenFromLog(dir: string, pid: number): { ms: number; beads: number } {
  const lines = readFileSync(cityPaths(dir).controllerLog, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine)
    .filter((l) => l.pid === pid);
  const entered = lines.find((l) => l.phase === 'starting_bead_store');
  const open = lines.find((l) => l.msg === 'bead store open');
  if (!entered || !open) throw new Error(`no bead store open lines for pid ${pid} in ${dir}`);
  return { ms: open.time - entered.time, beads: open.beads ?? NaN };
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Creates through the API

interface CreateResult {
  beads: number;
  concurrency: number;
  elapsedMs: number;
  beadsPerSecond: number;
  latency: Summary;
  failed: number;
}

function cityTarget(sup: TestSupervisor, name: string, path: string, agent: GetTarget['options']['agent']): GetTarget {
  return {
    label: `${name} ${path}`,
    options: { host: '127.0.0.1', port: sup.port, path: `/v0/city/${name}${path}`, agent },
  };
}

async function createThroughApi(sup: TestSupervisor, name: string): Promise<CreateResult> {
  const agent = keepAliveAgent(CONCURRENCY);
  const target = cityTarget(sup, name, '/beads', agent);
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  let lastReport = performance.now();
  const started = performance.now();
  const client = async () => {
    while (next < BEADS) {
      const i = next++;
      const body = {
        title: `bench bead ${i}`,
        type: i % 7 === 0 ? 'bug' : 'task',
        priority: i % 5,
        labels: [`area-${i % 20}`],
        ...(i % 3 === 0 ? { assignee: `agent-${i % 8}` } : {}),
      };
      const t0 = performance.now();
      const res = await sendJson(target, 'POST', body);
      latencies.push(performance.now() - t0);
      if (res.status !== 201) {
        failed++;
        if (failed <= 3) console.error(`  create ${i}: HTTP ${res.status}: ${res.body.toString().slice(0, 300)}`);
      }
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        const rate = (latencies.length / (lastReport - started)) * 1000;
        console.log(`  … ${latencies.length} created (${rate.toFixed(0)}/s)`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  const elapsedMs = performance.now() - started;
  agent.destroy();
  return {
    beads: BEADS,
    concurrency: CONCURRENCY,
    elapsedMs,
    beadsPerSecond: ((BEADS - failed) / elapsedMs) * 1000,
    latency: summarize(latencies),
    failed,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 2. A store with 10% open, built in-process

interface BuiltStore {
  buildMs: number;
  open: number;
  ready: number;
}

function openStore(backend: BeadBackend, runtimeDir: string): BeadStore {
  return backend === 'sqlite' ? SqliteBeadStore.open(runtimeDir, 'bn') : JournalBeadStore.open(runtimeDir, 'bn');
}

/**
 * BEADS beads; one in ten stays open, the rest are closed. Of the open ones, every fourth has a `blocks`
 * dependency on the open bead before it (so it is not ready) and every fourth another on a closed bead (which
 * does not hold it back): `ready` has to apply the whole rule, not just read the open ones.
 */
function buildStore(backend: BeadBackend, dir: string): BuiltStore {
  writeCityConfig(dir, backend);
  const started = performance.now();
  const store = openStore(backend, cityPaths(dir).runtimeDir);
  let open = 0;
  let previousOpen: string | undefined;
  try {
    for (let i = 0; i < BEADS; i++) {
      const bead = store.create({
        title: `bench bead ${i}`,
        type: i % 7 === 0 ? 'bug' : 'task',
        priority: i % 5,
        labels: [`area-${i % 20}`],
        ...(i % 3 === 0 ? { assignee: `agent-${i % 8}` } : {}),
      });
      if (i % OPEN_EVERY !== 0) {
        store.update(bead.id, { status: 'closed' });
        continue;
      }
      open++;
      if (open % 4 === 1 && previousOpen) store.addDependency(bead.id, previousOpen, 'blocks');
      if (open % 4 === 3 && i > 0) store.addDependency(bead.id, `bn-${i}`, 'waits-for');
      previousOpen = bead.id;
      if (i % 10_000 === 0 && i > 0) console.log(`  … ${i} built`);
    }
    return { buildMs: performance.now() - started, open, ready: store.ready({ limit: 1 }).total };
  } finally {
    store.close();
  }
}

interface InProcessOpen {
  openMs: number;
  firstReadyMs: number;
  readyMs: Summary;
}

/** Opens the built store in this process: how long opening takes, and `ready(100)` cold and warm. */
function openInProcess(backend: BeadBackend, dir: string): InProcessOpen {
  const t0 = performance.now();
  const store = openStore(backend, cityPaths(dir).runtimeDir);
  const openMs = performance.now() - t0;
  try {
    const t1 = performance.now();
    store.ready({ limit: 100 });
    const firstReadyMs = performance.now() - t1;
    const samples: number[] = [];
    for (let i = 0; i < READY_SAMPLES; i++) {
      const t = performance.now();
      store.ready({ limit: 100 });
      samples.push(performance.now() - t);
    }
    return { openMs, firstReadyMs, readyMs: summarize(samples) };
  } finally {
    store.close();
  }
}

interface ReadQueries {
  readyTotal: number;
  ready: Summary;
  readyAssignee: Summary;
  listOpenLabel: Summary;
  listAll: Summary;
}

/** Latencies of `ready` and of filtered lists, one request after another, through the supervisor. */
async function readLatencies(sup: TestSupervisor, name: string): Promise<ReadQueries> {
  const agent = keepAliveAgent(1);
  const measure = async (path: string) => {
    const target = cityTarget(sup, name, path, agent);
    await sequentialLatencies(target, READY_WARMUP);
    return summarize(await sequentialLatencies(target, READY_SAMPLES));
  };
  try {
    const first = await getJson<{ total: number; items: unknown[] }>(cityTarget(sup, name, '/beads/ready', agent));
    return {
      readyTotal: first.total,
      ready: await measure('/beads/ready?limit=100'),
      // Filters that match open beads (the open ones are every 10th: agents 0, 2, 4, 6; areas 0 and 10), so
      // each query has a page to read, not just an empty answer.
      readyAssignee: await measure('/beads/ready?assignee=agent-2&limit=100'),
      listOpenLabel: await measure('/beads?status=open&label=area-10&limit=100'),
      listAll: await measure('/beads?all=true&limit=100'),
    };
  } finally {
    agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Report

interface BackendReport {
  backend: BeadBackend;
  create: CreateResult;
  rssAfterCreates: MemoryKiB;
  restartMs: number;
  rssAfterRestart: MemoryKiB;
  storeOpenAfterCreates: { ms: number; beads: number };
  built: BuiltStore;
  inProcess: InProcessOpen;
  registeredOpen: { ms: number; beads: number };
  rssReadyCity: MemoryKiB;
  reads: ReadQueries;
}

function printReport(meta: Meta, reports: BackendReport[]): void {
  const cols = (f: (r: BackendReport) => string) => reports.map(f);
  const header = ['', ...reports.map((r) => r.backend)];
  console.log('');
  console.log(
    `ctl beads benchmark — ${meta.date}, node ${meta.node}, ${meta.cores} × ${meta.cpu_model}, ` +
      `load ${meta.loadavg_at_start.join(' ')}`,
  );
  console.log('');
  console.log(
    formatTable(`Create ${BEADS} beads through the API (${CONCURRENCY} clients, via the supervisor)`, header, [
      ['beads/s', ...cols((r) => r.create.beadsPerSecond.toFixed(0))],
      ['total s', ...cols((r) => (r.create.elapsedMs / 1000).toFixed(1))],
      ['failed', ...cols((r) => String(r.create.failed))],
      ['latency median ms', ...cols((r) => ms(r.create.latency.median))],
      ['latency p99 ms', ...cols((r) => ms(r.create.latency.p99))],
      ['latency max ms', ...cols((r) => ms(r.create.latency.max))],
    ]),
  );
  console.log('');
  console.log(
    formatTable(`Controller at ${BEADS} beads (MiB)`, header, [
      ['RSS after the creates', ...cols((r) => mib(r.rssAfterCreates.rss))],
      ['RSS after a restart', ...cols((r) => mib(r.rssAfterRestart.rss))],
      ['PSS after a restart', ...cols((r) => mib(r.rssAfterRestart.pss))],
      ['RSS, 10%-open city', ...cols((r) => mib(r.rssReadyCity.rss))],
    ]),
  );
  console.log('');
  console.log(
    formatTable(`Opening a store of ${BEADS} beads (ms)`, header, [
      ['controller, API-made store', ...cols((r) => ms(r.storeOpenAfterCreates.ms, 0))],
      ['controller, 10%-open store', ...cols((r) => ms(r.registeredOpen.ms, 0))],
      ['POST …/start → running', ...cols((r) => ms(r.restartMs, 0))],
      ['in-process open', ...cols((r) => ms(r.inProcess.openMs, 1))],
      ['in-process first ready(100)', ...cols((r) => ms(r.inProcess.firstReadyMs, 2))],
    ]),
  );
  console.log('');
  console.log(
    formatTable(
      `Reads over ${BEADS} beads, 10% open (${READY_SAMPLES} sequential requests via the supervisor; median / p99 ms)`,
      header,
      [
        ['ready total', ...cols((r) => String(r.reads.readyTotal))],
        ['ready?limit=100', ...cols((r) => `${ms(r.reads.ready.median)} / ${ms(r.reads.ready.p99)}`)],
        ['ready?assignee=…', ...cols((r) => `${ms(r.reads.readyAssignee.median)} / ${ms(r.reads.readyAssignee.p99)}`)],
        [
          'beads?status=open&label=…',
          ...cols((r) => `${ms(r.reads.listOpenLabel.median)} / ${ms(r.reads.listOpenLabel.p99)}`),
        ],
        ['beads?all=true', ...cols((r) => `${ms(r.reads.listAll.median)} / ${ms(r.reads.listAll.p99)}`)],
        [
          'in-process ready(100)',
          ...cols((r) => `${ms(r.inProcess.readyMs.median, 3)} / ${ms(r.inProcess.readyMs.p99, 3)}`),
        ],
      ],
    ),
  );
  console.log('');
}

const memoryJson = (m: MemoryKiB) => ({ rss_mib: round(m.rss / 1024, 1), pss_mib: round(m.pss / 1024, 1) });

function reportJson(r: BackendReport) {
  return {
    backend: r.backend,
    create: {
      beads: r.create.beads,
      concurrency: r.create.concurrency,
      failed: r.create.failed,
      elapsed_s: round(r.create.elapsedMs / 1000, 2),
      beads_per_second: round(r.create.beadsPerSecond, 0),
      latency_ms: rounded(r.create.latency),
    },
    controller_memory: {
      after_creates: memoryJson(r.rssAfterCreates),
      after_restart: memoryJson(r.rssAfterRestart),
      ready_city: memoryJson(r.rssReadyCity),
    },
    open: {
      controller_api_made_store_ms: r.storeOpenAfterCreates.ms,
      controller_ready_store_ms: r.registeredOpen.ms,
      start_to_running_ms: round(r.restartMs, 1),
      in_process_ms: round(r.inProcess.openMs, 2),
      in_process_first_ready_ms: round(r.inProcess.firstReadyMs, 3),
    },
    ready_store: { build_s: round(r.built.buildMs / 1000, 1), open: r.built.open, ready: r.built.ready },
    reads_ms: {
      ready: rounded(r.reads.ready),
      ready_assignee: rounded(r.reads.readyAssignee),
      list_open_label: rounded(r.reads.listOpenLabel),
      list_all: rounded(r.reads.listAll),
      in_process_ready: rounded(r.inProcess.readyMs, 4),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------

async function benchBackend(sup: TestSupervisor, backend: BeadBackend): Promise<BackendReport> {
  const apiCity = `beads-${backend}`;
  console.log(`[${backend}] registering ${apiCity}, creating ${BEADS} beads through the API…`);
  const apiDir = await registerCity(sup, apiCity, backend);
  const create = await createThroughApi(sup, apiCity);
  await sleep(300);
  const rssAfterCreates = memoryKiB(await controllerPid(sup, apiCity));
  console.log(`[${backend}] restarting ${apiCity}…`);
  const restartMs = await restart(sup, apiCity);
  const restartedPid = await controllerPid(sup, apiCity);
  // Let the new controller settle (its first requests, the tail's catch-up) before reading its memory.
  await get(cityTarget(sup, apiCity, '/beads/ready?limit=100', undefined));
  await sleep(500);
  const rssAfterRestart = memoryKiB(restartedPid);
  const storeOpenAfterCreates = storeOpenFromLog(apiDir, restartedPid);
  await sup.api.POST('/v0/city/{cityName}/stop', { params: { path: { cityName: apiCity }, header: CSRF } });

  const readyCity = `ready-${backend}`;
  const readyDir = sup.cityDir(readyCity);
  console.log(`[${backend}] building ${BEADS} beads with 10% open in-process…`);
  const built = buildStore(backend, readyDir);
  const inProcess = openInProcess(backend, readyDir);
  console.log(`[${backend}] registering ${readyCity}, measuring reads…`);
  await registerCity(sup, readyCity, backend);
  const readyPid = await controllerPid(sup, readyCity);
  const registeredOpen = storeOpenFromLog(readyDir, readyPid);
  const reads = await readLatencies(sup, readyCity);
  if (reads.readyTotal !== built.ready) {
    throw new Error(`ready through the API says ${reads.readyTotal}, the store said ${built.ready}`);
  }
  const rssReadyCity = memoryKiB(readyPid);
  await sup.api.POST('/v0/city/{cityName}/stop', { params: { path: { cityName: readyCity }, header: CSRF } });
  return {
    backend,
    create,
    rssAfterCreates,
    restartMs,
    rssAfterRestart,
    storeOpenAfterCreates,
    built,
    inProcess,
    registeredOpen,
    rssReadyCity,
    reads,
  };
}

export async function runBeads(): Promise<void> {
  const wallStart = performance.now();
  const meta: Meta = {
    date: new Date().toISOString(),
    node: process.version,
    cores: availableParallelism(),
    cpu_model: cpus()[0]?.model ?? 'unknown',
    kernel: release(),
    loadavg_at_start: loadavg().map((l) => round(l, 2)),
  };
  console.log(`ctl beads benchmark: ${BEADS} beads, backends ${BACKENDS.join(', ')} — starting a supervisor…`);
  let sup: TestSupervisor | undefined;
  const { root, cleanup, interrupted } = benchRoot('ctl-bench-beads-', async () => {
    if (sup) await sup.cleanup();
  });

  try {
    sup = await TestSupervisor.start({ root });
    const reports: BackendReport[] = [];
    for (const backend of BACKENDS) reports.push(await benchBackend(sup, backend));
    await cleanup();
    printReport(meta, reports);
    const report = {
      meta: {
        ...meta,
        beads: BEADS,
        loadavg_at_end: loadavg().map((l) => round(l, 2)),
        total_runtime_s: round((performance.now() - wallStart) / 1000, 1),
      },
      backends: reports.map(reportJson),
    };
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(OUT_FILE, JSON.stringify(report, null, 2) + '\n');
    console.log(`total ${report.meta.total_runtime_s} s; wrote ${OUT_FILE}`);
  } catch (err) {
    if (interrupted()) return;
    if (sup?.output) console.error(`--- supervisor output (tail) ---\n${sup.output.slice(-4000)}`);
    throw err;
  } finally {
    await cleanup();
  }
}
