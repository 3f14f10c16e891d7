import type { ReviewDetail, ReviewState, ReviewSummary } from '../../shared/dto/reviews.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { formatDuration } from '../../shared/duration.js';
import { inCityFlags, integer, limitFlag, listLimit, timeout, timeoutFlag } from '../_flags.js';
import { colourChosen, fieldLines, json, line, noteMore, progress, sgr, table, type Colour } from '../_output.js';
import { page } from '../_pager.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';
import { currentPosition, readEvents } from '../_stream.js';

const STATES: readonly ReviewState[] = [
  'pending',
  'changes_requested',
  'approved',
  'merged',
  'conflicted',
  'abandoned',
];
const beadArg = {
  bead: { type: 'positional', description: 'The bead whose branch is reviewed', required: true, complete: 'beads' },
} as const;

const list = command({
  name: 'list',
  description: 'Reviews of finished work: bead, state, agent, branch, commits, files changed',
  examples: ['ctl review list', 'ctl review list --state pending', 'ctl review list --agent web/coder --json'],
  args: {
    agent: { type: 'string', description: 'Only this agent’s', valueHint: 'AGENT' },
    rig: { type: 'string', description: 'Only this rig’s agents’', valueHint: 'RIG' },
    state: { type: 'string', description: `Only those in this state (${STATES.join(', ')})`, valueHint: 'STATE' },
    ...limitFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const limit = listLimit(a.limit);
    if (a.state !== undefined && !STATES.includes(a.state as ReviewState)) {
      throw new CliError(`--state is one of ${STATES.join(', ')} (got ${JSON.stringify(a.state)})`);
    }
    const { api, city } = await inCity(a);
    const filter = {
      ...(a.agent ? { agent: a.agent } : {}),
      ...(a.rig ? { rig: a.rig } : {}),
      ...(a.state ? { state: a.state as ReviewState } : {}),
    };
    const body = await collectPages(limit, async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/reviews', {
          params: { path: cityPath(city), query: { ...filter, limit: size, ...(cursor ? { cursor } : {}) } },
        }),
      );
      return data;
    });
    if (a.json) return json(body);
    if (body.items.length === 0) return line('No reviews.');
    table<ReviewSummary>(
      [
        { header: 'BEAD', value: (r) => r.bead, kind: 'id' },
        { header: 'STATE', value: (r) => r.state, kind: 'status' },
        { header: 'AGENT', value: (r) => r.agent },
        { header: 'BRANCH', value: (r) => `${r.branch} → ${r.base}` },
        { header: 'COMMITS', value: (r) => String(r.commits.length) },
        { header: 'FILES', value: (r) => String(r.files.length) },
        { header: 'ROUND', value: (r) => String(r.round) },
      ],
      body.items,
    );
    noteMore(body.items.length, body.total);
  },
});

const show = command({
  name: 'show',
  description:
    'A review: its state, commits, comments, overlaps, and its diff per file (through your pager and coloured on a terminal)',
  examples: [
    'ctl review show alp-12',
    'ctl review show alp-12 --since-last   # only what changed since the round before',
    'ctl review show alp-12 --no-pager --color=always | less -R',
    'ctl review show alp-12 --json',
  ],
  args: {
    ...beadArg,
    'since-last': {
      type: 'boolean',
      description: 'The diff since the round before (what changed since you last looked), not the whole',
    },
    color: {
      type: 'enum',
      description: 'Colour: auto (on a terminal, unless NO_COLOR), always, never',
      options: ['auto', 'always', 'never'],
      valueHint: 'WHEN',
    },
    pager: {
      type: 'boolean',
      description: 'On a terminal, through $CTL_PAGER, else $PAGER, else less (--no-pager: straight to stdout)',
    },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/reviews/{bead}', { params: { path: { ...cityPath(city), bead: a.bead } } }),
    );
    if (a.json) return json(data);
    const since = a['since-last'] === true;
    if (since && data.round === 1) {
      throw new CliError(`review ${a.bead} is in its first round: there is no round before it to compare with`);
    }
    const colour = colourChosen(a.color);
    await page(reviewText(data, since, colour ? sgr : (text) => text), a.pager);
  },
});

type Painter = (text: string, colour: Colour) => string;

/** What `ctl review show` prints: fields, commits, comments, overlaps, then the diff (`since`: the last round's). */
export function reviewText(r: ReviewDetail, since: boolean, paint: Painter): string {
  const out = fieldLines([
    ['Bead', r.bead],
    ['State', r.state],
    ['Agent', r.agent],
    ['Session', r.session],
    ['Branch', `${r.branch} → ${r.base}`],
    ['Round', r.round],
    ['Decided', r.decided_by ? `${r.decided_by}, ${r.decided_at}` : undefined],
    ['Queue', r.state === 'approved' ? `place ${r.queue_position ?? '?'}, ${r.queue_step ?? 'waiting'}` : undefined],
    ['Merged', r.merged],
    ['Pushed', r.pushed_ref ? `${r.pushed_remote ?? ''} ${r.pushed_ref} at ${r.pushed_commit}`.trim() : undefined],
    ['Conflict', r.conflict],
    ['Files in the way', r.conflict_files?.length ? r.conflict_files.join(', ') : undefined],
    ['Check', r.check ? checkLine(r.check) : undefined],
  ]);
  if (r.check_output !== undefined && r.check && !r.check.passed) {
    out.push('', paint('Check output (its end):', 'bold'));
    out.push(...r.check_output.replace(/\n$/, '').split('\n').slice(-40));
  }
  out.push('');
  for (const c of r.commits) out.push(`${paint(c.sha.slice(0, 12), 'yellow')} ${c.subject}`);
  for (const c of r.comments) {
    const where = c.path === undefined ? '' : `${c.path}${c.line === undefined ? '' : `:${c.line}`} `;
    out.push(`${paint(`#${c.id}`, 'dim')} ${paint(c.author, 'cyan')} ${where}${c.text}`);
  }
  for (const o of r.overlaps ?? []) {
    const side = o.party.kind === 'review' ? `the review of ${o.party.bead} (${o.party.session})` : o.party.session;
    out.push(`${paint('overlaps', 'yellow')} ${side}: ${o.files.join(', ')}`);
  }
  if (since) {
    const nothing = (r.diff_since_previous ?? []).length === 0 ? ': nothing changed' : '';
    out.push('', paint(`(the diff since round ${r.round - 1}, ${r.previous_commit ?? ''}${nothing})`, 'dim'));
  }
  for (const file of since ? (r.diff_since_previous ?? []) : r.diff) {
    out.push('');
    out.push(...diffLines(file.diff, paint));
    if (file.truncated) out.push(paint(`(the diff of ${file.path} is cut here)`, 'dim'));
  }
  if (!since && r.truncated) out.push(paint('(more files are left out: the diff is over its bound)', 'dim'));
  return out.join('\n') + '\n';
}

function checkLine(c: NonNullable<ReviewDetail['check']>): string {
  const how = c.passed
    ? 'passed'
    : c.timed_out
      ? 'timed out (killed)'
      : c.exit_code !== undefined
        ? `failed, exit ${c.exit_code}`
        : `failed: ${c.error ?? 'killed'}`;
  return `${how} in ${formatDuration(c.duration_ms)}: ${c.command}`;
}

/**
 * A file's unified diff in git's colours: its header (up to the first hunk) bold, hunk heads cyan, additions green,
 * removals red — by where a line is, so that a removed `-- x` is red, not a header.
 */
function diffLines(diff: string, paint: Painter): string[] {
  let inHunk = false;
  return diff
    .replace(/\n$/, '')
    .split('\n')
    .map((text) => {
      if (text.startsWith('diff --git')) inHunk = false;
      if (text.startsWith('@@')) {
        inHunk = true;
        return paint(text, 'cyan');
      }
      if (!inHunk) return paint(text, 'bold');
      if (text.startsWith('+')) return paint(text, 'green');
      if (text.startsWith('-')) return paint(text, 'red');
      return text;
    });
}

const comment = command({
  name: 'comment',
  description: 'Comment on a review, on the whole or on a file and a line of its diff',
  examples: [
    'ctl review comment alp-12 "Looks right"',
    'ctl review comment alp-12 --file src/a.ts --line 14 "Use a constant"',
  ],
  args: {
    ...beadArg,
    text: { type: 'positional', description: 'What to say', required: true },
    file: { type: 'string', description: 'A file of the diff', valueHint: 'FILE' },
    line: { type: 'string', description: 'A line of that file (its new side)', valueHint: 'N' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const at = integer(a.line, 'line');
    if (at !== undefined && a.file === undefined) throw new CliError('--line goes with --file');
    if (a.text.trim() === '') throw new CliError('empty comment; say something');
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/reviews/{bead}/comments', {
        params: { header: CSRF, path: { ...cityPath(city), bead: a.bead } },
        body: {
          text: a.text,
          ...(a.file !== undefined ? { path: a.file } : {}),
          ...(at !== undefined ? { line: at } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    line(`Commented on the review of ${a.bead} (#${data.id})`);
  },
});

/** How long `approve` waits for the queue's outcome unless told: longer than the check's default time-out. */
const APPROVE_WAIT_MS = 15 * 60_000;
const OUTCOMES = new Set(['review.merged', 'review.conflicted', 'review.changes_requested', 'review.abandoned']);

const approve = command({
  name: 'approve',
  description:
    'Approve a pending review: it joins its rig’s merge queue (rebased, checked, merged); waits for the outcome',
  examples: [
    'ctl review approve alp-12',
    'ctl review approve alp-12 --no-wait',
    'ctl review approve alp-12 --timeout 30m',
  ],
  args: {
    ...beadArg,
    wait: {
      type: 'boolean',
      description:
        'Wait until the queue merged it, found it conflicted or sent it back (default; --no-wait returns at once)',
      negatable: true,
    },
    ...timeoutFlag('How long to wait for the outcome (default 15m)'),
    ...inCityFlags,
  },
  async run({ args: a }) {
    const wait = timeout(a.timeout, APPROVE_WAIT_MS);
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), bead: a.bead };
    // Read from before the approval: an outcome the queue records at once is not missed.
    const position = a.wait === false ? undefined : await currentPosition(api, city);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/reviews/{bead}/approve', { params: { header: CSRF, path } }),
    );
    if (position === undefined) {
      if (a.json) return json(data);
      return line(
        `Approved ${a.bead}: place ${data.queue_position ?? 1} in the merge queue of ${data.rig ?? data.base}`,
      );
    }
    const deadline = AbortSignal.timeout(wait);
    await readEvents(
      api,
      { city, after: position, reconnect: true, signal: deadline, note: (text) => progress(`  (${text})`) },
      (envelope) => OUTCOMES.has(String(envelope.type)) && envelope.subject === a.bead,
    );
    const { data: review } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/reviews/{bead}', { params: { path } }),
    );
    if (a.json) return json(review);
    printOutcome(review, wait);
  },
});

/** What the queue did with an approved review, as a person reads it: merged, or a failure in one line. */
function printOutcome(r: ReviewDetail, waitedMs: number): void {
  if (r.state === 'merged' && r.pushed_ref) {
    return line(`Pushed ${r.branch} to ${r.pushed_remote ?? 'its remote'} ${r.pushed_ref} at ${r.pushed_commit}`);
  }
  if (r.state === 'merged') return line(`Merged ${r.branch} into ${r.base} at ${r.merged}`);
  if (r.state === 'conflicted') {
    const files = r.conflict_files?.length ? ` (files: ${r.conflict_files.join(', ')})` : '';
    throw new CliError(`review ${r.bead} is conflicted: ${r.branch} could not land: ${r.conflict}${files}`);
  }
  if (r.state === 'changes_requested' && r.check && !r.check.passed) {
    const how = r.check.timed_out
      ? 'timed out'
      : r.check.exit_code !== undefined
        ? `exited ${r.check.exit_code}`
        : (r.check.error ?? 'was killed');
    throw new CliError(
      `review ${r.bead}: the check ${how} after ${formatDuration(r.check.duration_ms)}; sent back to ${r.agent} ` +
        `(its output: ctl review show ${r.bead})`,
    );
  }
  if (r.state === 'approved') {
    throw new CliError(
      `review ${r.bead} is still approved, place ${r.queue_position ?? '?'} in the merge queue, after ` +
        `${formatDuration(waitedMs)} (ctl review show ${r.bead} tells when it is done)`,
    );
  }
  throw new CliError(`review ${r.bead} is ${r.state}`);
}

const requestChanges = command({
  name: 'request-changes',
  description: 'Send a review back: the bead reopens for its agent with TEXT and every comment with its file:line',
  examples: ['ctl review request-changes alp-12 "See the comments on src/a.ts"'],
  args: { ...beadArg, text: { type: 'positional', description: 'What to change', required: true }, ...inCityFlags },
  async run({ args: a }) {
    if (a.text.trim() === '') throw new CliError('say what to change');
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/reviews/{bead}/request-changes', {
        params: { header: CSRF, path: { ...cityPath(city), bead: a.bead } },
        body: { text: a.text },
      }),
    );
    if (a.json) return json(data);
    line(`Sent ${a.bead} back to ${data.agent} (session ${data.session})`);
  },
});

const abandon = command({
  name: 'abandon',
  description: 'End a review without merging (the branch stays where it is)',
  examples: ['ctl review abandon alp-12'],
  args: { ...beadArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/reviews/{bead}/abandon', {
        params: { header: CSRF, path: { ...cityPath(city), bead: a.bead } },
      }),
    );
    if (a.json) return json(data);
    line(`Abandoned the review of ${a.bead}`);
  },
});

export const reviewCommand = group({
  name: 'review',
  description: 'Reviews: finished work held for a person (merge = "review"), approved, sent back or abandoned',
  examples: ['ctl review list', 'ctl review show alp-12', 'ctl review approve alp-12'],
  commands: { list, show, comment, approve, 'request-changes': requestChanges, abandon },
});
