/**
 * Many supervisor streams opened at once on a busy machine (issue 30, point 9): a real supervisor and one city
 * whose log holds ~12,000 events and whose beads are being created and slung in a bounded loop, then 500
 * `GET /v0/events/stream` opened at once (each its own connection, as 500 dashboards or `ctl events --follow`
 * would). Measured while they open: the time until every one has its 200 and headers, and `GET /health` and a
 * write (`POST …/beads`), each sent on a new connection as `curl` or `ctl` would, 40 a second of each.
 * Prints a table beside the goals (met/MISSED) and the load average, and writes `.bench-out/stream-opens.json`.
 * Run with `npm run bench -- stream-opens`.
 *
 * For diagnosis: BENCH_STREAMS=<n> (how many streams), BENCH_STREAMS_LOG_EVENTS=<n> (the log's history),
 * BENCH_STREAMS_SUPERVISOR_NODE_OPTIONS="--import=$PWD/bench/cpu-profile.mjs" BENCH_CPU_PROFILE_DIR=/tmp/prof
 * BENCH_CPU_PROFILE_MATCH='supervisor run' (a CPU profile of the supervisor; bench/cpu-profile-summary.mjs).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request, type ClientRequest } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { EventLog } from '../shared/events/event-log.js';
import { cityPaths } from '../shared/paths.js';
import { CSRF, TestSupervisor } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { benchRoot } from './bench-root.js';
import { cpuMs } from './proc.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, ms } from './table.js';

const num = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return process.env[name] !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
};

const STREAMS = num('BENCH_STREAMS', 500);
const LOG_EVENTS = num('BENCH_STREAMS_LOG_EVENTS', 12_000);
/** Beads the load creates and slings at most (it stops earlier when the measurement ends). */
const LOAD_BEADS = 2_000;
/** Requests the load keeps in flight. */
const LOAD_WORKERS = 2;
/** The load runs this long before the streams open, so the opening meets a city already busy. */
const WARM_MS = 3_000;
/** Streams not open by then are counted as not opened: the figure is then "more than this". */
const OPEN_BOUND_MS = 60_000;
/** Probes go on this long after the last stream opened (what 500 open streams cost once open). */
const AFTER_OPEN_MS = 5_000;
/** A probe of each kind starts this often. */
const PROBE_GAP_MS = 25;
const SUPERVISOR_NODE_OPTIONS = process.env.BENCH_STREAMS_SUPERVISOR_NODE_OPTIONS;
const CITY = 'busy';

const GOALS = { allOpenMs: 3_000, healthP99Ms: 100, writeP99Ms: 100 };

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'stream-opens.json');

interface Answer {
  status: number;
  body: string;
}

/** One request on `agent` (false: a new connection of its own), its body read to the end. */
function send(
  url: string,
  method: string,
  agent: Agent | false,
  body?: unknown,
  timeoutMs = OPEN_BOUND_MS,
): Promise<Answer> {
  return new Promise((done, fail) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string | number> = payload
      ? { ...CSRF, 'content-type': 'application/json', 'content-length': payload.length }
      : {};
    const req = request(url, { method, agent, headers, timeout: timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
      res.on('error', fail);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: no answer in ${timeoutMs} ms`)));
    req.on('error', fail);
    req.end(payload);
  });
}

/** A latency and when its request was sent (ms on `performance.now()`). */
interface Sample {
  at: number;
  ms: number;
  ok: boolean;
}

/**
 * Starts `once` every PROBE_GAP_MS until `stop()`, whether or not the ones before have been answered (as
 * monitoring and people's commands come, not waiting for the supervisor), and resolves with every latency.
 */
async function probe(once: () => Promise<boolean>, stop: () => boolean): Promise<Sample[]> {
  const samples: Promise<Sample>[] = [];
  while (!stop()) {
    const at = performance.now();
    samples.push(
      once().then(
        (ok) => ({ at, ms: performance.now() - at, ok }),
        () => ({ at, ms: performance.now() - at, ok: false }),
      ),
    );
    await sleep(PROBE_GAP_MS);
  }
  return Promise.all(samples);
}

/** The city's beads created and slung, `LOAD_WORKERS` at a time, until `stop()` or `LOAD_BEADS` of them. */
async function busyCity(base: string, stop: () => boolean): Promise<{ beads: number; failed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: LOAD_WORKERS });
  let beads = 0;
  let failed = 0;
  const worker = async () => {
    while (!stop() && beads < LOAD_BEADS) {
      const n = beads++;
      try {
        const created = await send(`${base}/v0/city/${CITY}/beads`, 'POST', agent, { title: `load ${n}` });
        if (created.status !== 201) throw new Error(`create: ${created.status}`);
        const id = (JSON.parse(created.body) as { id: string }).id;
        const slung = await send(`${base}/v0/city/${CITY}/sling`, 'POST', agent, {
          target: 'worker',
          bead: id,
          no_convoy: true,
        });
        if (slung.status >= 300) throw new Error(`sling: ${slung.status} ${slung.body}`);
      } catch {
        failed++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: LOAD_WORKERS }, worker));
  } finally {
    agent.destroy();
  }
  return { beads, failed };
}

/** Opens one supervisor stream on a connection of its own; resolves once its 200 and headers came. */
function openStream(base: string, opened: ClientRequest[]): Promise<void> {
  return new Promise((done, fail) => {
    const req = request(`${base}/v0/events/stream`, { agent: false, headers: { Accept: 'text/event-stream' } });
    opened.push(req);
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        fail(new Error(`stream: HTTP ${res.statusCode}`));
        return;
      }
      // What the streams carry is not what is measured here: taken and dropped, so the client keeps up.
      res.resume();
      done();
    });
    req.on('error', fail);
    req.end();
  });
}

function cityToml(): string {
  // The agent's program is not installed: slung work waits for it (events, no sessions to run).
  return `[workspace]\nprovider = "absent"\n\n[providers.absent]\ncommand = "/nonexistent/bench-agent"\n\n[[agent]]\nname = "worker"\nprovider = "absent"\nmin_active_sessions = 0\n`;
}

/** ~LOG_EVENTS events of the city's history, appended through the log as a controller appends them. */
async function fillLog(dir: string): Promise<void> {
  const paths = cityPaths(dir);
  const log = EventLog.at(paths.events, paths.eventsLock);
  const pad = 'x'.repeat(200);
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < LOG_EVENTS; i++) {
    pending.push(log.appendCustom({ type: 'bench.history', actor: 'bench', subject: `h${i}`, payload: { i, pad } }));
    if (pending.length === 500) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  log.close();
}

interface Figures {
  streams: number;
  opened: number;
  open_failed: number;
  all_open_ms: number;
  health: Summary;
  health_failed: number;
  write: Summary;
  write_failed: number;
  health_after_open: Summary;
  /** `/health` on one kept-alive connection: the event loop's delay alone, without a new connection's peer lookup. */
  health_kept_alive: Summary;
  write_after_open: Summary;
  /** The supervisor's CPU time while the streams opened, and per second once they were open. */
  supervisor_cpu_opening_ms: number;
  supervisor_cpu_open_ms_per_s: number;
  /** Events the city's log grew by per second while measuring (what the hub fans out to every stream). */
  city_events_per_s: number;
  load_beads: number;
  load_failed: number;
  log_events_at_start: number;
  loadavg_before: number[];
  loadavg_after: number[];
}

export async function runStreamOpens(): Promise<void> {
  let sup: TestSupervisor | undefined;
  const requests: ClientRequest[] = [];
  const { root, cleanup, interrupted } = benchRoot(
    'ctl-bench-streams-',
    async () => {
      for (const req of requests) req.destroy();
      if (sup) await sup.cleanup();
    },
    () => {
      for (const req of requests) req.destroy();
    },
  );
  try {
    console.log(`stream-opens: ${STREAMS} supervisor streams at once, a city with ${LOG_EVENTS} events being busy…`);
    sup = await TestSupervisor.start({
      root,
      env: SUPERVISOR_NODE_OPTIONS ? { NODE_OPTIONS: SUPERVISOR_NODE_OPTIONS } : {},
    });
    const base = sup.base;
    const dir = sup.cityDir(CITY);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'city.toml'), cityToml());
    const registered = await send(`${base}/v0/cities/register`, 'POST', false, { path: dir });
    if (registered.status !== 201) throw new Error(`register: ${registered.status} ${registered.body}`);
    const probeSup = sup;
    await waitUntil(`${CITY} to run`, async () => (await probeSup.city(CITY))?.running === true, 60_000);
    await fillLog(dir);
    const logEvents = EventLog.at(cityPaths(dir).events, cityPaths(dir).eventsLock).head();

    let stopping = false;
    const stop = () => stopping;
    const load = busyCity(base, stop);
    const health = probe(async () => (await send(`${base}/health`, 'GET', false)).status === 200, stop);
    const keptAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    const healthKeptAlive = probe(async () => (await send(`${base}/health`, 'GET', keptAlive)).status === 200, stop);
    let writes = 0;
    const write = probe(
      async () =>
        (await send(`${base}/v0/city/${CITY}/beads`, 'POST', false, { title: `probe ${writes++}` })).status === 201,
      stop,
    );
    await sleep(WARM_MS);

    const loadavgBefore = loadavg().map((l) => round(l, 2));
    const cityLog = EventLog.at(cityPaths(dir).events, cityPaths(dir).eventsLock);
    const headBefore = cityLog.head();
    const cpuBefore = cpuMs(sup.pid);
    const openStart = performance.now();
    let opened = 0;
    let openFailed = 0;
    const opens = Array.from({ length: STREAMS }, () =>
      openStream(base, requests).then(
        () => void opened++,
        () => void openFailed++,
      ),
    );
    const bound = sleep(OPEN_BOUND_MS).then(() => 'bound' as const);
    const outcome = await Promise.race([Promise.all(opens).then(() => 'all' as const), bound]);
    const openEnd = performance.now();
    const allOpenMs = outcome === 'all' && openFailed === 0 ? openEnd - openStart : NaN;
    const cpuOpened = cpuMs(sup.pid);
    await sleep(AFTER_OPEN_MS);
    const cpuAfter = cpuMs(sup.pid);
    const eventsPerS = ((cityLog.head() - headBefore) / (performance.now() - openStart)) * 1000;
    stopping = true;
    const [loadResult, healthSamples, writeSamples, keptAliveSamples] = await Promise.all([
      load,
      health,
      write,
      healthKeptAlive,
    ]);
    keptAlive.destroy();
    const loadavgAfter = loadavg().map((l) => round(l, 2));

    // A probe counts as during the opening when it was in flight at any time of it.
    const during = (s: Sample[]) => s.filter((x) => x.at <= openEnd && x.at + x.ms >= openStart);
    const afterOpen = (s: Sample[]) => s.filter((x) => x.at > openEnd);
    const latencies = (s: Sample[]) => rounded(summarize(s.map((x) => x.ms)), 1);
    const figures: Figures = {
      streams: STREAMS,
      opened,
      open_failed: openFailed,
      all_open_ms: round(allOpenMs, 0),
      health: latencies(during(healthSamples)),
      health_failed: during(healthSamples).filter((x) => !x.ok).length,
      write: latencies(during(writeSamples)),
      write_failed: during(writeSamples).filter((x) => !x.ok).length,
      health_after_open: latencies(afterOpen(healthSamples)),
      health_kept_alive: latencies(during(keptAliveSamples)),
      write_after_open: latencies(afterOpen(writeSamples)),
      supervisor_cpu_opening_ms: round(cpuOpened - cpuBefore, 0),
      supervisor_cpu_open_ms_per_s: round(((cpuAfter - cpuOpened) / AFTER_OPEN_MS) * 1000, 0),
      city_events_per_s: round(eventsPerS, 0),
      load_beads: loadResult.beads,
      load_failed: loadResult.failed,
      log_events_at_start: logEvents,
      loadavg_before: loadavgBefore,
      loadavg_after: loadavgAfter,
    };
    await cleanup();
    print(figures, outcome === 'bound' ? openEnd - openStart : undefined);
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(
      OUT_FILE,
      `${JSON.stringify({ date: new Date().toISOString(), cores: availableParallelism(), goals: GOALS, ...figures }, null, 2)}\n`,
    );
    console.log(`wrote ${OUT_FILE}`);
  } catch (err) {
    if (interrupted()) return;
    if (sup?.output) console.error(`--- supervisor output (tail) ---\n${sup.output.slice(-4000)}`);
    throw err;
  } finally {
    await cleanup();
  }
}

function print(f: Figures, boundHitMs: number | undefined): void {
  const verdict = (value: number, goal: number) => (Number.isFinite(value) && value <= goal ? 'met' : 'MISSED');
  const opening =
    boundHitMs === undefined && f.open_failed === 0
      ? ms(f.all_open_ms, 0)
      : `> ${ms(boundHitMs ?? NaN, 0)} (${f.opened} opened, ${f.open_failed} failed)`;
  console.log(
    formatTable(
      `${f.streams} supervisor streams opened at once; city log ${f.log_events_at_start} events, ` +
        `${f.load_beads} beads created and slung (${f.load_failed} failed), ${f.city_events_per_s} events/s`,
      ['figure', 'value (ms)', 'goal (ms)', ''],
      [
        ['time until all are open', opening, `≤ ${GOALS.allOpenMs}`, verdict(f.all_open_ms, GOALS.allOpenMs)],
        [
          `GET /health p50 / p99 (n ${f.health.n}, ${f.health_failed} failed)`,
          `${ms(f.health.median, 1)} / ${ms(f.health.p99, 1)}`,
          `p99 ≤ ${GOALS.healthP99Ms}`,
          f.health_failed ? 'MISSED' : verdict(f.health.p99, GOALS.healthP99Ms),
        ],
        [
          `POST …/beads p50 / p99 (n ${f.write.n}, ${f.write_failed} failed)`,
          `${ms(f.write.median, 1)} / ${ms(f.write.p99, 1)}`,
          `p99 ≤ ${GOALS.writeP99Ms}`,
          f.write_failed ? 'MISSED' : verdict(f.write.p99, GOALS.writeP99Ms),
        ],
        [
          `GET /health, one kept-alive connection, p50 / p99 (n ${f.health_kept_alive.n})`,
          `${ms(f.health_kept_alive.median, 1)} / ${ms(f.health_kept_alive.p99, 1)}`,
          '',
          '',
        ],
        [
          'once open: GET /health p50 / p99',
          `${ms(f.health_after_open.median, 1)} / ${ms(f.health_after_open.p99, 1)}`,
          '',
          '',
        ],
        [
          'once open: POST …/beads p50 / p99',
          `${ms(f.write_after_open.median, 1)} / ${ms(f.write_after_open.p99, 1)}`,
          '',
          '',
        ],
        ['supervisor CPU while they opened (ms)', ms(f.supervisor_cpu_opening_ms, 0), '', ''],
        ['supervisor CPU once open (ms per s)', ms(f.supervisor_cpu_open_ms_per_s, 0), '', ''],
      ],
    ),
  );
  console.log(
    `load average (1, 5, 15 min): before the opening ${f.loadavg_before.join(', ')}; after ${f.loadavg_after.join(', ')} ` +
      `(${availableParallelism()} cores)`,
  );
}
