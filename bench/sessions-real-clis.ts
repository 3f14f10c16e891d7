/**
 * The real agent CLIs in sessions, offline against the scripted model server (test/helpers/model-server.ts):
 *   1. Claude Code (stream-json, pipe runtime), 10 runs: session create → `session.woke`; its first message →
 *      the first assistant `turn` frame on the session stream (the program's own start-up included: Claude
 *      Code reads its first input when it has started); a second message → its reply frame (a warm program);
 *   2. Codex (`exec` per turn), 10 runs: a message → the first assistant frame (a process per turn);
 *   3. 10 live Claude Code sessions at once: the controller's RSS, and the programs' (each a process tree);
 *   4. the tmux runtime with the example terminal agent (examples/agents/tui-agent.mjs, thinking 0 ms), 10 runs:
 *      session create → `session.woke` (its prompt read off the screen), a message → the reply frame (typed,
 *      submitted, its reply read off the screen).
 * Prints tables and writes `.bench-out/sessions-real-clis.json`. Run with `npm run bench -- sessions-real-clis`.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { CityApi } from '../test/helpers/city-api.js';
import { startModelServer, type ModelServer } from '../test/helpers/model-server.js';
import { startSessionCity, type Accepted } from '../test/helpers/sessions.js';
import { SseStreamReader } from '../test/helpers/sse.js';
import { tempDir } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { memoryKiB, rssKiB } from './proc.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const RUNS = 10;
const LIVE_SESSIONS = 10;
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'sessions-real-clis.json');
const CLAUDE = join(repoRoot, 'node_modules', '.bin', 'claude');
const CODEX = join(repoRoot, 'node_modules', '.bin', 'codex');
const TUI_AGENT = join(repoRoot, 'examples', 'agents', 'tui-agent.mjs');

async function post(api: CityApi, path: string, body: unknown): Promise<Accepted> {
  const reply = await api.post<Accepted>(path, body);
  if (reply.status !== 202) throw new Error(`POST ${path}: HTTP ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply.body;
}

async function createProviders(api: CityApi, model: ModelServer, home: string): Promise<void> {
  const codexHome = join(home, 'codex');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    `model_provider = "mock"\nmodel = "scripted"\n[model_providers.mock]\nname = "mock"\nbase_url = "${model.url}/v1"\n` +
      'wire_api = "responses"\nenv_key = "MOCK_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n',
  );
  const providers = [
    {
      name: 'claude-local',
      base: 'builtin:claude',
      command: CLAUDE,
      env: {
        HOME: home,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: 'bench',
        DISABLE_TELEMETRY: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        CLAUDE_CODE_MAX_RETRIES: '0',
      },
    },
    {
      name: 'codex-local',
      base: 'builtin:codex',
      command: CODEX,
      env: { HOME: home, CODEX_HOME: codexHome, MOCK_KEY: 'k' },
    },
    {
      name: 'tui',
      command: `${process.execPath} ${TUI_AGENT}`,
      runtime: 'tmux',
      screen_rules: 'tui-agent',
      env: { TUI_AGENT_THINK_MS: '0' },
    },
  ];
  for (const provider of providers) {
    const reply = await api.post('/providers', provider);
    if (reply.status !== 201) throw new Error(`POST /providers: HTTP ${reply.status}: ${JSON.stringify(reply.body)}`);
  }
}

/** POST /sessions → its `session.woke` on the city stream; resolves with the id and the ms it took. */
async function create(api: CityApi, events: SseStreamReader, name: string): Promise<{ id: string; ms: number }> {
  const started = performance.now();
  const { session_id: id } = await post(api, '/sessions', { name });
  await events.until((f) => {
    if (f.event !== 'event') return false;
    const event = JSON.parse(f.data) as { type: string; payload: { session_id?: string } };
    return event.type === 'session.woke' && event.payload.session_id === id;
  }, 60_000);
  return { id, ms: performance.now() - started };
}

/** POST …/messages → the first assistant `turn` frame on the session stream, in ms. */
async function replyTime(api: CityApi, id: string, message: string): Promise<number> {
  const stream = await SseStreamReader.open(api.url(`/session/${id}/stream`));
  try {
    // The stream replays the transcript so far: only a frame after the message counts.
    let sent = Infinity;
    const done = stream.until(
      (f) =>
        performance.now() > sent &&
        f.event === 'turn' &&
        (JSON.parse(f.data) as { role: string; text: string }).role === 'assistant' &&
        f.data.includes(message),
      60_000,
    );
    sent = performance.now();
    await post(api, `/session/${id}/messages`, { message });
    await done;
    return performance.now() - sent;
  } finally {
    stream.close();
  }
}

/** Every process below `pid` (its children, theirs, …), from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

function row(label: string, s: Summary): string[] {
  return [label, String(s.n), ms(s.median, 1), ms(s.p90, 1), ms(s.max, 1)];
}

export async function runSessionsRealClis(): Promise<void> {
  console.log(`ctl real-CLI sessions benchmark: node ${process.version}, ${availableParallelism()} cores…`);
  const loadAtStart = loadavg().map((l) => round(l, 2));
  const model = await startModelServer();
  const home = tempDir('ctl-bench-real-home-');
  const city = await startSessionCity('real');
  const { api } = city;
  const events = await SseStreamReader.open(api.url('/events/stream'));
  try {
    await createProviders(api, model, home);
    console.log(`1/4 ${RUNS} Claude Code sessions…`);
    const claudeCreate: number[] = [];
    const claudeFirst: number[] = [];
    const claudeWarm: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { id, ms: created } = await create(api, events, 'claude-local');
      claudeCreate.push(created);
      claudeFirst.push(await replyTime(api, id, `first ${i}`));
      claudeWarm.push(await replyTime(api, id, `second ${i}`));
      await api.post(`/session/${id}/close?delete=true`);
    }
    console.log(`2/4 ${RUNS} Codex turns…`);
    const codexReply: number[] = [];
    const { id: codexId } = await create(api, events, 'codex-local');
    for (let i = 0; i < RUNS; i++) codexReply.push(await replyTime(api, codexId, `turn ${i}`));
    await api.post(`/session/${codexId}/close?delete=true`);

    console.log(`3/4 ${RUNS} tmux sessions (the example terminal agent)…`);
    const tmuxCreate: number[] = [];
    const tmuxReply: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { id, ms: created } = await create(api, events, 'tui');
      tmuxCreate.push(created);
      tmuxReply.push(await replyTime(api, id, `screen ${i}`));
      await api.post(`/session/${id}/close?delete=true`);
    }

    console.log(`4/4 ${LIVE_SESSIONS} live Claude Code sessions…`);
    const controller = (await city.sup.city('real'))!.pid!;
    const baseline = memoryKiB(controller);
    const live: string[] = [];
    for (let i = 0; i < LIVE_SESSIONS; i++) {
      const { id } = await create(api, events, 'claude-local');
      // Each answers once, so each has really started (and has its conversation).
      await replyTime(api, id, `live ${i}`);
      live.push(id);
    }
    await waitUntil('the programs to settle', () => descendants(controller).length > 0, 5000);
    const withLive = memoryKiB(controller);
    const programs = descendants(controller);
    const programsRss = programs.reduce((sum, pid) => sum + (rssKiB(pid) || 0), 0);
    for (const id of live) await api.post(`/session/${id}/close?delete=true`);

    const cc = summarize(claudeCreate);
    const cf = summarize(claudeFirst);
    const cw = summarize(claudeWarm);
    const cx = summarize(codexReply);
    const tc = summarize(tmuxCreate);
    const tr = summarize(tmuxReply);
    console.log(
      formatTable(
        'Latency (ms), through the supervisor, against the scripted model server',
        ['measure', 'n', 'p50', 'p90', 'max'],
        [
          row('Claude Code: session create → session.woke', cc),
          row('Claude Code: first message → first reply frame (cold program)', cf),
          row('Claude Code: second message → first reply frame (warm)', cw),
          row('Codex: message → first reply frame (a process per turn)', cx),
          row('tmux (example terminal agent): session create → session.woke', tc),
          row('tmux (example terminal agent): message → reply frame', tr),
        ],
      ),
    );
    console.log(
      formatTable(
        `${LIVE_SESSIONS} live Claude Code sessions`,
        ['measure', 'value'],
        [
          ['controller RSS before, MiB', mib(baseline.rss)],
          ['controller RSS with them, MiB', mib(withLive.rss)],
          ['controller PSS with them, MiB', mib(withLive.pss)],
          [`their processes (${programs.length}), RSS sum, MiB`, mib(programsRss)],
        ],
      ),
    );
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(
      OUT_FILE,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          loadavg_at_start: loadAtStart,
          claude_create_to_woke_ms: rounded(cc),
          claude_first_message_to_reply_frame_ms: rounded(cf),
          claude_second_message_to_reply_frame_ms: rounded(cw),
          codex_message_to_reply_frame_ms: rounded(cx),
          tmux_create_to_woke_ms: rounded(tc),
          tmux_message_to_reply_frame_ms: rounded(tr),
          live_claude_sessions: {
            sessions: LIVE_SESSIONS,
            controller_rss_before_mib: round(baseline.rss / 1024, 1),
            controller_rss_mib: round(withLive.rss / 1024, 1),
            controller_pss_mib: round(withLive.pss / 1024, 1),
            program_processes: programs.length,
            programs_rss_sum_mib: round(programsRss / 1024, 1),
          },
        },
        null,
        2,
      ) + '\n',
    );
    console.log(`wrote ${OUT_FILE}`);
  } finally {
    events.close();
    await city.sup.cleanup();
    await model.close();
    rmSync(home, { recursive: true, force: true });
  }
}
