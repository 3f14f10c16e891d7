/**
 * Agents benchmark: real supervisors and controllers running the shipped echo agent, measuring
 *   1. the controller's tick with 50 agents (50 running sessions) and 500 open beads routed to them, once the
 *      city is quiet: p50/p99 over its last 256 runs, read from `GET /status` (goal ≤ 10 ms p50);
 *   2. sling → the agent's first turn on the work (its reply frame on the agent output stream): to an idle
 *      session (warm), and to a pool with no session, which the tick starts for it (cold);
 *   3. 20 cities × 5 agents (100 sessions) on one machine: the RSS of the supervisor and the controllers, and
 *      their CPU at idle (goal < 1 % of a core).
 *   4. then the loop with a real coding agent and worktrees (bench/agents-loop.ts: `.bench-out/agents-loop.json`).
 * Prints tables and writes `.bench-out/agents.json`. Run with `npm run bench -- agents`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CityApi } from '../test/helpers/city-api.js';
import { ECHO_AGENT, startSessionCity, type SessionCity } from '../test/helpers/sessions.js';
import { SseStreamReader } from '../test/helpers/sse.js';
import { createApiClient } from '../shared/api-client.js';
import { ctlEntryPath } from '../shared/paths.js';
import { killAllMentioning } from '../test/helpers/processes.js';
import { CSRF, freePort, tempDir } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { runAgentsLoop } from './agents-loop.js';
import { cpuMs, rssKiB } from './proc.js';
import { round, rounded, summarize } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const AGENTS = 50;
const BEADS = 500;
const SLINGS = 30;
const COLD_SLINGS = 10;
const CITIES = 20;
const AGENTS_PER_CITY = 5;
const IDLE_WINDOW_MS = 60_000;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'agents.json');

function agentsToml(count: number, prefix: string): string {
  let out = '';
  for (let i = 0; i < count; i++) out += `\n[[agent]]\nname = "${prefix}${i}"\nprovider = "echo"\n`;
  return out;
}

interface Tick {
  runs: number;
  last_ms: number;
  p50_ms: number;
  p99_ms: number;
}

async function tickStats(api: CityApi): Promise<Tick> {
  const reply = await api.get<{ tick: Tick }>('/status');
  return reply.body.tick;
}

/** 1. The tick of a loaded, quiet city. */
async function tickDuration(city: SessionCity): Promise<Tick & { sessions: number }> {
  const { api } = city;
  await waitUntil(
    `${AGENTS} agent sessions to run`,
    async () => {
      const list = await api.get<{ items: { running: boolean }[] }>('/sessions?limit=1000');
      return list.body.items.filter((s) => s.running).length >= AGENTS + 1;
    },
    120_000,
    200,
  );
  for (let i = 0; i < BEADS; i++) {
    const bead = await api.create({ title: `work ${i}` });
    await api.post('/sling', { target: `a${i % AGENTS}`, bead: bead.id, no_convoy: true });
  }
  // Quiet: every agent holds one bead, the rest wait. Then 256 ticks of nothing changing (patrol: 40 ms).
  await waitUntil(
    'each agent to hold a bead',
    async () => (await api.list({ status: 'in_progress', limit: 1000 })).total >= AGENTS,
    60_000,
    200,
  );
  await sleep(2000);
  const start = (await tickStats(api)).runs;
  await waitUntil('256 quiet ticks', async () => (await tickStats(api)).runs - start >= 260, 60_000, 500);
  const list = await api.get<{ items: { running: boolean }[] }>('/sessions?limit=1000');
  return { ...(await tickStats(api)), sessions: list.body.items.filter((s) => s.running).length };
}

/** 2. POST /sling → the agent's reply to the work on its output stream. */
async function slingLatency(api: CityApi, agent: string, runs: number, cold: boolean): Promise<number[]> {
  // One sling first (not counted): an agent that never ran has no output stream yet.
  const first = await api.create({ title: `sling ${agent} warm-up` });
  await api.post('/sling', { target: agent, bead: first.id, no_convoy: true });
  await waitUntil('the warm-up to be taken', async () => (await api.bead(first.id)).status === 'in_progress', 30_000);
  await api.close(first.id);
  const stream = await SseStreamReader.open(api.url(`/agent/${agent}/output/stream`));
  const latencies: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      if (cold) {
        await waitUntil(
          'the pool to be empty',
          async () => {
            const list = await api.get<{ items: unknown[] }>(`/sessions?template=${agent}`);
            return list.body.items.length === 0;
          },
          30_000,
        );
      }
      const bead = await api.create({ title: `sling ${agent} ${i}` });
      const sent = performance.now();
      await api.post('/sling', { target: agent, bead: bead.id, no_convoy: true });
      await stream.until((f) => {
        if (f.event !== 'turn') return false;
        const turn = (JSON.parse(f.data) as { turns: { role: string; text: string }[] }).turns[0];
        return turn.role === 'assistant' && turn.text.startsWith(`echo: Work on bead ${bead.id}:`);
      }, 30_000);
      latencies.push(performance.now() - sent);
      await api.close(bead.id);
    }
  } finally {
    stream.close();
  }
  return latencies;
}

/**
 * 3. Twenty cities of five agents each: memory and CPU at idle. The supervisor is started as a person starts it
 * (`ctl supervisor start`, in the background, its defaults), not as a child of this process.
 */
export async function manyCities(): Promise<Record<string, number>> {
  const root = tempDir('ctl-bench-agents-');
  const home = join(root, 'home');
  mkdirSync(home, { recursive: true });
  const port = await freePort();
  writeFileSync(join(home, 'supervisor.toml'), `[supervisor]\nport = ${port}\n`);
  const env = { ...process.env, CTL_HOME: home, CTL_API: `http://127.0.0.1:${port}` };
  const ctl = (args: string[]) => execFileSync(process.execPath, [ctlEntryPath(), ...args], { env, encoding: 'utf8' });
  ctl(['supervisor', 'start', '--port', String(port)]);
  const api = createApiClient(`http://127.0.0.1:${port}`);
  try {
    for (let c = 0; c < CITIES; c++) {
      const dir = join(root, 'cities', `c${c}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'city.toml'),
        `[providers.echo]\ncommand = "${ECHO_AGENT}"\nready_prompt_prefix = "ready>"\nenv = { ECHO_READY = "ready>" }\n${agentsToml(AGENTS_PER_CITY, 'agent')}`,
      );
      const res = await fetch(`http://127.0.0.1:${port}/v0/cities/register`, {
        method: 'POST',
        headers: { ...CSRF, 'Content-Type': 'application/json' },
        body: JSON.stringify({ path: dir }),
      });
      if (res.status !== 201) throw new Error(`register c${c}: ${res.status} ${await res.text()}`);
    }
    await waitUntil(
      'every session to run',
      async () => {
        const counts = await Promise.all(
          Array.from({ length: CITIES }, async (_, c) => {
            const res = await fetch(`http://127.0.0.1:${port}/v0/city/c${c}/sessions`);
            const body = (await res.json()) as { items?: { running: boolean }[] };
            return (body.items ?? []).filter((s) => s.running).length;
          }),
        );
        return counts.every((n) => n === AGENTS_PER_CITY);
      },
      180_000,
      500,
    );
    // Settled: starting twenty controllers and a hundred programs (module loads, JIT, GC) is not idling.
    await sleep(45_000);
    const cities = (await api.GET('/v0/cities')).data!.items;
    const controllers = cities.map((c) => c.pid!).filter(Boolean);
    const supervisor = Number(readFileSync(join(home, 'supervisor.pid'), 'utf8'));
    const pids = [supervisor, ...controllers];
    const cpu0 = pids.map(cpuMs);
    const t0 = performance.now();
    await sleep(IDLE_WINDOW_MS);
    const elapsed = performance.now() - t0;
    const used = pids.map((pid, i) => cpuMs(pid) - cpu0[i]);
    const cpu = used.reduce((a, b) => a + b, 0);
    const controllerRss = controllers.map(rssKiB).reduce((a, b) => a + b, 0);
    return {
      cities: CITIES,
      sessions: CITIES * AGENTS_PER_CITY,
      supervisor_rss_kib: rssKiB(supervisor),
      controllers_rss_kib: controllerRss,
      controller_rss_kib_each: round(controllerRss / controllers.length, 0),
      idle_cpu_pct_of_core: round((cpu / elapsed) * 100, 3),
      supervisor_cpu_pct_of_core: round((used[0] / elapsed) * 100, 3),
      controllers_cpu_pct_of_core: round(((cpu - used[0]) / elapsed) * 100, 3),
    };
  } finally {
    try {
      ctl(['supervisor', 'stop']);
    } finally {
      killAllMentioning(root);
      rmSync(root, { recursive: true, force: true });
    }
  }
}

export async function runAgents(): Promise<void> {
  const extra = `
[daemon]
patrol_interval = "40ms"

[[agent]]
name = "warm"
provider = "echo"

[[agent]]
name = "cold"
provider = "echo"
min_active_sessions = 0
idle_timeout = "10ms"
${agentsToml(AGENTS, 'a')}`;
  const city = await startSessionCity('agents', extra);
  let tick: Tick & { sessions: number };
  let warm: number[];
  let cold: number[];
  try {
    tick = await tickDuration(city);
    warm = await slingLatency(city.api, 'warm', SLINGS, false);
    cold = await slingLatency(city.api, 'cold', COLD_SLINGS, true);
  } finally {
    await city.sup.cleanup();
  }
  const many = await manyCities();
  const warmS = rounded(summarize(warm));
  const coldS = rounded(summarize(cold));
  console.log(
    formatTable(
      `The tick: ${AGENTS} agents (${tick.sessions} running sessions), ${BEADS} open beads, nothing changing`,
      ['p50', 'p99', 'ticks'],
      [[ms(tick.p50_ms, 3), ms(tick.p99_ms, 3), String(tick.runs)]],
    ),
  );
  console.log(
    formatTable(
      'sling → the agent’s reply to the work (agent output stream)',
      ['case', 'runs', 'p50', 'p99'],
      [
        ['idle session (warm)', String(warm.length), ms(warmS.median), ms(warmS.p99)],
        ['no session: the tick starts one (cold)', String(cold.length), ms(coldS.median), ms(coldS.p99)],
      ],
    ),
  );
  console.log(
    formatTable(
      `${many.cities} cities × ${AGENTS_PER_CITY} agents (${many.sessions} sessions), idle for ${IDLE_WINDOW_MS / 1000} s`,
      ['supervisor RSS', 'controllers RSS (sum)', 'per controller', 'CPU (supervisor + controllers)'],
      [
        [
          mib(many.supervisor_rss_kib),
          mib(many.controllers_rss_kib),
          mib(many.controller_rss_kib_each),
          `${many.idle_cpu_pct_of_core} % of a core (supervisor ${many.supervisor_cpu_pct_of_core}, controllers ${many.controllers_cpu_pct_of_core})`,
        ],
      ],
    ),
  );
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(
    OUT_FILE,
    JSON.stringify({ tick, sling_warm_ms: warmS, sling_cold_ms: coldS, many_cities: many }, null, 2) + '\n',
  );
  console.log('');
  await runAgentsLoop();
}
