/**
 * Worktrees benchmark: a real supervisor and controller, a rig that is a real git repository of 10,000 files, and
 * an agent with `isolation = "worktree"` running the shipped echo agent, measuring
 *   1. session create → `session.woke` on the city stream with a new worktree (p50/p99), beside the same agent
 *      without one (the cost of the worktree itself) and `git worktree add` run alone (git's own part, which the
 *      machine's disk decides), and close → its worktree removed;
 *   2. 10 sessions created at once on that one rig: the time until all are ready, and the disk their worktrees
 *      use (their checkouts under `.ctl/worktrees/`, and git's own records of them in the rig's `.git/worktrees/`).
 * Prints tables and writes `.bench-out/worktrees.json`. Run with `npm run bench -- worktrees`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { CityApi } from '../test/helpers/city-api.js';
import { startSessionCity } from '../test/helpers/sessions.js';
import { SseStreamReader } from '../test/helpers/sse.js';
import { tempDir } from '../test/helpers/supervisor.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const FILES = 10_000;
const STARTS = 10;
const CONCURRENT = 10;
const GIT_ALONE = 3;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'worktrees.json');

/** A repository on `main` with `FILES` small files in 100 directories (`src<d>/file<f>.ts`), one commit. */
export function bigRepository(prefix = 'ctl-bench-worktrees-'): string {
  const repo = join(tempDir(prefix), 'big');
  mkdirSync(repo);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'bench@example.invalid');
  git('config', 'user.name', 'bench');
  const perDir = FILES / 100;
  for (let d = 0; d < 100; d++) {
    const dir = join(repo, `src${d}`);
    mkdirSync(dir);
    for (let f = 0; f < perDir; f++) writeFileSync(join(dir, `file${f}.ts`), `export const v${d}_${f} = ${f};\n`);
  }
  git('add', '.');
  git('commit', '-q', '-m', 'ten thousand files');
  return repo;
}

/** `git worktree add` of the rig run alone, as ctl runs it (then removed): the floor under a worktree session's start. */
function gitAlone(repo: string): number[] {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
  const times: number[] = [];
  for (let i = 0; i < GIT_ALONE; i++) {
    const path = join(dirname(repo), `alone-${i}`);
    const started = performance.now();
    git('worktree', 'add', '--quiet', '--no-track', '-b', `alone-${i}`, path, 'main');
    times.push(performance.now() - started);
    git('worktree', 'remove', '--force', path);
    git('branch', '-D', `alone-${i}`);
  }
  return times;
}

/** Disk used under `path`, KiB (`du -sk`: blocks, as the file system counts them). */
function diskKib(path: string): number {
  return Number(execFileSync('du', ['-sk', path], { encoding: 'utf8' }).split('\t')[0]);
}

interface Accepted {
  session_id: string;
}

async function create(api: CityApi, agent: string): Promise<string> {
  const reply = await api.post<Accepted>('/sessions', { kind: 'agent', name: agent });
  if (reply.status !== 202) throw new Error(`POST /sessions: HTTP ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply.body.session_id;
}

/** Waits for `session.woke` of every id on the stream; resolves with when each came (performance.now()). */
async function woke(stream: SseStreamReader, ids: Set<string>): Promise<Map<string, number>> {
  const at = new Map<string, number>();
  await stream.until((f) => {
    if (f.event !== 'event') return false;
    const event = JSON.parse(f.data) as { type: string; message?: string; payload: { session_id?: string } };
    const id = event.payload.session_id;
    if (id && ids.has(id)) {
      if (event.type === 'session.crashed') throw new Error(`session ${id} failed: ${event.message}`);
      if (event.type === 'session.woke') at.set(id, performance.now());
    }
    return at.size === ids.size;
  }, 120_000);
  return at;
}

/** 1. One session at a time: create → woke, then close (timed: its worktree removed). */
async function sequential(api: CityApi, agent: string): Promise<{ start: number[]; close: number[] }> {
  const stream = await SseStreamReader.open(api.url('/events/stream'));
  const start: number[] = [];
  const close: number[] = [];
  try {
    for (let i = 0; i < STARTS; i++) {
      const sent = performance.now();
      const id = await create(api, agent);
      const at = await woke(stream, new Set([id]));
      start.push(at.get(id)! - sent);
      const closing = performance.now();
      const closed = await api.post<{ worktree?: { removed: boolean } }>(`/session/${id}/close?delete=true`);
      if (closed.status !== 200 || closed.body.worktree?.removed === false) {
        throw new Error(`close: HTTP ${closed.status}: ${JSON.stringify(closed.body)}`);
      }
      close.push(performance.now() - closing);
    }
  } finally {
    stream.close();
  }
  return { start, close };
}

/** 2. `CONCURRENT` sessions at once: time until the last is ready, and the disk their worktrees take. */
async function concurrent(
  api: CityApi,
  cityDir: string,
  repo: string,
): Promise<{ allReadyMs: number; checkoutsKib: number; gitRecordsKib: number; repoKib: number }> {
  const stream = await SseStreamReader.open(api.url('/events/stream'));
  try {
    const sent = performance.now();
    const ids = await Promise.all(Array.from({ length: CONCURRENT }, () => create(api, 'big/coder')));
    const at = await woke(stream, new Set(ids));
    const allReadyMs = Math.max(...at.values()) - sent;
    const checkoutsKib = diskKib(join(cityDir, '.ctl', 'worktrees'));
    const gitRecordsKib = diskKib(join(repo, '.git', 'worktrees'));
    const repoKib = diskKib(repo) - diskKib(join(repo, '.git'));
    for (const id of ids) await api.post(`/session/${id}/close?delete=true`);
    return { allReadyMs, checkoutsKib, gitRecordsKib, repoKib };
  } finally {
    stream.close();
  }
}

function row(label: string, s: Summary): string[] {
  return [label, String(s.n), ms(s.median), ms(s.p90), ms(s.p99), ms(s.max)];
}

/** What the worktrees benchmark measures (figures in milliseconds and KiB). */
export interface WorktreeFigures {
  plain: Summary;
  isolated: Summary;
  gitAlone: Summary;
  close: Summary;
  burst: { allReadyMs: number; checkoutsKib: number; gitRecordsKib: number; repoKib: number };
  loadAtStart: number[];
}

/** A city over a `FILES`-file rig: sessions with and without a new worktree, then `CONCURRENT` at once. */
export async function measureWorktrees(): Promise<WorktreeFigures> {
  const loadAtStart = loadavg().map((l) => round(l, 2));
  const repo = bigRepository();
  console.log(`worktrees 0/3 git worktree add alone, ${GIT_ALONE} times…`);
  const alone = summarize(gitAlone(repo));
  const agents = `
[[rigs]]
name = "big"
path = "${repo}"

[[agent]]
name = "coder"
dir = "big"
provider = "echo"
isolation = "worktree"
min_active_sessions = 0
max_active_sessions = ${CONCURRENT}

[[agent]]
name = "inplace"
dir = "big"
provider = "echo"
min_active_sessions = 0
`;
  const city = await startSessionCity('worktrees', agents);
  try {
    console.log(`worktrees 1/3 ${STARTS} sessions without a worktree…`);
    const plain = await sequential(city.api, 'big/inplace');
    console.log(`    p50 ${ms(summarize(plain.start).median)} ms`);
    console.log(`worktrees 2/3 ${STARTS} sessions, each with a new worktree…`);
    const isolated = await sequential(city.api, 'big/coder');
    console.log(
      `    p50 ${ms(summarize(isolated.start).median)} ms, close p50 ${ms(summarize(isolated.close).median)} ms`,
    );
    console.log(`worktrees 3/3 ${CONCURRENT} worktree sessions at once…`);
    const burst = await concurrent(city.api, city.dir, repo);
    return {
      plain: summarize(plain.start),
      isolated: summarize(isolated.start),
      gitAlone: alone,
      close: summarize(isolated.close),
      burst,
      loadAtStart,
    };
  } finally {
    await city.sup.cleanup();
    rmSync(dirname(repo), { recursive: true, force: true });
  }
}

/** The worktree figures as tables. */
export function worktreeTables(f: WorktreeFigures): string {
  return [
    formatTable(
      `Latency (ms), a rig of ${FILES} files, through the supervisor`,
      ['measure', 'n', 'p50', 'p90', 'p99', 'max'],
      [
        row('session create → session.woke, no worktree', f.plain),
        row('session create → session.woke, with a new worktree', f.isolated),
        row('  git worktree add of the same rig alone (what the machine’s disk allows)', f.gitAlone),
        row('close of a clean worktree session (worktree and branch removed)', f.close),
      ],
    ),
    '',
    formatTable(
      `${CONCURRENT} worktree sessions created at once on one rig`,
      ['measure', 'value'],
      [
        ['time until all are ready, ms', ms(f.burst.allReadyMs, 0)],
        [`their checkouts (.ctl/worktrees), MiB`, mib(f.burst.checkoutsKib)],
        [`per worktree, MiB`, mib(f.burst.checkoutsKib / CONCURRENT)],
        [`git's records of them (.git/worktrees: index and HEAD each), MiB`, mib(f.burst.gitRecordsKib)],
        [`the rig's own checkout, for comparison, MiB`, mib(f.burst.repoKib)],
      ],
    ),
  ].join('\n');
}

/** The worktree figures for a JSON report. */
export function worktreeJson(f: WorktreeFigures): Record<string, unknown> {
  return {
    files: FILES,
    create_to_woke_no_worktree_ms: rounded(f.plain),
    create_to_woke_new_worktree_ms: rounded(f.isolated),
    git_worktree_add_alone_ms: rounded(f.gitAlone),
    close_clean_worktree_ms: rounded(f.close),
    concurrent: {
      sessions: CONCURRENT,
      all_ready_ms: round(f.burst.allReadyMs),
      checkouts_kib: f.burst.checkoutsKib,
      git_records_kib: f.burst.gitRecordsKib,
      rig_checkout_kib: f.burst.repoKib,
    },
  };
}

export async function runWorktrees(): Promise<void> {
  const started = performance.now();
  console.log(
    `ctl worktrees benchmark: node ${process.version}, ${availableParallelism()} cores — a ${FILES}-file repository…`,
  );
  const figures = await measureWorktrees();
  console.log(
    [
      `load average at start ${figures.loadAtStart.join(' ')}, at end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      '',
      worktreeTables(figures),
    ].join('\n'),
  );
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(
    OUT_FILE,
    `${JSON.stringify(
      {
        node: process.version,
        cores: availableParallelism(),
        ...worktreeJson(figures),
        load_average_start: figures.loadAtStart,
        wall_s: round((performance.now() - started) / 1000, 1),
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${OUT_FILE}`);
}
