/**
 * The loop with a real coding agent (issue 22): the real Claude Code (the dev dependency), offline against the
 * scripted model server (test/helpers/model-server.ts), as the one warm session of an agent. Each run slings a
 * bead to it with `POST /sling` and waits for `bead.closed` on the city's event stream: the tick hands the bead
 * over, the model reads it (`ctl bead show`, through Claude Code's Bash tool) and closes it (`ctl bead close`).
 * The model answers at once, so what is measured is ctl's part plus Claude Code's own (its turns, its tool
 * calls, two `ctl` processes) — the floor under any real model's time.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startCityOf, startScriptedClaude } from '../test/helpers/claude-city.js';
import { SseStreamReader } from '../test/helpers/sse.js';
import { waitUntil } from '../test/helpers/wait.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, ms } from './table.js';
import { measureWorktrees, worktreeJson, worktreeTables } from './worktrees.js';

const RUNS = 10;
const OUT_FILE = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), '.bench-out', 'agents-loop.json');

export interface LoopFigures {
  claude: string;
  slingToClosed: Summary;
}

export async function measureLoop(): Promise<LoopFigures> {
  const claude = await startScriptedClaude();
  const city = await startCityOf('loop', {
    'city.toml': claude.providerToml('claude-local', 'default_permission_mode = "bypassPermissions"\n'),
    'agents/worker/agent.toml': 'provider = "claude-local"\n',
  });
  const { api } = city;
  const stream = await SseStreamReader.open(api.url('/events/stream'));
  try {
    const closedOnStream = (id: string) =>
      stream.until((f) => {
        if (f.event !== 'event') return false;
        const event = JSON.parse(f.data) as { type: string; subject?: string };
        return event.type === 'bead.closed' && event.subject === id;
      }, 120_000);
    const sling = async (title: string) => {
      const bead = await api.create({ title });
      const sent = performance.now();
      const reply = await api.post('/sling', { target: 'worker', bead: bead.id, no_convoy: true });
      if (reply.status >= 300) throw new Error(`POST /sling: HTTP ${reply.status}: ${JSON.stringify(reply.body)}`);
      await closedOnStream(bead.id);
      return performance.now() - sent;
    };
    await waitUntil(
      'the worker’s session to run',
      async () => {
        const list = await api.get<{ items: { running: boolean }[] }>('/sessions?template=worker');
        return list.body.items.some((s) => s.running);
      },
      120_000,
    );
    // Warm-up (not counted): Claude Code's first turn loads what it loads once.
    await sling('warm-up');
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push(await sling(`work ${i}`));
    return { claude: claude.cli.version, slingToClosed: summarize(times) };
  } finally {
    stream.close();
    await city.sup.cleanup();
    await claude.close();
  }
}

/**
 * The figures issue 22 asks for, printed with what each measures: sling → closed by a real Claude Code agent,
 * and (bench/worktrees.ts) session start with a new worktree of a 10,000-file rig and 10 at once on one rig.
 * Writes `.bench-out/agents-loop.json`. Run with `npm run bench -- agents-loop` (or within `agents`).
 */
export async function runAgentsLoop(): Promise<void> {
  const started = performance.now();
  const loadAtStart = loadavg().map((l) => round(l, 2));
  console.log(`ctl agents-loop benchmark: node ${process.version}, ${availableParallelism()} cores…`);
  console.log(`loop: ${RUNS} beads slung to a warm Claude Code session…`);
  const loop = await measureLoop();
  const worktrees = await measureWorktrees();
  const s = loop.slingToClosed;
  console.log(
    [
      `load average at start ${loadAtStart.join(' ')}, at end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      '',
      formatTable(
        `sling → bead closed by a real Claude Code ${loop.claude} agent (scripted model; its warm session reads ` +
          'the bead with `ctl bead show` and closes it with `ctl bead close` through its Bash tool), ms',
        ['measure', 'n', 'p50', 'p90', 'max'],
        [['POST /sling → bead.closed on the city stream', String(s.n), ms(s.median, 0), ms(s.p90, 0), ms(s.max, 0)]],
      ),
      '',
      worktreeTables(worktrees),
    ].join('\n'),
  );
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(
    OUT_FILE,
    `${JSON.stringify(
      {
        node: process.version,
        cores: availableParallelism(),
        claude: loop.claude,
        sling_to_closed_ms: rounded(s),
        worktrees: worktreeJson(worktrees),
        load_average_start: loadAtStart,
        wall_s: round((performance.now() - started) / 1000, 1),
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${OUT_FILE}`);
}
