/**
 * Event bus benchmark: a real supervisor (TestSupervisor) with 10 cities and their controllers, measuring
 *   1. append → supervisor SSE frame latency (`GET /v0/events/stream`) at 1,000 events/s over 10 cities, with
 *      writer processes appending straight to each city's `.ctl/events.jsonl` through the built EventLog
 *      (file append → chokidar/tail → hub → SSE), and for comparison through `POST /v0/city/{name}/events`
 *      (supervisor proxy → controller append → supervisor tail → SSE);
 *   2. fan-out: 500 concurrent supervisor-stream subscribers at 100 events/s (loss, latency, supervisor CPU/RSS);
 *   3. list: newest and deep pages of a 1,000,000-event city log, and the supervisor's merged list;
 *   4. `ctl events --seq` cold start (supervisor and city scope), against `ctl --version` and bare node.
 * Latency is the writer's send time (`performance.timeOrigin + performance.now()`, in the event's payload) to
 * the moment the frame's bytes were read off the subscriber's socket, on the same clock in this process.
 * Prints tables with the targets of issue 3 and writes `.bench-out/events.json`. Run with
 * `npx tsx bench/run.ts events` after a build (`npm run bench` builds and runs every benchmark).
 *
 * On a shared machine the figures are only as good as its quiet: every run reports how much CPU other processes
 * took and how long the supervisor's event loop waited for a core. For diagnosis:
 *   BENCH_EVENTS_PHASES=latency,http,fanout,list,cli   run some parts only
 *   BENCH_EVENTS_RATE, _DURATION_MS, _HTTP_RATE, _SUBSCRIBERS, _FANOUT_DURATION_MS, _LIST_EVENTS   change the load
 *   BENCH_EVENTS_NICE=-10                                run every benchmark process at that priority
 *   BENCH_EVENTS_DUMP_DIR=/tmp/dump                      every delivery of the one-subscriber runs, as TSV
 *   BENCH_EVENTS_SUPERVISOR_NODE_OPTIONS="--import=$PWD/bench/cpu-profile.mjs" BENCH_CPU_PROFILE_DIR=/tmp/prof
 *     BENCH_CPU_PROFILE_MATCH='supervisor run'          CPU-profile the supervisor (bench/cpu-profile-summary.mjs)
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, cpus, getPriority, loadavg, release, setPriority } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { WireTaggedEvent } from '../shared/dto/events.js';
import { encodePageToken } from '../shared/events/cursor.js';
import { cityPaths } from '../shared/paths.js';
import { CSRF, TestSupervisor } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { benchRoot } from './bench-root.js';
import { get, keepAliveAgent, sequentialLatencies, type GetTarget } from './http.js';
import { cpuMs, machineCpuMs, rssKiB, schedStat, type SchedStat } from './proc.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { subscribe, subscribeMany, wallNow, type SseSubscription } from './sse.js';
import { formatTable, mib, ms } from './table.js';
import { WriterPool, type RunSpec, type WriteTarget, type WriterResult } from './writers.js';

const num = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return process.env[name] !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
};

const CITIES = 10;
/** Payload padding of the benchmark events: a ~150-byte payload with the send time and ids. */
const PAD_BYTES = 100;
const LATENCY_RATE = num('BENCH_EVENTS_RATE', 1000);
const LATENCY_DURATION_MS = num('BENCH_EVENTS_DURATION_MS', 10_000);
/** Events sent in the first second of a run are delivered (and counted for loss) but left out of percentiles. */
const WARMUP_MS = 1000;
/**
 * `POST /v0/city/{name}/events` runs at a rate the machine sustains: this share of the throughput a closed-loop
 * probe (one request in flight per city) reaches just before, at most the file-append rate
 * (`BENCH_EVENTS_HTTP_RATE` fixes it instead).
 */
const HTTP_LOAD_SHARE = 0.5;
const HTTP_PROBE_MS = 2000;
const HTTP_RATE_FIXED = num('BENCH_EVENTS_HTTP_RATE', NaN);
const HTTP_DURATION_MS = num('BENCH_EVENTS_HTTP_DURATION_MS', 6000);
const FANOUT_SUBSCRIBERS = num('BENCH_EVENTS_SUBSCRIBERS', 500);
const FANOUT_RATE = 100;
const FANOUT_DURATION_MS = num('BENCH_EVENTS_FANOUT_DURATION_MS', 10_000);
const LIST_EVENTS = num('BENCH_EVENTS_LIST_EVENTS', 1_000_000);
const LIST_WARMUP = 10;
const LIST_REQUESTS = 50;
const CLI_WARMUP = 2;
const CLI_RUNS = 20;
/** Which parts to run (`BENCH_EVENTS_PHASES=latency,http,fanout,list,cli`; default all): for diagnosis. */
const PHASES = new Set(
  (process.env.BENCH_EVENTS_PHASES ?? 'latency,http,fanout,list,cli').split(',').map((p) => p.trim()),
);
/** For diagnosis: extra node options for the supervisor (and the controllers it starts), e.g. `--cpu-prof`. */
const SUPERVISOR_NODE_OPTIONS = process.env.BENCH_EVENTS_SUPERVISOR_NODE_OPTIONS;
/**
 * Opt-in, for a machine shared with other work: a nice value (e.g. -10, which needs root) for this process and so
 * for everything it starts (supervisor, controllers, writers, `ctl`), restored at the end. Other processes then
 * wait for the benchmark rather than the reverse; the report says so.
 */
const NICE = process.env.BENCH_EVENTS_NICE !== undefined ? Number(process.env.BENCH_EVENTS_NICE) : undefined;
/** For diagnosis: a directory to write every delivery of the one-subscriber runs to (`run-<n>.tsv`). */
const DUMP_DIR = process.env.BENCH_EVENTS_DUMP_DIR;
/** After the writers are done, how long to wait for frames still on their way. */
const STRAGGLER_WAIT_MS = 3000;

const TARGETS = {
  latencyP50Ms: 2,
  latencyP99Ms: 10,
  listMs: 20,
  seqColdStartMs: 300,
};

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'events.json');
const CTL_ENTRY = join(repoRoot, 'dist', 'cli', 'main.js');

// ---------------------------------------------------------------------------------------------------------------
// Deliveries: which subscriber saw which event, when

/** Where each writer's events land in a subscriber's slot array: target-major, `perTarget` slots per target. */
interface SlotLayout {
  run: number;
  targetsPerWriter: number;
  perTarget: number;
  slots: number;
}

/** One subscriber's view of a run: when each event's frame arrived (NaN: never), duplicates, strays. */
class Deliveries {
  readonly at: Float64Array;
  duplicates = 0;
  /** Benchmark frames of another run, or outside the layout. */
  strays = 0;
  /** Frames of other event types (the controllers' and supervisor's own). */
  others = 0;
  malformed = 0;

  constructor(private readonly layout: SlotLayout) {
    this.at = new Float64Array(layout.slots).fill(NaN);
  }

  frame(data: string, receivedAt: number): void {
    let event: WireTaggedEvent;
    try {
      event = JSON.parse(data) as WireTaggedEvent;
    } catch {
      this.malformed++;
      return;
    }
    if (event.type !== 'bench.latency') {
      this.others++;
      return;
    }
    const p = event.payload as { r: number; w: number; k: number; i: number };
    const { run, targetsPerWriter, perTarget } = this.layout;
    if (p.r !== run || p.k >= targetsPerWriter || p.i >= perTarget) {
      this.strays++;
      return;
    }
    const slot = (p.w * targetsPerWriter + p.k) * perTarget + p.i;
    if (!Number.isNaN(this.at[slot])) this.duplicates++;
    else this.at[slot] = receivedAt;
  }
}

interface DeliveryStats {
  subscribers: number;
  /** Events the writers appended successfully. */
  sent: number;
  /** Failed appends (http mode: non-201 answers). */
  failed: number;
  /** Deliveries expected (sent × subscribers) and made. */
  expected: number;
  delivered: number;
  lost: number;
  duplicates: number;
  strays: number;
  malformed: number;
  /** Subscribers that missed at least one event. */
  subscribersWithLoss: number;
  /** Streams the server ended before we closed them. */
  streamsEnded: number;
  /** Send → frame read, every delivery after the warm-up. */
  latency: Summary;
  /** Send → append resolved in the writer (file: lock + write; http: POST answered). */
  append: Summary;
  /** Append resolved → frame read. */
  afterAppend: Summary;
  /** Events per second the writers actually achieved (after the warm-up). */
  achievedRate: number;
  /** Per event (after the warm-up): send → its first subscriber's frame, and → its last subscriber's. */
  firstFrame: Summary;
  lastFrame: Summary;
}

function deliveryStats(
  results: WriterResult[],
  layout: SlotLayout,
  subscribers: Deliveries[],
  streams: SseSubscription[],
  warmupEnd: number,
  clockOffsets: number[],
): DeliveryStats {
  const latency: number[] = [];
  const append: number[] = [];
  const afterAppend: number[] = [];
  const firstFrame: number[] = [];
  const lastFrame: number[] = [];
  let sent = 0;
  let failed = 0;
  let lost = 0;
  let delivered = 0;
  let firstSent = Infinity;
  let lastSent = -Infinity;
  let counted = 0;
  const lossy = new Set<number>();
  for (const result of results) {
    sent += result.sent;
    failed += result.failed;
    // The writer's clock reads `offset` ahead of ours: bring its stamps onto our clock.
    const offset = clockOffsets[result.writer] ?? 0;
    for (const [k, i, sentOwn, doneOwn] of result.samples) {
      if (Number.isNaN(doneOwn)) continue;
      const sentAt = sentOwn - offset;
      const doneAt = doneOwn - offset;
      const measured = sentAt >= warmupEnd;
      if (measured) {
        append.push(doneAt - sentAt);
        firstSent = Math.min(firstSent, sentAt);
        lastSent = Math.max(lastSent, sentAt);
        counted++;
      }
      const slot = (result.writer * layout.targetsPerWriter + k) * layout.perTarget + i;
      let first = Infinity;
      let last = -Infinity;
      for (const [s, sub] of subscribers.entries()) {
        const at = sub.at[slot];
        if (Number.isNaN(at)) {
          lost++;
          lossy.add(s);
          continue;
        }
        delivered++;
        first = Math.min(first, at);
        last = Math.max(last, at);
        if (measured) {
          latency.push(at - sentAt);
          afterAppend.push(at - doneAt);
        }
      }
      if (measured && first <= last) {
        firstFrame.push(first - sentAt);
        lastFrame.push(last - sentAt);
      }
    }
  }
  const sum = (pick: (d: Deliveries) => number) => subscribers.reduce((acc, d) => acc + pick(d), 0);
  return {
    subscribers: subscribers.length,
    sent,
    failed,
    expected: sent * subscribers.length,
    delivered,
    lost,
    duplicates: sum((d) => d.duplicates),
    strays: sum((d) => d.strays),
    malformed: sum((d) => d.malformed),
    subscribersWithLoss: lossy.size,
    streamsEnded: streams.filter((s) => s.ended).length,
    latency: summarize(latency),
    append: summarize(append),
    afterAppend: summarize(afterAppend),
    achievedRate: counted > 1 ? ((counted - 1) / (lastSent - firstSent)) * 1000 : NaN,
    firstFrame: summarize(firstFrame),
    lastFrame: summarize(lastFrame),
  };
}

/** One line per event: city, i, sent (ms since the run's first event), append ms, append → frame ms. */
function dumpDeliveries(
  run: number,
  results: WriterResult[],
  layout: SlotLayout,
  sub: Deliveries,
  clockOffsets: number[],
): void {
  const lines: [number, string][] = [];
  const t0 = Math.min(...results.flatMap((r) => r.samples.map((x) => x[2] - (clockOffsets[r.writer] ?? 0))));
  for (const r of results) {
    const offset = clockOffsets[r.writer] ?? 0;
    for (const [k, i, sentOwn, doneOwn] of r.samples) {
      const at = sub.at[(r.writer * layout.targetsPerWriter + k) * layout.perTarget + i];
      const sent = sentOwn - offset;
      const done = doneOwn - offset;
      lines.push([
        sent,
        `${r.targets[k].city}\t${i}\t${(sent - t0).toFixed(3)}\t${(done - sent).toFixed(3)}\t${(at - done).toFixed(3)}`,
      ]);
    }
  }
  lines.sort((a, b) => a[0] - b[0]);
  mkdirSync(DUMP_DIR!, { recursive: true });
  writeFileSync(
    join(DUMP_DIR!, `run-${run}.tsv`),
    'city\ti\tsent_ms\tappend_ms\tappend_to_frame_ms\n' + lines.map((l) => l[1]).join('\n') + '\n',
  );
}

/** Waits until every subscriber has every event the writers appended, or nothing arrives for `idleMs`. */
async function awaitStragglers(results: WriterResult[], layout: SlotLayout, subscribers: Deliveries[], idleMs: number) {
  const slots: number[] = [];
  for (const result of results) {
    for (const [k, i, , doneAt] of result.samples) {
      if (!Number.isNaN(doneAt)) slots.push((result.writer * layout.targetsPerWriter + k) * layout.perTarget + i);
    }
  }
  const missing = () => subscribers.reduce((acc, d) => acc + slots.filter((s) => Number.isNaN(d.at[s])).length, 0);
  let last = missing();
  let since = performance.now();
  while (last > 0 && performance.now() - since < idleMs) {
    await sleep(50);
    const now = missing();
    if (now < last) since = performance.now();
    last = now;
  }
}

interface ProcessUsage {
  supervisorCpuMs: number;
  controllersCpuMs: number;
  writersCpuMs: number;
  benchCpuMs: number;
  wallMs: number;
  /** The whole machine's CPU (every core) over the same time: busy, and available. */
  machineBusyMs: number;
  machineTotalMs: number;
  supervisorRssKiB: { before: number; max: number; after: number };
  /** Main threads (event loops) of the supervisor and of this process (the subscribers' reader): scheduler deltas. */
  supervisorSched: SchedStat;
  benchSched: SchedStat;
}

function schedDelta(a: SchedStat, b: SchedStat): SchedStat {
  return { runMs: b.runMs - a.runMs, waitMs: b.waitMs - a.waitMs, slices: b.slices - a.slices };
}

/** CPU (and the supervisor's RSS, sampled) of every process involved while `body` runs. */
async function measureUsage<T>(
  pids: { supervisor: number; controllers: number[]; writers: number[] },
  body: () => Promise<T>,
): Promise<{ value: T; usage: ProcessUsage }> {
  const total = (list: number[]) => list.reduce((acc, pid) => acc + cpuMs(pid), 0);
  const sup0 = cpuMs(pids.supervisor);
  const ctl0 = total(pids.controllers);
  const wr0 = total(pids.writers);
  const self0 = process.cpuUsage();
  const machine0 = machineCpuMs();
  const supSched0 = schedStat(pids.supervisor);
  const benchSched0 = schedStat('self');
  const wall0 = performance.now();
  const before = rssKiB(pids.supervisor);
  let max = before;
  const sampler = setInterval(() => (max = Math.max(max, rssKiB(pids.supervisor))), 250);
  try {
    const value = await body();
    const self = process.cpuUsage(self0);
    const machine = machineCpuMs();
    return {
      value,
      usage: {
        supervisorCpuMs: cpuMs(pids.supervisor) - sup0,
        controllersCpuMs: total(pids.controllers) - ctl0,
        writersCpuMs: total(pids.writers) - wr0,
        benchCpuMs: (self.user + self.system) / 1000,
        wallMs: performance.now() - wall0,
        machineBusyMs: machine.busy - machine0.busy,
        machineTotalMs: machine.total - machine0.total,
        supervisorRssKiB: { before, max, after: rssKiB(pids.supervisor) },
        supervisorSched: schedDelta(supSched0, schedStat(pids.supervisor)),
        benchSched: schedDelta(benchSched0, schedStat('self')),
      },
    };
  } finally {
    clearInterval(sampler);
  }
}

interface StreamPhase {
  label: string;
  mode: 'file' | 'http';
  rate: number;
  durationMs: number;
  stats: DeliveryStats;
  usage: ProcessUsage;
  connectMs?: number;
}

/**
 * One run: `subscriberCount` supervisor-stream subscribers (connected, headers received, before anything is
 * sent), the writers appending at `rate` events/s in all, then the stragglers, then the figures.
 */
async function streamRun(
  sup: TestSupervisor,
  writers: WriterPool,
  controllerPids: number[],
  options: {
    label: string;
    run: number;
    mode: 'file' | 'http';
    rate: number;
    durationMs: number;
    subscribers: number;
    /** Each writer's clock minus ours (ms). */
    clockOffsets: number[];
  },
): Promise<StreamPhase> {
  const targetsPerWriter = writers.targets[0].length;
  const targetCount = writers.targets.length * targetsPerWriter;
  const ratePerTarget = options.rate / targetCount;
  const layout: SlotLayout = {
    run: options.run,
    targetsPerWriter,
    perTarget: Math.floor((options.durationMs / 1000) * ratePerTarget),
    slots: targetCount * Math.floor((options.durationMs / 1000) * ratePerTarget),
  };
  // Warm the path first (the writers' first appends open the logs; a controller loads its body parser on its
  // first POST), unobserved: a separate run whose events no subscriber counts.
  await writers.run({
    run: options.run + 1000,
    mode: options.mode,
    base: sup.base,
    ratePerTarget: Math.min(ratePerTarget, 20),
    durationMs: 1000,
    startAt: wallNow() + 50,
    padBytes: PAD_BYTES,
  });
  const deliveries = Array.from({ length: options.subscribers }, () => new Deliveries(layout));
  const url = `${sup.base}/v0/events/stream`;
  const connect0 = performance.now();
  const streams = await subscribeMany(options.subscribers, 50, (index) =>
    subscribe(url, (frame, at) => {
      if (frame.event === 'tagged_event') deliveries[index].frame(frame.data, at);
    }),
  );
  const connectMs = performance.now() - connect0;
  try {
    // Every stream starts at the head: let the last one's setup settle before the first event is due.
    await sleep(300);
    const spec: RunSpec = {
      run: options.run,
      mode: options.mode,
      base: sup.base,
      ratePerTarget,
      durationMs: options.durationMs,
      startAt: wallNow() + 300,
      padBytes: PAD_BYTES,
    };
    const { value: results, usage } = await measureUsage(
      { supervisor: sup.pid, controllers: controllerPids, writers: writers.pids },
      async () => {
        const results = await writers.run(spec);
        await awaitStragglers(results, layout, deliveries, STRAGGLER_WAIT_MS);
        return results;
      },
    );
    const stats = deliveryStats(results, layout, deliveries, streams, spec.startAt + WARMUP_MS, options.clockOffsets);
    if (DUMP_DIR && options.subscribers === 1)
      dumpDeliveries(options.run, results, layout, deliveries[0], options.clockOffsets);
    return { ...options, stats, usage, connectMs };
  } finally {
    for (const s of streams) s.close();
  }
}

/** Throughput of `POST /v0/city/{name}/events` through the supervisor, one request in flight per city (events/s). */
async function httpCapacity(sup: TestSupervisor, writers: WriterPool): Promise<number> {
  const spec = (run: number, durationMs: number): RunSpec => ({
    run,
    mode: 'http',
    base: sup.base,
    ratePerTarget: 100_000,
    durationMs,
    startAt: wallNow() + 50,
    padBytes: PAD_BYTES,
    closedLoop: true,
  });
  await writers.run(spec(2001, 500)); // warm-up: every controller loads its body parser on its first POST
  const results = await writers.run(spec(2002, HTTP_PROBE_MS));
  return (results.reduce((n, r) => n + r.sent, 0) / HTTP_PROBE_MS) * 1000;
}

// ---------------------------------------------------------------------------------------------------------------
// 3. List

interface ListPhase {
  city: string;
  events: number;
  fileBytes: number;
  writeMs: number;
  registerMs: number;
  head: number;
  newest: Summary;
  newestDirect: Summary;
  deep: Summary;
  deepCursorSeq: number;
  supervisor: Summary;
}

/** Writes a log of `count` well-formed events (seq 1..count, ts 1 ms apart, ~150-byte payloads). */
function writeBigLog(path: string, count: number): number {
  const fd = openSync(path, 'w');
  let bytes = 0;
  try {
    const note = 'n'.repeat(128);
    const t0 = Date.now() - count - 60_000;
    const batch = 10_000;
    for (let from = 1; from <= count; from += batch) {
      let text = '';
      for (let seq = from; seq < from + batch && seq <= count; seq++) {
        const ts = new Date(t0 + seq).toISOString();
        text += `{"seq":${seq},"type":"bench.filler","ts":"${ts}","actor":"bench","payload":{"n":${seq},"note":"${note}"}}\n`;
      }
      const buf = Buffer.from(text);
      let written = 0;
      while (written < buf.length) written += writeSync(fd, buf, written);
      bytes += buf.length;
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}

async function listPhase(sup: TestSupervisor): Promise<ListPhase> {
  const city = 'big';
  const dir = sup.cityDir(city);
  const paths = cityPaths(dir);
  mkdirSync(paths.runtimeDir, { recursive: true });
  // A log this size must not be rotated away under us (the default threshold is 256 MiB).
  writeFileSync(
    paths.config,
    '[workspace]\nstart_command = "sleep 3600"\n\n[events]\nrotation_max_bytes = 4294967296\n',
  );
  const w0 = performance.now();
  const fileBytes = writeBigLog(paths.events, LIST_EVENTS);
  const writeMs = performance.now() - w0;

  const r0 = performance.now();
  const { response, error } = await sup.api.POST('/v0/cities/register', {
    params: { header: CSRF },
    body: { path: dir, name: city },
  });
  if (response.status !== 201) throw new Error(`register ${city}: HTTP ${response.status}: ${JSON.stringify(error)}`);
  await waitUntil(`${city} to run`, async () => (await sup.city(city))?.running === true, 30_000);
  const registerMs = performance.now() - r0;

  const agent = keepAliveAgent(1);
  const base = { host: '127.0.0.1', port: sup.port, agent };
  const page = (path: string, label: string): GetTarget => ({ label, options: { ...base, path } });
  const newest = page(`/v0/city/${city}/events?limit=100`, 'newest page');
  const deepCursorSeq = 1001;
  const deep = page(
    `/v0/city/${city}/events?limit=100&cursor=${encodeURIComponent(encodePageToken(deepCursorSeq))}`,
    'deep page',
  );
  const merged = page('/v0/events?limit=100', 'GET /v0/events');
  const direct: GetTarget = {
    label: 'newest page (controller socket)',
    options: {
      socketPath: paths.socket,
      path: `/v0/city/${city}/events?limit=100`,
      headers: { host: 'localhost' },
      agent: keepAliveAgent(1),
    },
  };

  // The pages must be what we think they are before they are timed.
  const first = await get(newest);
  const body = JSON.parse(first.body.toString()) as { items: { seq: number }[]; next_cursor?: string };
  const head = first.status === 200 ? (body.items[0]?.seq ?? 0) : 0;
  if (body.items.length !== 100 || head < LIST_EVENTS || !body.next_cursor) {
    throw new Error(`newest page of ${city}: unexpected ${first.status} ${first.body.toString().slice(0, 300)}`);
  }
  const deepBody = JSON.parse((await get(deep)).body.toString()) as { items: { seq: number }[] };
  if (deepBody.items[0]?.seq !== deepCursorSeq - 1 || deepBody.items.length !== 100) {
    throw new Error(`deep page of ${city}: unexpected ${JSON.stringify(deepBody.items.slice(0, 2))}`);
  }

  const timed = async (target: GetTarget) => {
    await sequentialLatencies(target, LIST_WARMUP);
    return summarize(await sequentialLatencies(target, LIST_REQUESTS));
  };
  const result: ListPhase = {
    city,
    events: LIST_EVENTS,
    fileBytes,
    writeMs,
    registerMs,
    head,
    newest: await timed(newest),
    newestDirect: await timed(direct),
    deep: await timed(deep),
    deepCursorSeq,
    supervisor: await timed(merged),
  };
  agent.destroy();
  (direct.options.agent as { destroy(): void }).destroy();
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// 4. `ctl events --seq` cold start

interface CommandTiming {
  label: string;
  args: string[];
  runs: Summary;
  /** Spawn → its first byte on stdout (the answer), when it printed one. */
  firstOutput: Summary;
  output: string;
}

function runOnce(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ ms: number; firstOutputMs: number; code: number; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let firstOutputMs = NaN;
    child.stdout.on('data', (chunk: Buffer) => {
      if (Number.isNaN(firstOutputMs)) firstOutputMs = performance.now() - t0;
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      resolvePromise({ ms: performance.now() - t0, firstOutputMs, code: code ?? -1, stdout, stderr }),
    );
  });
}

async function timeCommand(label: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<CommandTiming> {
  const times: number[] = [];
  const firstOutput: number[] = [];
  let output = '';
  for (let i = 0; i < CLI_WARMUP + CLI_RUNS; i++) {
    const run = await runOnce(args, env, cwd);
    if (run.code !== 0) throw new Error(`${label}: exit ${run.code}: ${run.stderr}`);
    output = run.stdout.trim();
    if (i >= CLI_WARMUP) {
      times.push(run.ms);
      if (!Number.isNaN(run.firstOutputMs)) firstOutput.push(run.firstOutputMs);
    }
  }
  return { label, args, runs: summarize(times), firstOutput: summarize(firstOutput), output };
}

async function cliPhase(sup: TestSupervisor, city: string): Promise<CommandTiming[]> {
  const env = { ...sup.env };
  delete env.CTL_CITY;
  // Diagnostic node options are for the supervisor, not for the client being timed.
  if (SUPERVISOR_NODE_OPTIONS) env.NODE_OPTIONS = process.env.NODE_OPTIONS;
  const ctl = (...args: string[]) => [CTL_ENTRY, ...args];
  return [
    await timeCommand('node -e "" (bare node)', ['-e', ''], env, sup.root),
    await timeCommand('ctl --version', ctl('--version'), env, sup.root),
    await timeCommand('ctl events --seq (supervisor)', ctl('events', '--seq', '--api', sup.base), env, sup.root),
    await timeCommand(
      `ctl events --seq --city ${city}`,
      ctl('events', '--seq', '--api', sup.base, '--city', city),
      env,
      sup.root,
    ),
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// Report

/**
 * Time of a fixed CPU-bound loop in this process (ms): how fast this machine's cores are right now. On a virtual
 * machine it can change by a factor of two from one minute to the next, and every CPU figure with it.
 */
function cpuCalibrationMs(): number {
  const t0 = performance.now();
  let x = 0;
  for (let i = 0; i < 100_000_000; i++) x = (x + i) % 1_000_003;
  if (x < 0) console.log(x); // keep the loop
  return performance.now() - t0;
}

/** The commit measured, and whether the working tree differed from it (the build is of the working tree). */
function gitState(): { commit: string; dirty_files: number } {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' }).trim();
    const dirty = git('status', '--porcelain', '--untracked-files=no');
    return { commit: git('rev-parse', '--short', 'HEAD'), dirty_files: dirty ? dirty.split('\n').length : 0 };
  } catch {
    return { commit: 'unknown', dirty_files: NaN };
  }
}

interface Meta {
  cpu_calibration_ms_at_start: number;
  git: { commit: string; dirty_files: number };
  /** The nice value everything ran at, when BENCH_EVENTS_NICE set one. */
  nice?: number;
  date: string;
  node: string;
  cores: number;
  cpu_model: string;
  kernel: string;
  loadavg_at_start: number[];
}

const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
/** Share of the machine's CPU taken by processes outside the benchmark above which a run is flagged as noisy. */
const NOISY_OTHERS_PCT = 10;

/** The machine's CPU use over a run, in % of all cores: everything, and what processes outside the benchmark used. */
function machineLoad(u: ProcessUsage): { busyPct: number; othersPct: number } {
  const ours = u.supervisorCpuMs + u.controllersCpuMs + u.writersCpuMs + u.benchCpuMs;
  return {
    busyPct: (u.machineBusyMs / u.machineTotalMs) * 100,
    othersPct: (Math.max(0, u.machineBusyMs - ours) / u.machineTotalMs) * 100,
  };
}

function streamRows(phase: StreamPhase): string[][] {
  const s = phase.stats;
  const l = s.latency;
  const zeroLoss = s.lost === 0 && s.duplicates === 0 && s.failed === 0;
  return [
    ['send → frame p50 (ms)', ms(l.median, 3), `≤ ${TARGETS.latencyP50Ms}`, met(l.median <= TARGETS.latencyP50Ms)],
    ['send → frame p90 (ms)', ms(l.p90, 3), '', ''],
    ['send → frame p99 (ms)', ms(l.p99, 3), `≤ ${TARGETS.latencyP99Ms}`, met(l.p99 <= TARGETS.latencyP99Ms)],
    ['send → frame max (ms)', ms(l.max, 3), '', ''],
    [
      '  append (writer: send → append resolved) p50 / p99',
      `${ms(s.append.median, 3)} / ${ms(s.append.p99, 3)}`,
      '',
      '',
    ],
    ['  append resolved → frame p50 / p99', `${ms(s.afterAppend.median, 3)} / ${ms(s.afterAppend.p99, 3)}`, '', ''],
    ...(s.subscribers > 1
      ? [
          [
            "  per event: first subscriber's frame p50 / p99",
            `${ms(s.firstFrame.median, 3)} / ${ms(s.firstFrame.p99, 3)}`,
            '',
            '',
          ],
          [
            "  per event: last subscriber's frame p50 / p99",
            `${ms(s.lastFrame.median, 3)} / ${ms(s.lastFrame.p99, 3)}`,
            '',
            '',
          ],
        ]
      : []),
    ['events sent (failed) / deliveries expected', `${s.sent} (${s.failed}) / ${s.expected}`, '', ''],
    ['achieved rate (events/s)', s.achievedRate.toFixed(0), `${phase.rate}`, ''],
    ['lost / duplicated deliveries', `${s.lost} / ${s.duplicates}`, '0 / 0', met(zeroLoss)],
    ['subscribers with loss / streams ended by server', `${s.subscribersWithLoss} / ${s.streamsEnded}`, '', ''],
    [
      'CPU ms per 1k events: supervisor / controllers / writers / bench client',
      [phase.usage.supervisorCpuMs, phase.usage.controllersCpuMs, phase.usage.writersCpuMs, phase.usage.benchCpuMs]
        .map((v) => ((v / Math.max(1, s.sent)) * 1000).toFixed(0))
        .join(' / '),
      '',
      '',
    ],
    [
      'supervisor CPU (% of one core) / RSS before, max, after (MiB)',
      `${((phase.usage.supervisorCpuMs / phase.usage.wallMs) * 100).toFixed(0)}% / ${mib(phase.usage.supervisorRssKiB.before)}, ${mib(phase.usage.supervisorRssKiB.max)}, ${mib(phase.usage.supervisorRssKiB.after)}`,
      '',
      '',
    ],
    [
      'run-queue wait per wake-up, avg µs (total ms): supervisor / bench reader',
      [phase.usage.supervisorSched, phase.usage.benchSched]
        .map((x) => `${((x.waitMs / Math.max(1, x.slices)) * 1000).toFixed(0)} (${x.waitMs.toFixed(0)})`)
        .join(' / '),
      '',
      '',
    ],
    [
      'machine CPU busy, both cores / of which processes outside the benchmark',
      `${machineLoad(phase.usage).busyPct.toFixed(0)}% / ${machineLoad(phase.usage).othersPct.toFixed(0)}%`,
      '',
      '',
    ],
  ];
}

interface Results {
  latency?: StreamPhase;
  /** POST /v0/city/{name}/events per second, closed loop, one in flight per city. */
  httpCapacity?: number;
  http?: StreamPhase;
  fanout?: StreamPhase;
  list?: ListPhase;
  cli?: CommandTiming[];
}

function printReport(
  meta: Meta,
  results: Results,
  clocks: { offset: number; rtt: number }[],
  calibrationAtEnd: number,
): void {
  const out: string[] = [];
  out.push(
    `ctl events benchmark — node ${meta.node}, ${meta.cores} cores (${meta.cpu_model}), linux ${meta.kernel}; ` +
      `build of ${meta.git.commit}${meta.git.dirty_files ? ` + ${meta.git.dirty_files} modified files` : ''}`,
  );
  if (meta.nice !== undefined) {
    out.push(
      `every benchmark process ran at nice ${meta.nice} (BENCH_EVENTS_NICE): other work on the machine yielded to it`,
    );
  }
  out.push(
    `load average (1/5/15 min) at start: ${meta.loadavg_at_start.join(' ')}, at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; CPU speed check (fixed loop, ms; lower is faster): ` +
      `${ms(meta.cpu_calibration_ms_at_start, 0)} at start, ${ms(calibrationAtEnd, 0)} at end`,
  );
  const worstClock = Math.max(...clocks.map((c) => Math.abs(c.offset)));
  if (clocks.length)
    out.push(
      `writer clocks (performance.timeOrigin + now()) vs ours: max |offset| ${ms(worstClock, 3)} ms, measured by IPC ` +
        `(round trip ≤ ${ms(Math.max(...clocks.map((c) => c.rtt)), 3)} ms) and subtracted; ` +
        `percentiles leave out the first ${WARMUP_MS / 1000} s of each run, loss counts every event`,
    );
  out.push('');
  const header = ['measure', 'value', 'target', ''];
  const streams: [string, StreamPhase | undefined][] = [
    ['1a', results.latency],
    ['1b', results.http],
    ['2', results.fanout],
  ];
  for (const [id, phase] of streams) {
    if (!phase) continue;
    out.push(
      formatTable(
        `${id}. ${phase.label}: ${phase.rate} events/s for ${phase.durationMs / 1000} s over ${CITIES} cities, ` +
          `${phase.stats.subscribers} subscriber${phase.stats.subscribers === 1 ? '' : 's'} of GET /v0/events/stream` +
          (phase.stats.subscribers > 1 ? ` (connected in ${ms(phase.connectMs ?? NaN, 0)} ms)` : ''),
        header,
        streamRows(phase),
      ),
    );
    if (id === '1b' && results.httpCapacity !== undefined) {
      out.push(
        `  rate: ${phase.rate}/s, ${Number.isFinite(HTTP_RATE_FIXED) ? 'fixed by BENCH_EVENTS_HTTP_RATE' : `${HTTP_LOAD_SHARE * 100}% of`} ` +
          `the ${results.httpCapacity.toFixed(0)} POST/s a closed-loop probe reached just before (one request in flight per city, ${HTTP_PROBE_MS / 1000} s)`,
      );
    }
    const others = machineLoad(phase.usage).othersPct;
    if (others >= NOISY_OTHERS_PCT) {
      out.push(
        `  ! other processes used ${others.toFixed(0)}% of the machine's CPU during this run: its latencies are not representative`,
      );
    }
    out.push('');
  }
  const listRow = (label: string, s: Summary, target: boolean) => [
    label,
    ms(s.median, 2),
    ms(s.p90, 2),
    ms(s.p99, 2),
    ms(s.max, 2),
    target ? `≤ ${TARGETS.listMs}` : '',
    target ? met(s.p99 <= TARGETS.listMs) : '',
  ];
  const { list, cli } = results;
  if (list) {
    out.push(
      formatTable(
        `3. List from a ${list.events.toLocaleString('en-US')}-event city log (${mib(list.fileBytes / 1024)} MiB, head seq ${list.head}; ` +
          `written in ${ms(list.writeMs, 0)} ms, registered and running in ${ms(list.registerMs, 0)} ms); ` +
          `${LIST_REQUESTS} sequential keep-alive GETs each after ${LIST_WARMUP} warm-up; ms; target on p99`,
        ['request', 'p50', 'p90', 'p99', 'max', 'target', ''],
        [
          listRow(`GET /v0/city/${list.city}/events?limit=100 (newest, via supervisor)`, list.newest, true),
          listRow('  same, straight to the controller socket', list.newestDirect, false),
          listRow(`  deep page: cursor below seq ${list.deepCursorSeq}`, list.deep, true),
          listRow(`GET /v0/events?limit=100 (supervisor, ${CITIES + 1} cities + own log)`, list.supervisor, true),
        ],
      ),
    );
    out.push('');
  }
  if (cli) {
    out.push(
      formatTable(
        `4. Cold start, ${CLI_RUNS} runs each after ${CLI_WARMUP} warm-up (wall time from spawn to exit; ms; target on the median)`,
        ['command', 'median', 'p90', 'min', 'max', 'answer printed (median)', 'target', ''],
        cli.map((c) => {
          const isSeq = c.label.startsWith('ctl events --seq');
          return [
            c.label,
            ms(c.runs.median, 1),
            ms(c.runs.p90, 1),
            ms(c.runs.min, 1),
            ms(c.runs.max, 1),
            ms(c.firstOutput.median, 1),
            isSeq ? `≤ ${TARGETS.seqColdStartMs}` : '',
            isSeq ? met(c.runs.median <= TARGETS.seqColdStartMs) : '',
          ];
        }),
      ),
    );
    out.push('');
  }
  console.log(out.join('\n'));
}

function streamJson(phase: StreamPhase) {
  const s = phase.stats;
  const perK = (v: number) => round((v / Math.max(1, s.sent)) * 1000, 1);
  return {
    label: phase.label,
    mode: phase.mode,
    rate_events_per_s: phase.rate,
    achieved_rate_events_per_s: round(s.achievedRate, 1),
    duration_ms: phase.durationMs,
    subscribers: s.subscribers,
    connect_ms: phase.connectMs === undefined ? undefined : round(phase.connectMs, 1),
    sent: s.sent,
    failed: s.failed,
    deliveries_expected: s.expected,
    delivered: s.delivered,
    lost: s.lost,
    duplicates: s.duplicates,
    stray_frames: s.strays,
    malformed_frames: s.malformed,
    subscribers_with_loss: s.subscribersWithLoss,
    streams_ended_by_server: s.streamsEnded,
    latency_ms: rounded(s.latency, 4),
    append_ms: rounded(s.append, 4),
    append_to_frame_ms: rounded(s.afterAppend, 4),
    ...(s.subscribers > 1
      ? { first_subscriber_frame_ms: rounded(s.firstFrame, 4), last_subscriber_frame_ms: rounded(s.lastFrame, 4) }
      : {}),
    cpu_ms_per_1k_events: {
      supervisor: perK(phase.usage.supervisorCpuMs),
      controllers: perK(phase.usage.controllersCpuMs),
      writers: perK(phase.usage.writersCpuMs),
      bench_client: perK(phase.usage.benchCpuMs),
    },
    supervisor_cpu_pct_of_core: round((phase.usage.supervisorCpuMs / phase.usage.wallMs) * 100, 1),
    supervisor_rss_kib: phase.usage.supervisorRssKiB,
    machine_cpu_busy_pct: round(machineLoad(phase.usage).busyPct, 1),
    main_thread_sched: {
      supervisor: phase.usage.supervisorSched,
      bench_reader: phase.usage.benchSched,
    },
    machine_cpu_other_processes_pct: round(machineLoad(phase.usage).othersPct, 1),
    targets: {
      p50_ms: TARGETS.latencyP50Ms,
      p99_ms: TARGETS.latencyP99Ms,
      p50_met: s.latency.median <= TARGETS.latencyP50Ms,
      p99_met: s.latency.p99 <= TARGETS.latencyP99Ms,
      zero_loss_met: s.lost === 0 && s.duplicates === 0 && s.failed === 0,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------

/** Runs the event bus benchmark; rejects on failure (after cleaning up). */
export async function runEvents(): Promise<void> {
  const wallStart = performance.now();
  const meta: Meta = {
    cpu_calibration_ms_at_start: round(cpuCalibrationMs(), 1),
    git: gitState(),
    date: new Date().toISOString(),
    node: process.version,
    cores: availableParallelism(),
    cpu_model: cpus()[0]?.model ?? 'unknown',
    kernel: release(),
    loadavg_at_start: loadavg().map((l) => round(l, 2)),
  };
  console.log(`ctl events benchmark: node ${meta.node}, ${meta.cores} cores — starting a supervisor…`);

  const priorityBefore = getPriority();
  if (NICE !== undefined && Number.isInteger(NICE)) {
    setPriority(NICE); // inherited by every process started from here on
    meta.nice = getPriority();
  }
  let sup: TestSupervisor | undefined;
  let writers: WriterPool | undefined;
  const { root, cleanup, interrupted } = benchRoot(
    'ctl-bench-events-',
    async () => {
      await writers?.stop();
      if (sup) await sup.cleanup();
    },
    () => {
      writers?.kill();
      if (meta.nice !== undefined) {
        try {
          setPriority(priorityBefore);
        } catch {
          // lowering a nice value may need privileges we dropped; the process ends soon anyway
        }
      }
    },
  );

  try {
    sup = await TestSupervisor.start({
      root,
      env: SUPERVISOR_NODE_OPTIONS ? { NODE_OPTIONS: SUPERVISOR_NODE_OPTIONS } : {},
    });
    const names = Array.from({ length: CITIES }, (_, i) => `ev-${String(i + 1).padStart(2, '0')}`);
    console.log(`creating ${CITIES} cities…`);
    for (const name of names) await sup.createCity(name);
    const { data: cities } = await sup.api.GET('/v0/cities');
    const controllerPids = (cities?.items ?? []).flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
    if (controllerPids.length !== CITIES) throw new Error(`expected ${CITIES} running controllers`);

    const targets: WriteTarget[][] = names.map((name) => {
      const paths = cityPaths(sup!.cityDir(name));
      return [{ city: name, path: paths.events, lockPath: paths.eventsLock }];
    });
    const results: Results = {};
    let clocks: { offset: number; rtt: number }[] = [];
    if (PHASES.has('latency') || PHASES.has('http') || PHASES.has('fanout')) {
      writers = await WriterPool.start(targets);
      clocks = await writers.clockOffsets();
    }
    if (writers && PHASES.has('latency')) {
      console.log(
        `1a append → SSE latency, file appends, ${LATENCY_RATE} events/s for ${LATENCY_DURATION_MS / 1000} s…`,
      );
      results.latency = await streamRun(sup, writers, controllerPids, {
        label: 'Append → SSE frame, writers append to the city logs (EventLog, built)',
        run: 1,
        mode: 'file',
        rate: LATENCY_RATE,
        durationMs: LATENCY_DURATION_MS,
        subscribers: 1,
        clockOffsets: clocks.map((c) => c.offset),
      });
    }
    if (writers && PHASES.has('http')) {
      const probe = await httpCapacity(sup, writers);
      results.httpCapacity = probe;
      const httpRate = Number.isFinite(HTTP_RATE_FIXED)
        ? HTTP_RATE_FIXED
        : Math.max(CITIES, Math.min(LATENCY_RATE, Math.floor((probe * HTTP_LOAD_SHARE) / CITIES) * CITIES));
      console.log(
        `1b POST /v0/city/{name}/events → SSE latency, ${httpRate} events/s (capacity probe: ${probe.toFixed(0)}/s) for ${HTTP_DURATION_MS / 1000} s…`,
      );
      results.http = await streamRun(sup, writers, controllerPids, {
        label: 'POST /v0/city/{name}/events (via supervisor) → SSE frame',
        run: 2,
        mode: 'http',
        rate: httpRate,
        durationMs: HTTP_DURATION_MS,
        subscribers: 1,
        clockOffsets: clocks.map((c) => c.offset),
      });
    }
    if (writers && PHASES.has('fanout')) {
      console.log(
        `2 fan-out: ${FANOUT_SUBSCRIBERS} subscribers, ${FANOUT_RATE} events/s for ${FANOUT_DURATION_MS / 1000} s…`,
      );
      results.fanout = await streamRun(sup, writers, controllerPids, {
        label: 'Fan-out, file appends',
        run: 3,
        mode: 'file',
        rate: FANOUT_RATE,
        durationMs: FANOUT_DURATION_MS,
        subscribers: FANOUT_SUBSCRIBERS,
        clockOffsets: clocks.map((c) => c.offset),
      });
    }
    // The offsets should not move (every process counts on the same monotonic clock from its own origin): check.
    const clocksAfter = writers ? await writers.clockOffsets() : [];
    await writers?.stop();

    if (PHASES.has('list')) {
      console.log(`3 list: writing a ${LIST_EVENTS.toLocaleString('en-US')}-event log and registering it…`);
      results.list = await listPhase(sup);
    }
    if (PHASES.has('cli')) {
      console.log(`4 ctl events --seq cold start…`);
      results.cli = await cliPhase(sup, names[0]);
    }

    const health = await get({ label: 'health', options: { host: '127.0.0.1', port: sup.port, path: '/health' } });
    if (health.status !== 200) throw new Error(`supervisor /health: HTTP ${health.status}`);

    const cleanupStart = performance.now();
    await cleanup();
    const cleanupMs = performance.now() - cleanupStart;

    const calibrationAtEnd = cpuCalibrationMs();
    printReport(meta, results, clocks, calibrationAtEnd);

    const listJson = (s: Summary) => ({
      ...rounded(s, 3),
      target_ms: TARGETS.listMs,
      p99_met: s.p99 <= TARGETS.listMs,
    });
    const { list, cli } = results;
    const report = {
      meta: {
        ...meta,
        loadavg_at_end: loadavg().map((l) => round(l, 2)),
        cpu_calibration_ms_at_end: round(calibrationAtEnd, 1),
        total_runtime_s: round((performance.now() - wallStart) / 1000, 1),
        cleanup_ms: round(cleanupMs, 0),
        cities: CITIES,
        phases: [...PHASES],
        warmup_excluded_ms: WARMUP_MS,
        writer_clock_offsets_ms: clocks.map((c, i) => ({
          offset: round(c.offset, 4),
          rtt: round(c.rtt, 4),
          offset_after_runs: round(clocksAfter[i]?.offset ?? NaN, 4),
        })),
      },
      latency_file: results.latency && streamJson(results.latency),
      latency_http: results.http && {
        ...streamJson(results.http),
        capacity_probe_posts_per_s: round(results.httpCapacity ?? NaN, 1),
        rate_rule: Number.isFinite(HTTP_RATE_FIXED)
          ? 'BENCH_EVENTS_HTTP_RATE'
          : `${HTTP_LOAD_SHARE} × closed-loop capacity, one request in flight per city`,
      },
      fanout: results.fanout && streamJson(results.fanout),
      list: list && {
        city: list.city,
        events: list.events,
        file_bytes: list.fileBytes,
        write_ms: round(list.writeMs, 0),
        register_to_running_ms: round(list.registerMs, 0),
        head_seq: list.head,
        newest_page_ms: listJson(list.newest),
        newest_page_direct_ms: rounded(list.newestDirect, 3),
        deep_page_ms: { ...listJson(list.deep), cursor_below_seq: list.deepCursorSeq },
        supervisor_list_ms: listJson(list.supervisor),
      },
      cli: cli?.map((c) => ({
        label: c.label,
        args: c.args.map((a) => (a === CTL_ENTRY ? 'dist/cli/main.js' : a)),
        runs_ms: rounded(c.runs, 1),
        first_output_ms: rounded(c.firstOutput, 1),
        output: c.output,
        ...(c.label.startsWith('ctl events --seq')
          ? { target_ms: TARGETS.seqColdStartMs, median_met: c.runs.median <= TARGETS.seqColdStartMs }
          : {}),
      })),
    };
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(OUT_FILE, JSON.stringify(report, null, 2) + '\n');
    console.log(`total ${report.meta.total_runtime_s} s (cleanup ${report.meta.cleanup_ms} ms); wrote ${OUT_FILE}`);
  } catch (err) {
    if (interrupted()) return;
    if (sup?.output) console.error(`--- supervisor output (tail) ---\n${sup.output.slice(-4000)}`);
    throw err;
  } finally {
    await cleanup();
  }
}
