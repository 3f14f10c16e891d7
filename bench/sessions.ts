/**
 * Sessions benchmark: a real supervisor and controller running the shipped echo agent (text protocol, pipe
 * runtime), measuring
 *   1. session create → `session.woke` on the city stream (p50/p99),
 *   2. a message → the first reply frame on the session stream (p50/p99; goal ≤ 20 ms p50),
 *   3. 100 sessions running: the controller's RSS and CPU at idle,
 *   4. a transcript of 100,000 entries: the newest 50 through the API (goal ≤ 20 ms),
 *   5. the ACP example agent (examples/agents/acp-agent.mjs, Node and the ACP SDK): session create → `session.woke`
 *      and a message → the first reply frame, 10 runs each.
 * Prints tables and writes `.bench-out/sessions.json`. Run with `npm run bench -- sessions`; part 5 alone (a city of
 * its own, `.bench-out/sessions-acp.json`) with `npm run bench -- sessions-acp`.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { EventLog } from '../shared/events/event-log.js';
import type { CityApi } from '../test/helpers/city-api.js';
import { startSessionCity, type Accepted, type SessionCity } from '../test/helpers/sessions.js';
import { SseStreamReader } from '../test/helpers/sse.js';
import { tempDir } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { cpuMs, memoryKiB } from './proc.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const CREATES = 40;
const MESSAGES = 300;
const IDLE_SESSIONS = 100;
const IDLE_WINDOW_MS = 10_000;
const TRANSCRIPT_ENTRIES = 100_000;
const TAIL_READS = 200;
const ACP_RUNS = 10;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'sessions.json');
const ACP_OUT_FILE = join(repoRoot, '.bench-out', 'sessions-acp.json');
const ACP_AGENT = join(repoRoot, 'examples', 'agents', 'acp-agent.mjs');

/** The `acp` provider: the ACP example agent, keeping its conversations in `stateDir`. */
function acpProviderToml(stateDir: string): string {
  return `
[providers.acp]
command = "${process.execPath} ${ACP_AGENT}"
protocol = "acp"
env = { ACP_AGENT_STATE = "${stateDir}" }
`;
}

async function post(api: CityApi, path: string, body: unknown): Promise<Accepted> {
  const reply = await api.post<Accepted>(path, body);
  if (reply.status !== 202) throw new Error(`POST ${path}: HTTP ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/**
 * 1. POST /sessions with `body` → the `session.woke` frame of that session on the city stream, `runs` times, each
 * session closed and deleted before the next (bench/hosts.ts measures an agent's sessions on a host with it).
 */
export async function createLatency(
  api: CityApi,
  body: Record<string, unknown> = { name: 'echo' },
  runs = CREATES,
): Promise<number[]> {
  const stream = await SseStreamReader.open(api.url('/events/stream'));
  const latencies: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const sent = performance.now();
      const { session_id } = await post(api, '/sessions', body);
      await stream.until((f) => {
        if (f.event !== 'event') return false;
        const event = JSON.parse(f.data) as { type: string; payload: { session_id?: string } };
        return event.type === 'session.woke' && event.payload.session_id === session_id;
      }, 30_000);
      latencies.push(performance.now() - sent);
      await api.post(`/session/${session_id}/close?delete=true`);
    }
  } finally {
    stream.close();
  }
  return latencies;
}

/**
 * 2. POST …/messages → the first assistant `turn` frame on the session stream, in a session made with `body`:
 * `messages` timed after `warmUp` that are not (they warm up both ends). The session is closed and deleted after.
 */
export async function replyLatency(
  api: CityApi,
  body: Record<string, unknown> = { name: 'echo' },
  messages = MESSAGES,
  warmUp = 20,
): Promise<number[]> {
  const { session_id: id } = await post(api, '/sessions', body);
  // Its stream is a 404 until it has a transcript or runs: on a host, it runs only once connected there.
  await waitUntil(
    `session ${id} running`,
    async () => (await api.get<{ running: boolean }>(`/session/${id}`)).body.running,
  );
  const stream = await SseStreamReader.open(api.url(`/session/${id}/stream`));
  const latencies: number[] = [];
  try {
    await stream.until((f) => f.event === 'activity', 30_000);
    for (let i = 0; i < messages + warmUp; i++) {
      const text = `message ${i}`;
      const sent = performance.now();
      await post(api, `/session/${id}/messages`, { message: text });
      await stream.until((f) => {
        if (f.event !== 'turn') return false;
        const turn = JSON.parse(f.data) as { role: string; text: string };
        return turn.role === 'assistant' && turn.text === `echo: ${text}`;
      });
      if (i >= warmUp) latencies.push(performance.now() - sent);
      await stream.until((f) => f.event === 'activity'); // idle again before the next
    }
  } finally {
    stream.close();
  }
  await api.post(`/session/${id}/close?delete=true`);
  return latencies;
}

/**
 * 5. The ACP example agent, `ACP_RUNS` times: POST /sessions → its `session.woke` on the city stream (the agent
 * started, `initialize` and `session/new` answered), then POST …/messages → the first assistant `turn` frame on the
 * session stream (`session/prompt` out, the first `agent_message_chunk` back).
 */
async function acpLatency(api: CityApi): Promise<{ create: number[]; reply: number[] }> {
  const events = await SseStreamReader.open(api.url('/events/stream'));
  const create: number[] = [];
  const reply: number[] = [];
  try {
    for (let i = 0; i < ACP_RUNS; i++) {
      const created = performance.now();
      const { session_id: id } = await post(api, '/sessions', { name: 'acp' });
      await events.until((f) => {
        if (f.event !== 'event') return false;
        const event = JSON.parse(f.data) as { type: string; payload: { session_id?: string } };
        return event.type === 'session.woke' && event.payload.session_id === id;
      }, 30_000);
      create.push(performance.now() - created);
      const stream = await SseStreamReader.open(api.url(`/session/${id}/stream`));
      try {
        const sent = performance.now();
        await post(api, `/session/${id}/messages`, { message: `message ${i}` });
        await stream.until((f) => f.event === 'turn' && (JSON.parse(f.data) as { role: string }).role === 'assistant');
        reply.push(performance.now() - sent);
      } finally {
        stream.close();
      }
      await api.post(`/session/${id}/close?delete=true`);
    }
  } finally {
    events.close();
  }
  return { create, reply };
}

interface IdlePhase {
  sessions: number;
  rssKib: number;
  pssKib: number;
  ussKib: number;
  cpuMsPerSecond: number;
  baselineRssKib: number;
}

/** 3. 100 echo sessions running and idle: the controller's memory and CPU. */
async function idleSessions(city: SessionCity): Promise<IdlePhase> {
  const pid = (await city.sup.city('sessions'))!.pid!;
  const baseline = memoryKiB(pid);
  const ids: string[] = [];
  for (let i = 0; i < IDLE_SESSIONS; i++) ids.push((await post(city.api, '/sessions', { name: 'echo' })).session_id);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const list = await city.api.get<{ items: { state: string; running: boolean }[] }>(
      '/sessions?state=active&limit=1000',
    );
    if (list.body.items.filter((s) => s.running).length >= IDLE_SESSIONS) break;
    if (Date.now() > deadline) throw new Error('100 sessions did not all start within a minute');
    await sleep(200);
  }
  await sleep(2000);
  const cpu0 = cpuMs(pid);
  await sleep(IDLE_WINDOW_MS);
  const cpu = cpuMs(pid) - cpu0;
  const memory = memoryKiB(pid);
  for (const id of ids) await city.api.post(`/session/${id}/close?delete=true`);
  return {
    sessions: IDLE_SESSIONS,
    rssKib: memory.rss,
    pssKib: memory.pss,
    ussKib: memory.uss,
    cpuMsPerSecond: cpu / (IDLE_WINDOW_MS / 1000),
    baselineRssKib: baseline.rss,
  };
}

/** 4. A transcript of 100,000 entries (written straight to its file), read newest 50 through the supervisor. */
async function transcriptTail(city: SessionCity): Promise<{ entries: number; latencies: number[] }> {
  const { session_id: id } = await post(city.api, '/sessions', { name: 'echo' });
  await city.api.post(`/session/${id}/close`);
  const dir = join(city.dir, '.ctl', 'sessions', id);
  const log = EventLog.at(join(dir, 'transcript.jsonl'), join(dir, 'transcript.lock'));
  for (let done = 0; done < TRANSCRIPT_ENTRIES;) {
    const batch = Math.min(5000, TRANSCRIPT_ENTRIES - done);
    await Promise.all(
      Array.from({ length: batch }, (_, i) =>
        log.appendCustom({
          type: i % 2 ? 'assistant' : 'user',
          actor: i % 2 ? 'assistant' : 'user',
          payload: { text: `entry ${done + i} `.repeat(8), turn: Math.floor((done + i) / 2) + 1 },
        }),
      ),
    );
    done += batch;
  }
  log.close();
  const latencies: number[] = [];
  for (let i = 0; i < TAIL_READS + 20; i++) {
    const started = performance.now();
    const reply = await city.api.get<{ turns: unknown[] }>(`/session/${id}/transcript?tail=50`);
    if (reply.status !== 200 || reply.body.turns.length === 0) throw new Error(`transcript: HTTP ${reply.status}`);
    if (i >= 20) latencies.push(performance.now() - started);
  }
  return { entries: TRANSCRIPT_ENTRIES, latencies };
}

function row(label: string, s: Summary): string[] {
  return [label, String(s.n), ms(s.median, 2), ms(s.p90, 2), ms(s.p99, 2), ms(s.max, 2)];
}

export async function runSessions(): Promise<void> {
  const started = performance.now();
  console.log(`ctl sessions benchmark: node ${process.version}, ${availableParallelism()} cores — starting a city…`);
  const loadAtStart = loadavg().map((l) => round(l, 2));
  const acpState = tempDir('ctl-bench-acp-');
  const city = await startSessionCity('sessions', acpProviderToml(acpState));
  try {
    console.log(`1/5 ${CREATES} session creates…`);
    const create = await createLatency(city.api);
    console.log(`2/5 ${MESSAGES} messages → reply frames…`);
    const reply = await replyLatency(city.api);
    console.log(`3/5 ${IDLE_SESSIONS} idle sessions…`);
    const idle = await idleSessions(city);
    console.log(`4/5 a transcript of ${TRANSCRIPT_ENTRIES} entries…`);
    const tail = await transcriptTail(city);
    console.log(`5/5 ${ACP_RUNS} ACP sessions (the example agent)…`);
    const acp = await acpLatency(city.api);

    const c = summarize(create);
    const r = summarize(reply);
    const t = summarize(tail.latencies);
    const ac = summarize(acp.create);
    const ar = summarize(acp.reply);
    const out = [
      `load average at start ${loadAtStart.join(' ')}, at end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      '',
      formatTable(
        'Latency (ms), through the supervisor',
        ['measure', 'n', 'p50', 'p90', 'p99', 'max'],
        [
          row('session create → session.woke (city stream)', c),
          row('message → first reply frame (session stream; echo agent)', r),
          row(`transcript of ${tail.entries} entries: GET …/transcript?tail=50`, t),
          row('ACP session create → session.woke (example agent)', ac),
          row('ACP message → first reply frame (example agent)', ar),
        ],
      ),
      '',
      formatTable(
        `${idle.sessions} echo sessions running, idle (controller)`,
        ['measure', 'value'],
        [
          ['controller RSS before, MiB', mib(idle.baselineRssKib)],
          ['controller RSS, MiB', mib(idle.rssKib)],
          ['controller PSS, MiB', mib(idle.pssKib)],
          ['controller USS (private), MiB', mib(idle.ussKib)],
          ['controller CPU, ms per second', idle.cpuMsPerSecond.toFixed(1)],
        ],
      ),
    ];
    console.log(out.join('\n'));
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(
      OUT_FILE,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          loadavg_at_start: loadAtStart,
          create_to_woke_ms: rounded(c),
          message_to_reply_frame_ms: rounded(r),
          idle_sessions: idle,
          transcript_tail_50_ms: { entries: tail.entries, ...rounded(t) },
          acp_create_to_woke_ms: rounded(ac),
          acp_message_to_reply_frame_ms: rounded(ar),
          total_runtime_s: round((performance.now() - started) / 1000, 1),
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`wrote ${OUT_FILE}`);
  } finally {
    await city.sup.cleanup();
    rmSync(acpState, { recursive: true, force: true });
  }
}

/** Part 5 alone, in a city of its own: `npm run bench -- sessions-acp`. */
export async function runSessionsAcp(): Promise<void> {
  console.log(
    `ctl ACP sessions benchmark: node ${process.version}, ${availableParallelism()} cores — starting a city…`,
  );
  const loadAtStart = loadavg().map((l) => round(l, 2));
  const acpState = tempDir('ctl-bench-acp-');
  const city = await startSessionCity('sessions', acpProviderToml(acpState));
  try {
    console.log(`${ACP_RUNS} ACP sessions (the example agent)…`);
    const acp = await acpLatency(city.api);
    const ac = summarize(acp.create);
    const ar = summarize(acp.reply);
    console.log(
      formatTable(
        'Latency (ms), through the supervisor',
        ['measure', 'n', 'p50', 'p90', 'p99', 'max'],
        [
          row('ACP session create → session.woke (example agent)', ac),
          row('ACP message → first reply frame (example agent)', ar),
        ],
      ),
    );
    mkdirSync(dirname(ACP_OUT_FILE), { recursive: true });
    writeFileSync(
      ACP_OUT_FILE,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          loadavg_at_start: loadAtStart,
          acp_create_to_woke_ms: rounded(ac),
          acp_message_to_reply_frame_ms: rounded(ar),
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`wrote ${ACP_OUT_FILE}`);
  } finally {
    await city.sup.cleanup();
    rmSync(acpState, { recursive: true, force: true });
  }
}
