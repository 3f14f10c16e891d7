/**
 * Foundation benchmark: a real supervisor (TestSupervisor) with 20 cities, measuring
 *   1. POST /v0/city → terminal `request.result.city.create` event latency,
 *   2. RSS of the supervisor and of every controller with 20 cities running,
 *   3. GET /v0/city/{name}/health through the supervisor's proxy vs straight to the controller socket,
 *   4. POST /v0/city/{name}/events through the supervisor at 200/s over 10 cities, open loop (p50/p99; a rate this 2-core machine serves without queueing),
 *   5. one controller's memory, idle and after 1,000 events.
 * Prints tables and writes `.bench-out/foundation.json`. Run with `npm run bench` (or, after a build,
 * `npx tsx bench/run.ts foundation`).
 */
import type { Agent } from 'node:http';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { WireTaggedEvent } from '../shared/dto/events.js';
import { cityPaths } from '../shared/paths.js';
import { TestSupervisor } from '../test/helpers/supervisor.js';
import {
  closedLoopLoad,
  get,
  getJson,
  keepAliveAgent,
  sendJson,
  sequentialLatencies,
  type GetTarget,
  type LoadResult,
} from './http.js';
import { benchRoot } from './bench-root.js';
import { cpuMs, memoryKiB, type MemoryKiB } from './proc.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const CITIES = 20;
/** Poll period of the events query in part 1 (`BENCH_POLL_MS` overrides it, to see what polling itself costs). */
const POLL_INTERVAL_MS = Number.isFinite(Number(process.env.BENCH_POLL_MS)) ? Number(process.env.BENCH_POLL_MS) : 2;
const CREATE_TIMEOUT_MS = 30_000;
const SEQUENTIAL_WARMUP = 300;
const SEQUENTIAL_BLOCKS = 8;
const SEQUENTIAL_BLOCK_SIZE = 250;
const CONCURRENCY = 16;
const LOAD_WARMUP_MS = 500;
const LOAD_DURATION_MS = 3000;

const REQUEST_HEADER = { 'X-CTL-Request': 'bench' } as const;
const RESULT_TYPE = 'request.result.city.create';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'foundation.json');

// ---------------------------------------------------------------------------------------------------------------
// 1. Create latency

interface CreateSample {
  name: string;
  request_id: string;
  /** POST sent → 202 received. */
  post_202_ms: number;
  /** POST sent (wall clock) → the terminal event's own `ts`. */
  event_ts_ms: number;
  /** POST sent → the first poll response that contained the terminal event. */
  observed_ms: number;
  /** POST sent (wall clock) → `controller.started` in the city's own log: the controller's part of the wait. */
  controller_started_ms: number;
  polls: number;
  /** Slowest events poll during this create. */
  max_poll_ms: number;
}

interface CreatePhase {
  samples: CreateSample[];
  pollRtt: number[];
}

function eventsTarget(sup: TestSupervisor): GetTarget {
  return {
    label: 'GET /v0/events',
    options: {
      host: '127.0.0.1',
      port: sup.port,
      path: `/v0/events?type=${RESULT_TYPE}&limit=50`,
      agent: keepAliveAgent(1),
    },
  };
}

function controllerStartedTs(cityDir: string): number {
  const lines = readFileSync(cityPaths(cityDir).events, 'utf8').split('\n');
  for (const line of lines) {
    if (!line) continue;
    const record = JSON.parse(line) as { type: string; ts: string };
    if (record.type === 'controller.started') return Date.parse(record.ts);
  }
  return NaN;
}

async function createCities(sup: TestSupervisor, names: string[]): Promise<CreatePhase> {
  const events = eventsTarget(sup);
  const pollRtt: number[] = [];
  const samples: CreateSample[] = [];
  // Warm both clients (undici for the typed client, node:http for the poller) before timing anything.
  await sup.api.GET('/v0/cities');
  await getJson(events);

  for (const name of names) {
    const dir = sup.cityDir(name);
    const sentWall = Date.now();
    const sent = performance.now();
    const { data, error, response } = await sup.api.POST('/v0/city', {
      params: { header: REQUEST_HEADER },
      body: { dir, start_command: 'sleep 3600' },
    });
    const answered = performance.now();
    if (!data) throw new Error(`POST /v0/city ${name}: HTTP ${response.status}: ${JSON.stringify(error)}`);

    let found: WireTaggedEvent | undefined;
    let observed = 0;
    let polls = 0;
    let maxPoll = 0;
    while (!found) {
      const t0 = performance.now();
      const body = await getJson<{ items: WireTaggedEvent[] }>(events);
      const t1 = performance.now();
      pollRtt.push(t1 - t0);
      maxPoll = Math.max(maxPoll, t1 - t0);
      polls++;
      found = body.items.find((e) => (e.payload as { request_id?: string }).request_id === data.request_id);
      if (found) {
        observed = t1;
        break;
      }
      // Now and then, and at the deadline, look for a failure instead of waiting it out.
      const timedOut = t1 - sent > CREATE_TIMEOUT_MS;
      if (timedOut || polls % 100 === 0) {
        const failed = (await sup.events({ type: 'request.failed' })).find(
          (e) => (e.payload as { request_id?: string }).request_id === data.request_id,
        );
        if (failed) throw new Error(`create of ${name} failed: ${JSON.stringify(failed.payload)}`);
        if (timedOut) throw new Error(`no ${RESULT_TYPE} for ${name} (${data.request_id}) in ${CREATE_TIMEOUT_MS} ms`);
      }
      await sleep(POLL_INTERVAL_MS);
    }
    samples.push({
      name,
      request_id: data.request_id,
      post_202_ms: answered - sent,
      event_ts_ms: Date.parse(found.ts) - sentWall,
      observed_ms: observed - sent,
      controller_started_ms: controllerStartedTs(dir) - sentWall,
      polls,
      max_poll_ms: maxPoll,
    });
  }
  (events.options.agent as Agent).destroy();
  return { samples, pollRtt };
}

// ---------------------------------------------------------------------------------------------------------------
// 2. RSS

interface RssSnapshot {
  supervisor: MemoryKiB;
  controllers: Record<string, MemoryKiB>;
  controllerRss: Summary;
  controllerPss: Summary;
  controllerUss: Summary;
  totalRss: number;
  totalPss: number;
}

async function controllerPids(sup: TestSupervisor): Promise<Map<string, number>> {
  const { data, response } = await sup.api.GET('/v0/cities');
  if (!data) throw new Error(`GET /v0/cities: HTTP ${response.status}`);
  const pids = new Map<string, number>();
  for (const city of data.items) {
    if (!city.running || city.pid === undefined) throw new Error(`city ${city.name} is not running`);
    pids.set(city.name, city.pid);
  }
  return pids;
}

function rssSnapshot(supervisorPid: number, pids: Map<string, number>): RssSnapshot {
  const controllers: Record<string, MemoryKiB> = {};
  for (const [name, pid] of pids) controllers[name] = memoryKiB(pid);
  const all = Object.values(controllers);
  const supervisor = memoryKiB(supervisorPid);
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    supervisor,
    controllers,
    controllerRss: summarize(all.map((m) => m.rss)),
    controllerPss: summarize(all.map((m) => m.pss)),
    controllerUss: summarize(all.map((m) => m.uss)),
    totalRss: supervisor.rss + sum(all.map((m) => m.rss)),
    totalPss: supervisor.pss + sum(all.map((m) => m.pss)),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Proxied vs direct

interface LoadRun extends LoadResult {
  /** CPU time used during the run, per 1000 requests, by process. */
  cpu_ms_per_1k: { supervisor: number; controller: number; bench_client: number };
}

async function measuredLoad(target: GetTarget, supervisorPid: number, controllerPid: number): Promise<LoadRun> {
  await closedLoopLoad(target, CONCURRENCY, LOAD_WARMUP_MS);
  const sup0 = cpuMs(supervisorPid);
  const ctl0 = cpuMs(controllerPid);
  const self0 = process.cpuUsage();
  const result = await closedLoopLoad(target, CONCURRENCY, LOAD_DURATION_MS);
  const self = process.cpuUsage(self0);
  const per1k = (cpu: number) => (cpu / Math.max(1, result.ok)) * 1000;
  return {
    ...result,
    cpu_ms_per_1k: {
      supervisor: per1k(cpuMs(supervisorPid) - sup0),
      controller: per1k(cpuMs(controllerPid) - ctl0),
      bench_client: per1k((self.user + self.system) / 1000),
    },
  };
}

interface ProxyPhase {
  city: string;
  proxied: number[];
  direct: number[];
  loadProxied: LoadRun;
  loadDirect: LoadRun;
}

async function proxyVsDirect(sup: TestSupervisor, city: string, controllerPid: number): Promise<ProxyPhase> {
  const path = `/v0/city/${encodeURIComponent(city)}/health`;
  const seqProxied: GetTarget = {
    label: 'proxied',
    options: { host: '127.0.0.1', port: sup.port, path, agent: keepAliveAgent(1) },
  };
  const seqDirect: GetTarget = {
    label: 'direct',
    options: {
      socketPath: cityPaths(sup.cityDir(city)).socket,
      path,
      headers: { host: 'localhost' },
      agent: keepAliveAgent(1),
    },
  };
  // Both must answer for the same city before anything is timed.
  for (const target of [seqProxied, seqDirect]) {
    const health = await getJson<{ status: string; city: string }>(target);
    if (health.status !== 'ok' || health.city !== city) {
      throw new Error(`${target.label} health: ${JSON.stringify(health)}`);
    }
  }
  await sequentialLatencies(seqProxied, SEQUENTIAL_WARMUP);
  await sequentialLatencies(seqDirect, SEQUENTIAL_WARMUP);
  // Alternating blocks, so drift (GC, the reconciler's patrol, page cache) hits both sides alike.
  const proxied: number[] = [];
  const direct: number[] = [];
  for (let block = 0; block < SEQUENTIAL_BLOCKS; block++) {
    proxied.push(...(await sequentialLatencies(seqProxied, SEQUENTIAL_BLOCK_SIZE)));
    direct.push(...(await sequentialLatencies(seqDirect, SEQUENTIAL_BLOCK_SIZE)));
  }

  const loadTargetProxied: GetTarget = {
    ...seqProxied,
    options: { ...seqProxied.options, agent: keepAliveAgent(CONCURRENCY) },
  };
  const loadTargetDirect: GetTarget = {
    ...seqDirect,
    options: { ...seqDirect.options, agent: keepAliveAgent(CONCURRENCY) },
  };
  const loadProxied = await measuredLoad(loadTargetProxied, sup.pid, controllerPid);
  const loadDirect = await measuredLoad(loadTargetDirect, sup.pid, controllerPid);
  for (const target of [seqProxied, seqDirect, loadTargetProxied, loadTargetDirect]) {
    (target.options.agent as Agent).destroy();
  }
  return { city, proxied, direct, loadProxied, loadDirect };
}

// ---------------------------------------------------------------------------------------------------------------
// 4. POST /v0/city/{name}/events through the supervisor, open loop over several cities

const EMIT_CITIES = 10;
const EMIT_RATE_PER_S = 200;
const EMIT_DURATION_MS = 10_000;

interface EmitPhase {
  cities: number;
  rate: number;
  latencies: number[];
  failed: number;
}

/**
 * A steady `EMIT_RATE_PER_S` events spread over `EMIT_CITIES` cities (open loop: requests go out on schedule, whether
 * or not earlier ones have answered), each a POST through the supervisor's proxy, timed from send to 201.
 */
async function emitThroughSupervisor(sup: TestSupervisor, cities: string[]): Promise<EmitPhase> {
  const agent = keepAliveAgent(64);
  const targets = cities.map((city) => ({
    label: city,
    options: { host: '127.0.0.1', port: sup.port, path: `/v0/city/${encodeURIComponent(city)}/events`, agent },
  }));
  const send = (i: number) =>
    sendJson(targets[i % targets.length], 'POST', { type: 'bench.emit', actor: 'bench', payload: { i } });
  for (let i = 0; i < 200; i++) await send(i); // warm-up: connections, the controllers' HTTP stacks
  const latencies: number[] = [];
  let failed = 0;
  const total = (EMIT_RATE_PER_S * EMIT_DURATION_MS) / 1000;
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / EMIT_RATE_PER_S;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const sent = performance.now();
    inflight.push(
      send(i).then(
        (res) => {
          if (res.status === 201) latencies.push(performance.now() - sent);
          else failed++;
        },
        () => {
          failed++;
        },
      ),
    );
  }
  await Promise.all(inflight);
  agent.destroy();
  return { cities: cities.length, rate: EMIT_RATE_PER_S, latencies, failed };
}

// ---------------------------------------------------------------------------------------------------------------
// 5. One controller's memory: idle (never asked anything), then after 1,000 events through its API

interface ControllerMemoryPhase {
  idle: MemoryKiB;
  afterEvents: MemoryKiB;
  events: number;
}

async function controllerMemory(sup: TestSupervisor): Promise<ControllerMemoryPhase> {
  const name = 'bench-memory';
  await sup.createCity(name, { start_command: 'sleep 3600' });
  const pid = (await controllerPids(sup)).get(name)!;
  await sleep(1000);
  const idle = memoryKiB(pid);
  const target = {
    label: name,
    options: { host: '127.0.0.1', port: sup.port, path: `/v0/city/${name}/events`, agent: keepAliveAgent(1) },
  };
  const events = 1000;
  for (let i = 0; i < events; i++) {
    const res = await sendJson(target, 'POST', { type: 'bench.memory', actor: 'bench', payload: { i } });
    if (res.status !== 201) throw new Error(`POST events: HTTP ${res.status}`);
  }
  target.options.agent.destroy();
  await sleep(1000);
  return { idle, afterEvents: memoryKiB(pid), events };
}

// ---------------------------------------------------------------------------------------------------------------
// Report

interface Meta {
  date: string;
  node: string;
  cores: number;
  cpu_model: string;
  kernel: string;
  /** The machine may be shared: a high load average means noisy figures. */
  loadavg_at_start: number[];
}

function loadJson(run: LoadRun) {
  return {
    concurrency: run.concurrency,
    duration_ms: round(run.elapsedMs, 1),
    ok: run.ok,
    failed: run.failed,
    rps: round(run.rps, 1),
    latency_ms: rounded(run.latency),
    cpu_ms_per_1k_requests: {
      supervisor: round(run.cpu_ms_per_1k.supervisor, 1),
      controller: round(run.cpu_ms_per_1k.controller, 1),
      bench_client: round(run.cpu_ms_per_1k.bench_client, 1),
    },
  };
}

function rssJson(snapshot: RssSnapshot) {
  return {
    supervisor_rss_kib: snapshot.supervisor.rss,
    controller_rss_median_kib: snapshot.controllerRss.median,
    controller_rss_max_kib: snapshot.controllerRss.max,
    controller_rss_min_kib: snapshot.controllerRss.min,
    controllers: snapshot.controllerRss.n,
    total_rss_kib: snapshot.totalRss,
    supervisor_pss_kib: snapshot.supervisor.pss,
    supervisor_uss_kib: snapshot.supervisor.uss,
    controller_pss_median_kib: snapshot.controllerPss.median,
    controller_uss_median_kib: snapshot.controllerUss.median,
    total_pss_kib: snapshot.totalPss,
    controllers_kib: snapshot.controllers,
  };
}

function printReport(
  meta: Meta,
  create: CreatePhase,
  rss: RssSnapshot[],
  proxy: ProxyPhase,
  emit: EmitPhase,
  memory: ControllerMemoryPhase,
): void {
  const out: string[] = [];
  out.push(
    `ctl foundation benchmark — node ${meta.node}, ${meta.cores} cores (${meta.cpu_model}), linux ${meta.kernel}`,
  );
  out.push(
    `load average (1/5/15 min) at start: ${meta.loadavg_at_start.join(' ')}, at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  out.push('');

  const c = create.samples;
  const createRows: [string, number[], number][] = [
    ['202 response', c.map((s) => s.post_202_ms), 1],
    ['controller.started ts (city log)', c.map((s) => s.controller_started_ms), 0],
    [`${RESULT_TYPE} ts`, c.map((s) => s.event_ts_ms), 0],
    [`event observed by polling (${POLL_INTERVAL_MS} ms)`, c.map((s) => s.observed_ms), 1],
    ['  events poll round trip', create.pollRtt, 2],
    ['  polls per create', c.map((s) => s.polls), 0],
  ];
  out.push(
    formatTable(
      `1. City create → terminal event (${c.length} creates in sequence; ms from sending POST /v0/city)`,
      ['measure', 'median', 'p90', 'min', 'max'],
      createRows.map(([label, values, digits]) => {
        const s = summarize(values);
        return [label, ms(s.median, digits), ms(s.p90, digits), ms(s.min, digits), ms(s.max, digits)];
      }),
    ),
  );
  out.push('');

  const [idle, loaded] = rss;
  const memRow = (label: string, pick: (snapshot: RssSnapshot) => number) => [
    label,
    mib(pick(idle)),
    mib(pick(loaded)),
  ];
  out.push(
    formatTable(
      `2. Memory with ${idle.controllerRss.n} cities running (MiB; VmRSS, and PSS/USS from smaps_rollup)`,
      ['measure', 'idle, 0.5 s after last create', 'after proxy load (~15 s later)'],
      [
        memRow('supervisor RSS', (m) => m.supervisor.rss),
        memRow('controller RSS median', (m) => m.controllerRss.median),
        memRow('controller RSS max', (m) => m.controllerRss.max),
        memRow(`total RSS (supervisor + ${idle.controllerRss.n} controllers)`, (m) => m.totalRss),
        memRow('supervisor PSS', (m) => m.supervisor.pss),
        memRow('controller PSS median', (m) => m.controllerPss.median),
        memRow('controller USS (private) median', (m) => m.controllerUss.median),
        memRow('total PSS (shared pages counted once)', (m) => m.totalPss),
      ],
    ),
  );
  out.push('');

  const p = summarize(proxy.proxied);
  const d = summarize(proxy.direct);
  out.push(
    formatTable(
      `3a. GET /v0/city/${proxy.city}/health, sequential, keep-alive (${p.n} each after ${SEQUENTIAL_WARMUP} warm-up; ms)`,
      ['path', 'median', 'p90', 'p99', 'min', 'max'],
      [
        ['proxied (supervisor TCP)', ms(p.median, 3), ms(p.p90, 3), ms(p.p99, 3), ms(p.min, 3), ms(p.max, 3)],
        ['direct (controller socket)', ms(d.median, 3), ms(d.p90, 3), ms(d.p99, 3), ms(d.min, 3), ms(d.max, 3)],
        ['ratio proxied/direct', (p.median / d.median).toFixed(2), '', (p.p99 / d.p99).toFixed(2), '', ''],
      ],
    ),
  );
  out.push('');
  const loadRow = (label: string, run: LoadRun) => [
    label,
    run.rps.toFixed(0),
    ms(run.latency.median, 2),
    ms(run.latency.p99, 2),
    String(run.failed),
    run.cpu_ms_per_1k.supervisor.toFixed(0),
    run.cpu_ms_per_1k.controller.toFixed(0),
    run.cpu_ms_per_1k.bench_client.toFixed(0),
  ];
  out.push(
    formatTable(
      `3b. Same GET under load: ${CONCURRENCY} concurrent keep-alive clients, ${LOAD_DURATION_MS / 1000} s each ` +
        `(Node load loop in the bench process, same machine)`,
      ['path', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'sup CPU ms/1k', 'ctl CPU ms/1k', 'client CPU ms/1k'],
      [
        loadRow('proxied', proxy.loadProxied),
        loadRow('direct', proxy.loadDirect),
        ['ratio proxied/direct', (proxy.loadProxied.rps / proxy.loadDirect.rps).toFixed(2), '', '', '', '', '', ''],
      ],
    ),
  );
  out.push('');
  const e = summarize(emit.latencies);
  out.push(
    formatTable(
      `4. POST /v0/city/{name}/events through the supervisor: ${emit.rate}/s over ${emit.cities} cities, open loop, ` +
        `${EMIT_DURATION_MS / 1000} s (ms from send to 201)`,
      ['requests', 'failed', 'median', 'p90', 'p99', 'max'],
      [[String(e.n), String(emit.failed), ms(e.median, 2), ms(e.p90, 2), ms(e.p99, 2), ms(e.max, 2)]],
    ),
  );
  out.push('');
  out.push(
    formatTable(
      '5. One controller (MiB): idle, never asked anything; then after 1,000 events recorded through its API',
      ['measure', 'RSS', 'PSS', 'USS (private)'],
      [
        ['idle', mib(memory.idle.rss), mib(memory.idle.pss), mib(memory.idle.uss)],
        [
          `after ${memory.events} events`,
          mib(memory.afterEvents.rss),
          mib(memory.afterEvents.pss),
          mib(memory.afterEvents.uss),
        ],
      ],
    ),
  );
  out.push('');
  console.log(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------------------------

/** Runs the foundation benchmark; rejects on failure (after cleaning up). */
export async function runFoundation(): Promise<void> {
  const wallStart = performance.now();
  const meta: Meta = {
    date: new Date().toISOString(),
    node: process.version,
    cores: availableParallelism(),
    cpu_model: cpus()[0]?.model ?? 'unknown',
    kernel: release(),
    loadavg_at_start: loadavg().map((l) => round(l, 2)),
  };
  console.log(`ctl foundation benchmark: node ${meta.node}, ${meta.cores} cores — starting a supervisor…`);

  let sup: TestSupervisor | undefined;
  const { root, cleanup, interrupted } = benchRoot('ctl-bench-', async () => {
    if (sup) await sup.cleanup();
  });

  try {
    sup = await TestSupervisor.start({ root });
    const names = Array.from({ length: CITIES }, (_, i) => `bench-${String(i + 1).padStart(2, '0')}`);

    console.log(`1/5 creating ${CITIES} cities one after another…`);
    const create = await createCities(sup, names);

    console.log('2/5 reading RSS…');
    await sleep(500);
    const pids = await controllerPids(sup);
    if (pids.size !== CITIES) throw new Error(`expected ${CITIES} running cities, found ${pids.size}`);
    const rssIdle = rssSnapshot(sup.pid, pids);

    console.log('3/5 proxied vs direct GET…');
    const city = names[0];
    const proxy = await proxyVsDirect(sup, city, pids.get(city)!);
    const rssAfterLoad = rssSnapshot(sup.pid, pids);

    console.log(`4/5 POST …/events through the supervisor over ${EMIT_CITIES} cities…`);
    const emit = await emitThroughSupervisor(sup, names.slice(0, EMIT_CITIES));

    console.log('5/5 one controller: idle, then after 1,000 events…');
    const memory = await controllerMemory(sup);

    // Sanity: everything still runs and the supervisor still answers.
    const health = await get({ label: 'health', options: { host: '127.0.0.1', port: sup.port, path: '/health' } });
    if (health.status !== 200) throw new Error(`supervisor /health: HTTP ${health.status}`);

    const cleanupStart = performance.now();
    await cleanup();
    const cleanupMs = performance.now() - cleanupStart;

    printReport(meta, create, [rssIdle, rssAfterLoad], proxy, emit, memory);

    const p = summarize(proxy.proxied);
    const d = summarize(proxy.direct);
    const report = {
      meta: {
        ...meta,
        loadavg_at_end: loadavg().map((l) => round(l, 2)),
        total_runtime_s: round((performance.now() - wallStart) / 1000, 1),
        cleanup_ms: round(cleanupMs, 0),
      },
      create: {
        cities: CITIES,
        poll_interval_ms: POLL_INTERVAL_MS,
        post_202_ms: rounded(summarize(create.samples.map((s) => s.post_202_ms))),
        controller_started_ts_ms: rounded(summarize(create.samples.map((s) => s.controller_started_ms))),
        event_ts_ms: rounded(summarize(create.samples.map((s) => s.event_ts_ms))),
        observed_ms: rounded(summarize(create.samples.map((s) => s.observed_ms))),
        poll_round_trip_ms: rounded(summarize(create.pollRtt)),
        samples: create.samples.map((s) => ({
          ...s,
          post_202_ms: round(s.post_202_ms),
          observed_ms: round(s.observed_ms),
          max_poll_ms: round(s.max_poll_ms),
        })),
      },
      rss: { after_creates: rssJson(rssIdle), after_proxy_load: rssJson(rssAfterLoad) },
      emit: {
        cities: emit.cities,
        rate_per_s: emit.rate,
        failed: emit.failed,
        latency_ms: rounded(summarize(emit.latencies)),
      },
      controller_memory_kib: { idle: memory.idle, after_events: memory.afterEvents, events: memory.events },
      proxy: {
        city,
        sequential: {
          warmup: SEQUENTIAL_WARMUP,
          proxied_ms: rounded(p, 4),
          direct_ms: rounded(d, 4),
          median_ratio: round(p.median / d.median),
          p99_ratio: round(p.p99 / d.p99),
        },
        concurrent: {
          proxied: loadJson(proxy.loadProxied),
          direct: loadJson(proxy.loadDirect),
          rps_ratio: round(proxy.loadProxied.rps / proxy.loadDirect.rps),
        },
      },
    };
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(OUT_FILE, JSON.stringify(report, null, 2) + '\n');
    console.log(`total ${report.meta.total_runtime_s} s (cleanup ${report.meta.cleanup_ms} ms); wrote ${OUT_FILE}`);
  } catch (err) {
    // Interrupted: the failure is ours (the supervisor went away); the signal handler exits once cleaned up.
    if (interrupted()) return;
    if (sup?.output) console.error(`--- supervisor output (tail) ---\n${sup.output.slice(-4000)}`);
    throw err;
  } finally {
    await cleanup();
  }
}
