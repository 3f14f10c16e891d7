import type { ReviewDetail, ReviewState, ReviewSummary } from '../../shared/dto/reviews.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags, integer, limitFlag, listLimit } from '../_flags.js';
import { fields, json, line, noteMore, paint, table } from '../_output.js';
import { collectPages } from '../_pages.js';
import { cityPath, inCity } from '../_scope.js';

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
  description: 'A review: its state, commits, comments, and its diff per file (coloured on a terminal)',
  examples: ['ctl review show alp-12', 'ctl review show alp-12 --json'],
  args: { ...beadArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/reviews/{bead}', { params: { path: { ...cityPath(city), bead: a.bead } } }),
    );
    if (a.json) return json(data);
    showReview(data);
  },
});

function showReview(r: ReviewDetail): void {
  fields([
    ['Bead', r.bead],
    ['State', r.state],
    ['Agent', r.agent],
    ['Session', r.session],
    ['Branch', `${r.branch} → ${r.base}`],
    ['Round', r.round],
    ['Decided', r.decided_by ? `${r.decided_by}, ${r.decided_at}` : undefined],
    ['Merged', r.merged],
    ['Pushed', r.pushed_ref ? `${r.pushed_remote ?? ''} ${r.pushed_ref} at ${r.pushed_commit}`.trim() : undefined],
    ['Conflict', r.conflict],
  ]);
  line('');
  for (const c of r.commits) line(`${paint(c.sha.slice(0, 12), 'yellow')} ${c.subject}`);
  for (const c of r.comments) {
    const where = c.path === undefined ? '' : `${c.path}${c.line === undefined ? '' : `:${c.line}`} `;
    line(`${paint(`#${c.id}`, 'dim')} ${paint(c.author, 'cyan')} ${where}${c.text}`);
  }
  for (const file of r.diff) {
    line('');
    for (const text of file.diff.replace(/\n$/, '').split('\n')) line(diffLine(text));
    if (file.truncated) line(paint(`(the diff of ${file.path} is cut here)`, 'dim'));
  }
  if (r.truncated) line(paint('(more files are left out: the diff is over its bound)', 'dim'));
}

function diffLine(text: string): string {
  if (text.startsWith('diff --git') || text.startsWith('+++') || text.startsWith('---')) return paint(text, 'bold');
  if (text.startsWith('@@')) return paint(text, 'cyan');
  if (text.startsWith('+')) return paint(text, 'green');
  if (text.startsWith('-')) return paint(text, 'red');
  return text;
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

const approve = command({
  name: 'approve',
  description: 'Approve a pending review: its branch goes into its base, or it is conflicted with the files named',
  examples: ['ctl review approve alp-12'],
  args: { ...beadArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/reviews/{bead}/approve', {
        params: { header: CSRF, path: { ...cityPath(city), bead: a.bead } },
      }),
    );
    if (a.json) return json(data);
    if (data.state === 'merged' && data.pushed_ref) {
      return line(
        `Pushed ${data.branch} to ${data.pushed_remote ?? 'its remote'} ${data.pushed_ref} at ${data.pushed_commit}`,
      );
    }
    if (data.state === 'merged') return line(`Merged ${data.branch} into ${data.base} at ${data.merged}`);
    // Approved, not merged: what a person must act on, as a failure says it.
    throw new CliError(`review ${a.bead} is conflicted: ${data.branch} could not land: ${data.conflict}`);
  },
});

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
