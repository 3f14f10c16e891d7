/**
 * The loop with a real coding agent (issue 22): the real Claude Code and the real Codex (the dev dependencies),
 * offline against the scripted model server (test/helpers/model-server.ts), each as the one warm session of an
 * agent. Each run slings a bead to it with `POST /sling` and waits for `bead.closed` on the city's event stream:
 * the tick hands the bead over, the model reads it (`ctl bead show`, through Claude Code's Bash tool or Codex's
 * `exec_command`) and closes it (`ctl bead close`). The model answers at once, so what is measured is ctl's part
 * plus the CLI's own (its turns, its tool calls, two `ctl` processes; for Codex a `codex exec` process per turn)
 * — the floor under any real model's time.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startCityOf, startScriptedClaude } from '../test/helpers/claude-city.js';
import { startScriptedCodex } from '../test/helpers/scripted-codex.js';
import { SseStreamReader } from '../test/helpers/sse.js';
import { waitUntil } from '../test/helpers/wait.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, ms } from './table.js';
import { measureWorktrees, worktreeJson, worktreeTables } from './worktrees.js';

const RUNS = 10;
const OUT_DIR = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), '.bench-out');

/** The agent CLIs the loop is measured with: their names here and in the tables. */
export const LOOP_CLIS = { claude: 'Claude Code', codex: 'Codex' } as const;
export type LoopCliName = keyof typeof LOOP_CLIS;

export interface LoopFigures {
  cli: LoopCliName;
  /** What its `--version` says. */
  version: string;
  slingToClosed: Summary;
}

/** The CLI, offline, as a provider `agent-cli` that runs its tools unasked. */
async function startCli(cli: LoopCliName): Promise<{ version: string; providerToml: string; close(): Promise<void> }> {
  if (cli === 'claude') {
    const claude = await startScriptedClaude();
    return {
      version: claude.cli.version,
      providerToml: claude.providerToml('agent-cli', 'default_permission_mode = "bypassPermissions"\n'),
      close: () => claude.close(),
    };
  }
  const codex = await startScriptedCodex();
  return {
    version: codex.cli.version,
    // Unsandboxed, as test/loop.test.ts says why: `ctl` must reach the city's API.
    providerToml: codex.providerToml('agent-cli', 'default_permission_mode = "danger-full-access"\n'),
    close: () => codex.close(),
  };
}

export async function measureLoop(cli: LoopCliName): Promise<LoopFigures> {
  const agentCli = await startCli(cli);
  const city = await startCityOf('loop', {
    'city.toml': agentCli.providerToml,
    'agents/worker/agent.toml': 'provider = "agent-cli"\n',
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
    // Warm-up (not counted): the CLI's first turn loads what it loads once.
    await sling('warm-up');
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push(await sling(`work ${i}`));
    return { cli, version: agentCli.version, slingToClosed: summarize(times) };
  } finally {
    stream.close();
    await city.sup.cleanup();
    await agentCli.close();
  }
}

function loopTable(loop: LoopFigures): string {
  const s = loop.slingToClosed;
  const tool = loop.cli === 'claude' ? 'its Bash tool' : 'its exec_command tool, a `codex exec` per turn';
  return formatTable(
    `sling → bead closed by a real ${LOOP_CLIS[loop.cli]} ${loop.version} agent (scripted model; its warm session ` +
      `reads the bead with \`ctl bead show\` and closes it with \`ctl bead close\` through ${tool}), ms`,
    ['measure', 'n', 'p50', 'p90', 'max'],
    [['POST /sling → bead.closed on the city stream', String(s.n), ms(s.median, 0), ms(s.p90, 0), ms(s.max, 0)]],
  );
}

/**
 * The figures issue 22 asks for, printed with what each measures: sling → closed by a real Claude Code agent and
 * by a real Codex agent, and (bench/worktrees.ts) session start with a new worktree of a 10,000-file rig and 10
 * at once on one rig. Writes `.bench-out/agents-loop.json`. Run with `npm run bench -- agents-loop` (or within
 * `agents`); `npm run bench -- agents-loop-codex` measures the Codex loop alone (`.bench-out/agents-loop-codex.json`).
 */
export async function runAgentsLoop(clis: LoopCliName[] = ['claude', 'codex'], withWorktrees = true): Promise<void> {
  const started = performance.now();
  const loadAtStart = loadavg().map((l) => round(l, 2));
  console.log(`ctl agents-loop benchmark: node ${process.version}, ${availableParallelism()} cores…`);
  const loops: LoopFigures[] = [];
  for (const cli of clis) {
    console.log(`loop: ${RUNS} beads slung to a warm ${LOOP_CLIS[cli]} session…`);
    loops.push(await measureLoop(cli));
  }
  const worktrees = withWorktrees ? await measureWorktrees() : undefined;
  // The whole in agents-loop.json; a part run alone in a file of its own.
  const outFile = join(OUT_DIR, withWorktrees ? 'agents-loop.json' : `agents-loop-${clis.join('-')}.json`);
  console.log(
    [
      `load average at start ${loadAtStart.join(' ')}, at end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      ...loops.flatMap((loop) => ['', loopTable(loop)]),
      ...(worktrees ? ['', worktreeTables(worktrees)] : []),
    ].join('\n'),
  );
  mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(
    outFile,
    `${JSON.stringify(
      {
        node: process.version,
        cores: availableParallelism(),
        loops: Object.fromEntries(
          loops.map((l) => [l.cli, { version: l.version, sling_to_closed_ms: rounded(l.slingToClosed) }]),
        ),
        ...(worktrees ? { worktrees: worktreeJson(worktrees) } : {}),
        load_average_start: loadAtStart,
        wall_s: round((performance.now() - started) / 1000, 1),
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${outFile}`);
}
