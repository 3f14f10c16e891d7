/**
 * Cold and warm paths, beside bare-Node baselines measured in the same run (issue 20's goals):
 *   - baselines: `node -e 0`, and a GET to a bare Node HTTP server on loopback (the same client and pool);
 *   - `ctl version`, `ctl help`, `ctl bead list` against a running city (a fresh process each time);
 *   - city create → its terminal event, and the first request of each route family to each of 10 fresh
 *     controllers (p50/p99 over the cities), then the same requests again (warm);
 *   - GET …/status straight to a controller's socket and through the supervisor: the proxy's extra hop beside a
 *     bare loopback round trip;
 *   - POST …/events p99 over 10 cities at 200/s: cold (fresh controllers, the first request to each included)
 *     and warm;
 *   - an idle controller's RSS and PSS, and the total PSS of 20 idle controllers (and the supervisor's).
 * Prints one table, each figure beside its goal, and writes `.bench-out/cold.json`. `npm run bench -- cold`.
 * Another build, alternating with this one (timings here swing with the machine's load; memory does not):
 *   CTL_TEST_ENTRY=/other/checkout/dist/cli/main.js BENCH_COLD_OUT=.bench-out/cold-other.json npx tsx bench/run.ts cold
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cityPaths, ctlEntryPath } from '../shared/paths.js';
import { TestSupervisor } from '../test/helpers/supervisor.js';
import { benchRoot } from './bench-root.js';
import { get, keepAliveAgent, sendJson, sequentialLatencies, type GetTarget } from './http.js';
import { cpuMs, memoryKiB } from './proc.js';
import { round, summarize } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const FRESH_CITIES = 10;
const SPAWN_RUNS = 10;
const ROUND_TRIPS = 2000;
const EMIT_RATE_PER_S = 200;
const EMIT_DURATION_MS = 5000;
const IDLE_CITIES = 20;

/** One GET per route family, in the order a person's first commands would ask. */
const FAMILIES: Record<string, string> = {
  status: '/status',
  beads: '/beads',
  events: '/events?limit=1',
  sessions: '/sessions',
  agents: '/agents',
  mail: '/mail',
  formulas: '/formulas',
  runs: '/runs',
  orders: '/orders',
  providers: '/providers',
  config: '/config',
  convoys: '/convoys',
  rigs: '/rigs',
  services: '/services',
  usage: '/usage',
  packs: '/packs',
  extmsg: '/extmsg/bindings',
};

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// BENCH_COLD_OUT names another file, to keep each build's figures apart in an A/B run (CTL_TEST_ENTRY: the build).
const OUT_FILE = process.env.BENCH_COLD_OUT ?? join(repoRoot, '.bench-out', 'cold.json');

function spawnMs(args: string[], env: NodeJS.ProcessEnv = process.env): number {
  const t0 = performance.now();
  execFileSync(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  return performance.now() - t0;
}

function spawnRuns(args: string[], env?: NodeJS.ProcessEnv): number[] {
  spawnMs(args, env); // the page cache and the compile cache, as for anyone's second command
  return Array.from({ length: SPAWN_RUNS }, () => spawnMs(args, env));
}

async function bareLoopback(): Promise<number[]> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"ok"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const target: GetTarget = {
    label: 'bare',
    options: { host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/', agent: keepAliveAgent(1) },
  };
  await sequentialLatencies(target, 300);
  const out = await sequentialLatencies(target, ROUND_TRIPS);
  server.close();
  return out;
}

/** A goal beside whether this run met it. */
function goal(text: string, met: boolean): string {
  return `${text} ${met ? 'met' : 'MISSED'}`;
}

async function timedGet(target: GetTarget): Promise<number> {
  const t0 = performance.now();
  const res = await get(target);
  if (res.status !== 200) throw new Error(`${target.options.path}: HTTP ${res.status}: ${res.body.toString()}`);
  return performance.now() - t0;
}

async function emit(sup: TestSupervisor, cities: string[]): Promise<number[]> {
  const agent = keepAliveAgent(64);
  const targets = cities.map((city) => ({
    label: city,
    options: { host: '127.0.0.1', port: sup.port, path: `/v0/city/${city}/events`, agent },
  }));
  const latencies: number[] = [];
  const total = (EMIT_RATE_PER_S * EMIT_DURATION_MS) / 1000;
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = start + (i * 1000) / EMIT_RATE_PER_S - performance.now();
    if (wait > 1) await sleep(wait);
    const sent = performance.now();
    inflight.push(
      sendJson(targets[i % targets.length], 'POST', { type: 'bench.emit', actor: 'bench', payload: { i } }).then(
        (res) => {
          if (res.status !== 201) throw new Error(`POST events: HTTP ${res.status}`);
          latencies.push(performance.now() - sent);
        },
      ),
    );
  }
  await Promise.all(inflight);
  agent.destroy();
  return latencies;
}

export async function runCold(): Promise<void> {
  let sup: TestSupervisor | undefined;
  const { root, cleanup } = benchRoot('ctl-bench-cold-', async () => {
    await sup?.cleanup();
  });
  const t0 = performance.now();
  console.log(
    `ctl cold-path benchmark: node ${process.version}, ${availableParallelism()} cores, load ${loadavg()[0]}`,
  );
  try {
    const entry = process.env.CTL_TEST_ENTRY ?? ctlEntryPath();
    const nodeE0 = spawnRuns(['-e', '0']);
    const bare = await bareLoopback();
    sup = await TestSupervisor.start({ root });
    const env = { ...sup.env };
    const version = spawnRuns([entry, 'version'], env);
    const help = spawnRuns([entry, 'help'], env);

    // Fresh cities, one after another: create → terminal event, then each family's first request, then again.
    const create: number[] = [];
    // CPU time a controller used, from its start to the create's answer, and for its first request of each
    // family (its HTTP stack's load included): on a busy machine these swing far less than the wall times.
    const startCpu: number[] = [];
    const firstCpu: number[] = [];
    const first: Record<string, number[]> = {};
    const again: Record<string, number[]> = {};
    const cities: string[] = [];
    for (let i = 0; i < FRESH_CITIES; i++) {
      const name = `cold-${i}`;
      const c0 = performance.now();
      await sup.createCity(name);
      create.push(performance.now() - c0);
      cities.push(name);
      const pid = (await sup.city(name))?.pid;
      const cpuAtCreate = pid ? cpuMs(pid) : NaN;
      startCpu.push(cpuAtCreate);
      const agent = keepAliveAgent(1);
      for (const [family, path] of Object.entries(FAMILIES)) {
        const target = {
          label: family,
          options: { host: '127.0.0.1', port: sup.port, path: `/v0/city/${name}${path}`, agent },
        };
        (first[family] ??= []).push(await timedGet(target));
      }
      firstCpu.push(pid ? cpuMs(pid) - cpuAtCreate : NaN);
      for (const [family, path] of Object.entries(FAMILIES)) {
        const target = {
          label: family,
          options: { host: '127.0.0.1', port: sup.port, path: `/v0/city/${name}${path}`, agent },
        };
        (again[family] ??= []).push(await timedGet(target));
      }
      agent.destroy();
    }
    const beadList = spawnRuns([entry, '--city', cities[0], 'bead', 'list'], env);

    // The proxy's extra hop: GET /status straight to the socket and through the supervisor, alternating blocks.
    const city = cities[0];
    const proxied: GetTarget = {
      label: 'proxied',
      options: { host: '127.0.0.1', port: sup.port, path: `/v0/city/${city}/status`, agent: keepAliveAgent(1) },
    };
    const direct: GetTarget = {
      label: 'direct',
      options: {
        socketPath: cityPaths(sup.cityDir(city)).socket,
        path: `/v0/city/${city}/status`,
        headers: { host: 'localhost' },
        agent: keepAliveAgent(1),
      },
    };
    await sequentialLatencies(proxied, 300);
    await sequentialLatencies(direct, 300);
    const viaProxy: number[] = [];
    const straight: number[] = [];
    for (let block = 0; block < 4; block++) {
      viaProxy.push(...(await sequentialLatencies(proxied, ROUND_TRIPS / 4)));
      straight.push(...(await sequentialLatencies(direct, ROUND_TRIPS / 4)));
    }

    // POST …/events over 10 cities whose controllers were never asked anything, then again (warm).
    const emitCities = Array.from({ length: 10 }, (_, i) => `emit-${i}`);
    for (const name of emitCities) await sup.createCity(name);
    const emitCold = await emit(sup, emitCities);
    const emitWarm = await emit(sup, emitCities);

    // Twenty more controllers, never asked anything: one's RSS and PSS, and their total PSS (shared pages, the
    // node binary's above all, divided among the processes sharing them) beside the supervisor's.
    const idleCities = Array.from({ length: IDLE_CITIES }, (_, i) => `idle-${i}`);
    for (const name of idleCities) await sup.createCity(name);
    await sleep(2000);
    const idlePids = await Promise.all(idleCities.map(async (name) => (await sup!.city(name))?.pid));
    const idleMemory = idlePids.map((p) => (p ? memoryKiB(p) : undefined));
    const idle = idleMemory[0];
    const idlePssTotal = idleMemory.every(Boolean) ? idleMemory.reduce((sum, m) => sum + m!.pss, 0) : undefined;
    const supervisorMemory = memoryKiB(sup.pid);

    const s = (v: number[]) => summarize(v);
    const firstAll = Object.values(first).flat();
    const againAll = Object.values(again).flat();
    const bareMedian = s(bare).median;
    const overhead = s(viaProxy).median - s(straight).median;
    const base = s(nodeE0).median;
    const idlePssLimitKiB = 396 * 1024;
    const rows: string[][] = [
      ['`node -e 0` (baseline)', ms(base), ms(s(nodeE0).p99), '', ''],
      ['bare loopback GET (baseline)', ms(bareMedian, 3), ms(s(bare).p99, 3), '', ''],
      [
        'ctl version',
        ms(s(version).median),
        ms(s(version).p99),
        `node -e 0 + ${ms(s(version).median - base)}`,
        goal('p50 ≤ node -e 0 + 40', s(version).median - base <= 40),
      ],
      [
        'ctl help',
        ms(s(help).median),
        ms(s(help).p99),
        `node -e 0 + ${ms(s(help).median - base)}`,
        goal('p50 ≤ node -e 0 + 80', s(help).median - base <= 80),
      ],
      [
        'ctl bead list (running city)',
        ms(s(beadList).median),
        ms(s(beadList).p99),
        `node -e 0 + ${ms(s(beadList).median - base)}`,
        '',
      ],
      [
        'city create → terminal event',
        ms(s(create).median),
        ms(s(create).p99),
        '',
        goal('p50 ≤ 300', s(create).median <= 300),
      ],
      [
        'first request per family, fresh controller (all)',
        ms(s(firstAll).median),
        ms(s(firstAll).p99),
        `${firstAll.length} requests`,
        goal('p50 ≤ 30, p99 ≤ 60', s(firstAll).median <= 30 && s(firstAll).p99 <= 60),
      ],
      [
        '  controller CPU: start → create answered',
        ms(s(startCpu).median, 0),
        ms(s(startCpu).p99, 0),
        'CPU ms, 10 ms ticks',
        '',
      ],
      [
        '  controller CPU: its first request of each family',
        ms(s(firstCpu).median, 0),
        ms(s(firstCpu).p99, 0),
        'CPU ms, 10 ms ticks',
        '',
      ],
      ...Object.entries(first).map(([family, v]) => [`  first ${family}`, ms(s(v).median), ms(s(v).p99), '', '']),
      ['the same requests again (warm)', ms(s(againAll).median), ms(s(againAll).p99), '', ''],
      ['GET /status straight to the controller', ms(s(straight).median, 3), ms(s(straight).p99, 3), '', ''],
      ['GET /status through the supervisor', ms(s(viaProxy).median, 3), ms(s(viaProxy).p99, 3), '', ''],
      [
        'proxy overhead (p50 difference)',
        ms(overhead, 3),
        '',
        `${round(overhead / bareMedian, 2)}× a bare loopback GET`,
        goal('≤ 1.5× bare loopback', overhead / bareMedian <= 1.5),
      ],
      [
        'POST …/events, 10 fresh cities, 200/s (cold)',
        ms(s(emitCold).median),
        ms(s(emitCold).p99),
        '',
        goal('p99 ≤ 10', s(emitCold).p99 <= 10),
      ],
      [
        'POST …/events, the same cities again (warm)',
        ms(s(emitWarm).median),
        ms(s(emitWarm).p99),
        '',
        goal('p99 ≤ 10', s(emitWarm).p99 <= 10),
      ],
      [
        'idle controller RSS / PSS',
        idle ? mib(idle.rss) : '?',
        idle ? mib(idle.pss) : '?',
        'MiB',
        goal('RSS ≤ 60 MiB', idle !== undefined && idle.rss <= 60 * 1024),
      ],
      [
        `${IDLE_CITIES} idle controllers, total PSS`,
        idlePssTotal !== undefined ? mib(idlePssTotal) : '?',
        '',
        `MiB; + the supervisor's ${mib(supervisorMemory.pss)} = ${idlePssTotal !== undefined ? mib(idlePssTotal + supervisorMemory.pss) : '?'}`,
        goal('≤ 396 MiB', idlePssTotal !== undefined && idlePssTotal <= idlePssLimitKiB),
      ],
    ];
    console.log(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} at the end`,
    );
    console.log(
      formatTable('cold and warm paths (ms unless noted)', ['what', 'p50', 'p99', 'note', 'goal (issue 20)'], rows),
    );
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(
      OUT_FILE,
      JSON.stringify(
        {
          meta: { date: new Date().toISOString(), node: process.version, entry, loadavg: loadavg() },
          node_e0: s(nodeE0),
          bare_loopback: s(bare),
          ctl_version: s(version),
          ctl_help: s(help),
          ctl_bead_list: s(beadList),
          create: s(create),
          first_request: Object.fromEntries(Object.entries(first).map(([k, v]) => [k, s(v)])),
          first_request_all: s(firstAll),
          controller_cpu_ms_to_create: s(startCpu),
          controller_cpu_ms_first_requests: s(firstCpu),
          warm_request_all: s(againAll),
          status_direct: s(straight),
          status_proxied: s(viaProxy),
          proxy_overhead_ms: overhead,
          proxy_overhead_ratio: overhead / bareMedian,
          emit_cold: s(emitCold),
          emit_warm: s(emitWarm),
          idle_controller: idle,
          idle_controllers_pss_kib_total: idlePssTotal,
          idle_controllers: IDLE_CITIES,
          supervisor_memory: supervisorMemory,
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`total ${round((performance.now() - t0) / 1000, 1)} s; wrote ${OUT_FILE}`);
  } finally {
    await cleanup();
  }
}
