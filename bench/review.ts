/**
 * Review benchmark: a real supervisor and controller over a rig that is a real git repository of 10,000 files, an
 * agent with `isolation = "worktree"` and `merge = "review"` running the shipped echo agent (whose `run` runs a shell
 * command in its worktree), measuring
 *   1. a review of a 1,000-file change: `GET …/reviews/{bead}` (its diff split per file and bounded) through the
 *      supervisor, p50/p99, and the size of what it serves;
 *   2. the overlaps of 20 worktree sessions of that rig, each having changed 50 files (neighbours sharing 10):
 *      `GET …/rigs/{name}/overlaps` through the supervisor (the branches' diffs cached, each worktree's
 *      `git status` read anew), and the same computation cold — nothing cached — in this process over the same
 *      worktrees, which is what a turn end after new commits costs;
 *   3. a merge queue of 10 approved reviews: the time from approving them all until the last is merged, each
 *      rebased on the ones before and its check run.
 * Prints tables and writes `.bench-out/review.json`. Run with `npm run bench -- review`.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { RigOverlaps, type OverlapSession } from '../controller/worktrees/overlaps.js';
import type { CityApi } from '../test/helpers/city-api.js';
import { createSession, startSessionCity, waitForTurn } from '../test/helpers/sessions.js';
import { SseStreamReader } from '../test/helpers/sse.js';
import { waitUntil } from '../test/helpers/wait.js';
import { round, rounded, summarize, type Summary } from './stats.js';
import { formatTable, ms } from './table.js';
import { bigRepository } from './worktrees.js';

const FILES = 10_000;
const CHANGED = 1_000;
const READS = 20;
const OVERLAP_SESSIONS = 20;
const PER_SESSION = 50;
const SHARED_WITH_NEXT = 10;
const OVERLAP_READS = 10;
const COLD_READS = 5;
const QUEUED = 10;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'review.json');

/** The `n`th file of the repository (0 ≤ n < FILES), as its path from the top. */
function fileAt(n: number): string {
  return `src${Math.floor(n / 100)}/file${n % 100}.ts`;
}

/** Runs a shell command in a session's worktree through the echo agent and waits for its turn to end. */
async function run(api: CityApi, id: string, command: string): Promise<void> {
  const mark = `${Date.now()}-${Math.random()}`;
  await api.post(`/session/${id}/messages`, { message: `run ${command}; echo done-${mark}` });
  await waitForTurn(api, id, 'assistant', new RegExp(`done-${mark}`), 300_000);
}

/** A commit in the session's worktree changing files `from` … `from + count - 1` (a line appended to each). */
async function commitRange(api: CityApi, id: string, from: number, count: number, tag: string): Promise<void> {
  const list = `/tmp/ctl-bench-review-${process.pid}-${tag}.list`;
  writeFileSync(list, Array.from({ length: count }, (_, i) => fileAt(from + i)).join('\n') + '\n');
  await run(
    api,
    id,
    `while read f; do echo "// ${tag}" >> "$f"; done < ${list} && git commit -q -am '${tag}' && rm ${list}`,
  );
}

interface ReviewBody {
  state: string;
  diff: { path: string; diff: string }[];
  truncated: boolean;
}

/** Closes the session's bead (merge = "review") and waits for its review to be pending. */
async function closeForReview(api: CityApi, sessionId: string, title: string): Promise<string> {
  const bead = await api.create({ title, metadata: { 'ctl.assigned_session': sessionId } });
  const closed = await api.post(`/bead/${bead.id}/close`);
  if (closed.status !== 200) throw new Error(`close ${bead.id}: HTTP ${closed.status}`);
  await waitUntil(
    `the review of ${bead.id} to be pending`,
    async () => (await api.get<ReviewBody>(`/reviews/${bead.id}`)).body.state === 'pending',
    120_000,
  );
  return bead.id;
}

interface DiffFigures {
  read: Summary;
  bytes: number;
  files: number;
  truncated: boolean;
}

/** 1. A 1,000-file change, read as a review `READS` times. */
async function measureDiff(api: CityApi): Promise<DiffFigures> {
  const id = await createSession(api, { kind: 'agent', name: 'big/coder' });
  await commitRange(api, id, 0, CHANGED, 'thousand');
  const bead = await closeForReview(api, id, 'a thousand files');
  const times: number[] = [];
  let last: { body: ReviewBody; bytes: number } | undefined;
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    const reply = await fetch(api.url(`/reviews/${bead}`));
    const text = await reply.text();
    times.push(performance.now() - started);
    if (reply.status !== 200) throw new Error(`GET /reviews/${bead}: HTTP ${reply.status}: ${text.slice(0, 200)}`);
    last = { body: JSON.parse(text) as ReviewBody, bytes: Buffer.byteLength(text) };
  }
  await api.post(`/reviews/${bead}/abandon`);
  // Closed, so that part 2 counts its own sessions only.
  await api.post(`/session/${id}/close`);
  return { read: summarize(times), bytes: last!.bytes, files: last!.body.diff.length, truncated: last!.body.truncated };
}

interface SessionDetail {
  id: string;
  name: string;
  worktree: { path: string; branch: string; base?: string; repository: string };
}

interface OverlapFigures {
  sessions: number;
  pairs: number;
  api: Summary;
  cold: Summary;
}

/** 2. `OVERLAP_SESSIONS` worktree sessions, each with `PER_SESSION` changed files, neighbours sharing some. */
async function measureOverlaps(api: CityApi): Promise<OverlapFigures> {
  const ids: string[] = [];
  for (let i = 0; i < OVERLAP_SESSIONS; i++) ids.push(await createSession(api, { kind: 'agent', name: 'big/coder' }));
  // Session i changes files [s, s + PER_SESSION) with s = i × (PER_SESSION − SHARED_WITH_NEXT), away from part 1's.
  const step = PER_SESSION - SHARED_WITH_NEXT;
  for (let i = 0; i < ids.length; i++) await commitRange(api, ids[i], CHANGED + i * step, PER_SESSION, `s${i}`);

  const times: number[] = [];
  let pairs = 0;
  let checked = 0;
  for (let i = 0; i < OVERLAP_READS; i++) {
    const started = performance.now();
    const reply = await api.get<{ total?: number; items: unknown[]; sessions_checked: number }>(
      '/rigs/big/overlaps?limit=1000',
    );
    times.push(performance.now() - started);
    if (reply.status !== 200) throw new Error(`GET overlaps: HTTP ${reply.status}`);
    pairs = reply.body.total ?? reply.body.items.length;
    checked = reply.body.sessions_checked;
  }

  // Cold: a fresh computation (no branch diff cached) over the same worktrees, in this process.
  const records: OverlapSession[] = [];
  for (const id of ids) {
    const s = (await api.get<SessionDetail>(`/session/${id}`)).body;
    records.push({
      id: s.id,
      session_name: s.name,
      work_dir: s.worktree.path,
      worktree: s.worktree.path,
      worktree_repo: s.worktree.repository,
      branch: s.worktree.branch,
      base: s.worktree.base ?? 'main',
    });
  }
  const cold: number[] = [];
  for (let i = 0; i < COLD_READS; i++) {
    const overlaps = new RigOverlaps({
      sessionsOf: () => records,
      reviewsOf: () => [],
      rigOf: () => 'big',
      record: async () => {},
      logger: pino({ level: 'silent' }),
    });
    const started = performance.now();
    const read = await overlaps.compute('big');
    cold.push(performance.now() - started);
    if (read?.items.length !== pairs) throw new Error(`cold read found ${read?.items.length} pairs, not ${pairs}`);
  }
  for (const id of ids) await api.post(`/session/${id}/close?delete=true`);
  return { sessions: checked, pairs, api: summarize(times), cold: summarize(cold) };
}

interface QueueFigures {
  reviews: number;
  approveMs: Summary;
  allMergedMs: number;
  perLanding: Summary;
}

/**
 * 3. `QUEUED` pending reviews, each of a file of its own, approved one after another as fast as the API takes
 * them: each lands rebased on the ones before (the base moves every time), its check run first.
 */
async function measureQueue(api: CityApi): Promise<QueueFigures> {
  const ids: string[] = [];
  for (let i = 0; i < QUEUED; i++) ids.push(await createSession(api, { kind: 'agent', name: 'big/coder' }));
  const beads: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    await run(api, ids[i], `echo ${i} > queued-${i}.txt && git add queued-${i}.txt && git commit -q -m 'queued ${i}'`);
    beads.push(await closeForReview(api, ids[i], `queued ${i}`));
  }
  const stream = await SseStreamReader.open(api.url('/events/stream'));
  try {
    const merged = new Map<string, number>();
    const waiting = stream.until((f) => {
      if (f.event !== 'event') return false;
      const event = JSON.parse(f.data) as { type: string; subject?: string; message?: string };
      if (event.subject === undefined || !beads.includes(event.subject)) return false;
      if (event.type === 'review.conflicted' || event.type === 'review.changes_requested') {
        throw new Error(`${event.subject}: ${event.type}: ${event.message}`);
      }
      if (event.type === 'review.merged') merged.set(event.subject, performance.now());
      return merged.size === beads.length;
    }, 600_000);
    // Settled into a value at once, so a failure during the approvals is kept (and thrown below), never unhandled.
    const outcome = waiting.then(
      () => undefined,
      (err: unknown) => err,
    );
    const approveMs: number[] = [];
    const first = performance.now();
    for (const bead of beads) {
      const sent = performance.now();
      const reply = await api.post(`/reviews/${bead}/approve`);
      approveMs.push(performance.now() - sent);
      if (reply.status !== 200) throw new Error(`approve ${bead}: HTTP ${reply.status}: ${JSON.stringify(reply.body)}`);
    }
    const failure = await outcome;
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error(JSON.stringify(failure));
    const at = beads.map((b) => merged.get(b)!);
    const gaps = at.map((t, i) => t - (i === 0 ? first : at[i - 1]));
    for (const id of ids) await api.post(`/session/${id}/close`);
    return {
      reviews: beads.length,
      approveMs: summarize(approveMs),
      allMergedMs: Math.max(...at) - first,
      perLanding: summarize(gaps),
    };
  } finally {
    stream.close();
  }
}

/** What the review benchmark measures. */
export interface ReviewFigures {
  diff: DiffFigures;
  overlaps: OverlapFigures;
  queue: QueueFigures;
  loadAtStart: number[];
}

export async function measureReview(): Promise<ReviewFigures> {
  const loadAtStart = loadavg().map((l) => round(l, 2));
  const repo = bigRepository('ctl-bench-review-');
  const agents = `
[[rigs]]
name = "big"
path = "${repo}"

[[agent]]
name = "coder"
dir = "big"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0
max_active_sessions = ${OVERLAP_SESSIONS + 2}

[review]
check = "git diff --check HEAD~1 HEAD"
`;
  const city = await startSessionCity('review', agents);
  try {
    console.log(`review 1/3 a review of a ${CHANGED}-file change, read ${READS} times…`);
    const diff = await measureDiff(city.api);
    console.log(`    p50 ${ms(diff.read.median)} ms, ${(diff.bytes / 1024).toFixed(0)} KiB`);
    console.log(`review 2/3 overlaps of ${OVERLAP_SESSIONS} worktree sessions…`);
    const overlaps = await measureOverlaps(city.api);
    console.log(
      `    ${overlaps.pairs} pairs; API p50 ${ms(overlaps.api.median)} ms, cold p50 ${ms(overlaps.cold.median)} ms`,
    );
    console.log(`review 3/3 a merge queue of ${QUEUED} approved reviews…`);
    const queue = await measureQueue(city.api);
    console.log(`    all merged ${ms(queue.allMergedMs, 0)} ms after the first approval`);
    return { diff, overlaps, queue, loadAtStart };
  } finally {
    await city.sup.cleanup();
    rmSync(dirname(repo), { recursive: true, force: true });
  }
}

function row(label: string, s: Summary): string[] {
  return [label, String(s.n), ms(s.median), ms(s.p90), ms(s.p99), ms(s.max)];
}

export function reviewTables(f: ReviewFigures): string {
  return [
    formatTable(
      `Latency (ms), a rig of ${FILES} files, through the supervisor`,
      ['measure', 'n', 'p50', 'p90', 'p99', 'max'],
      [
        row(`GET /reviews/{bead}, a ${CHANGED}-file change (${f.diff.files} files served)`, f.diff.read),
        row(
          `GET /rigs/{name}/overlaps, ${f.overlaps.sessions} worktrees × ${PER_SESSION} files (branch diffs cached)`,
          f.overlaps.api,
        ),
        row(`  the same computed cold (nothing cached), in-process`, f.overlaps.cold),
        row(`POST /reviews/{bead}/approve (queued: answers at once)`, f.queue.approveMs),
        row(`  one review landing after the one before (rebase, check, fast-forward)`, f.queue.perLanding),
      ],
    ),
    '',
    formatTable(
      'Sizes',
      ['measure', 'value'],
      [
        [`the review's body, KiB`, (f.diff.bytes / 1024).toFixed(1)],
        [`its diff truncated at the bound`, String(f.diff.truncated)],
        [`overlapping pairs among ${f.overlaps.sessions} sessions`, String(f.overlaps.pairs)],
        [`${f.queue.reviews} approved reviews: first approval → last merged, ms`, ms(f.queue.allMergedMs, 0)],
      ],
    ),
  ].join('\n');
}

export function reviewJson(f: ReviewFigures): Record<string, unknown> {
  return {
    files: FILES,
    diff: {
      changed_files: CHANGED,
      served_files: f.diff.files,
      body_bytes: f.diff.bytes,
      truncated: f.diff.truncated,
      read_ms: rounded(f.diff.read),
    },
    overlaps: {
      sessions: f.overlaps.sessions,
      files_per_session: PER_SESSION,
      pairs: f.overlaps.pairs,
      api_ms: rounded(f.overlaps.api),
      cold_in_process_ms: rounded(f.overlaps.cold),
    },
    queue: {
      reviews: f.queue.reviews,
      approve_ms: rounded(f.queue.approveMs),
      all_merged_ms: round(f.queue.allMergedMs),
      per_landing_ms: rounded(f.queue.perLanding),
    },
    load_at_start: f.loadAtStart,
  };
}

export async function runReview(): Promise<void> {
  const started = performance.now();
  console.log(`ctl review benchmark: node ${process.version}, ${availableParallelism()} cores — a ${FILES}-file rig…`);
  const figures = await measureReview();
  console.log('\n' + reviewTables(figures));
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(OUT_FILE, JSON.stringify(reviewJson(figures), null, 2) + '\n');
  console.log(`\nwrote ${OUT_FILE} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}
