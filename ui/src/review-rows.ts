import type { components } from '../../shared/generated/api-types.js';

// What the Reviews view and a review's page make of the API's reviews and a rig's overlaps, apart from the views so
// that unit tests read it without a page.

export type ReviewState = components['schemas']['ReviewState'];
type OverlapParty = components['schemas']['OverlapParty'];
type RigOverlap = components['schemas']['RigOverlap'];

/**
 * The states that wait on someone, in the order a person takes them: what waits for a decision, what could not
 * go in, what went back to its agent, what is on its way in. Merged and abandoned reviews are done.
 */
export const OPEN_STATES = [
  'pending',
  'conflicted',
  'changes_requested',
  'approved',
] as const satisfies readonly ReviewState[];
export const DONE_STATES = ['merged', 'abandoned'] as const satisfies readonly ReviewState[];

/** Each state in words. An approved review is waiting its turn in the rig's merge queue: "queued". */
export const REVIEW_STATE_WORDS: Record<ReviewState, string> = {
  pending: 'pending',
  conflicted: 'conflicted',
  changes_requested: 'changes requested',
  approved: 'queued',
  merged: 'merged',
  abandoned: 'abandoned',
};

/** Each state's section on the Reviews view. */
export const REVIEW_STATE_HEADINGS: Record<ReviewState, string> = {
  pending: 'Waiting for you',
  conflicted: 'Conflicted',
  changes_requested: 'Sent back',
  approved: 'Approved, queued to merge',
  merged: 'Merged',
  abandoned: 'Abandoned',
};

/** The decisions the API takes in a state (else it answers 409): a page offers only these. */
export function allowedDecisions(state: ReviewState): { approve: boolean; requestChanges: boolean; abandon: boolean } {
  return {
    approve: state === 'pending',
    requestChanges: state === 'pending' || state === 'conflicted',
    abandon: state !== 'merged' && state !== 'abandoned',
  };
}

/** A diff stat summed: how many files, lines added and removed. */
export function statTotals(files: { insertions: number; deletions: number }[]): {
  files: number;
  insertions: number;
  deletions: number;
} {
  let insertions = 0;
  let deletions = 0;
  for (const f of files) {
    insertions += f.insertions;
    deletions += f.deletions;
  }
  return { files: files.length, insertions, deletions };
}

/** The rig of an agent's qualified name (`web/coder` is of `web`); a city-wide agent has none. */
export function rigOfAgent(agent: string): string | undefined {
  const slash = agent.indexOf('/');
  return slash > 0 ? agent.slice(0, slash) : undefined;
}

/** Whose overlaps a page shows: a session's, or a review's (its bead, and the session whose worktree holds it). */
export type OverlapSelf = { session_id: string; bead?: undefined } | { bead: string; session_id: string };

/** The other side of an overlap concerning `self`, and the files both changed. */
export interface OverlapWith {
  party: OverlapParty;
  files: string[];
}

const partyKey = (p: OverlapParty) => (p.kind === 'review' ? `review:${p.bead ?? ''}` : `session:${p.session_id}`);

function isSelf(p: OverlapParty, self: OverlapSelf): boolean {
  if (self.bead !== undefined) {
    // A review's own branch is in its session's worktree: that session is the review itself, not another side.
    return p.kind === 'review' ? p.bead === self.bead : p.session_id === self.session_id;
  }
  return p.session_id === self.session_id;
}

/**
 * The overlaps of a rig that concern `self`, each as the other side and the files: one entry per other side
 * (their files joined, sorted), none where both sides are `self` (a session and the review of its own branch).
 */
export function overlapsConcerning(items: RigOverlap[], self: OverlapSelf): OverlapWith[] {
  const byOther = new Map<string, { party: OverlapParty; files: Set<string> }>();
  for (const overlap of items) {
    const [a, b] = overlap.parties;
    if (!a || !b) continue;
    const other = isSelf(a, self) ? b : isSelf(b, self) ? a : undefined;
    if (!other || isSelf(other, self)) continue;
    const key = partyKey(other);
    const entry = byOther.get(key) ?? { party: other, files: new Set<string>() };
    for (const f of overlap.files) entry.files.add(f);
    byOther.set(key, entry);
  }
  return [...byOther.values()].map((e) => ({ party: e.party, files: [...e.files].sort() }));
}

type ReviewCheck = components['schemas']['ReviewCheck'];
type ReviewQueueStep = components['schemas']['ReviewQueueStep'];

/** What the merge queue is doing with an approved review, in words. */
export const QUEUE_STEP_WORDS: Record<ReviewQueueStep, string> = {
  waiting: 'waiting its turn',
  rebasing: 'rebasing onto its base',
  checking: 'running the check',
  landing: 'landing',
};

/** An approved review's place in its rig's queue, in words ("Queued: place 1 — running the check"). */
export function queueWords(position: number | undefined, step: ReviewQueueStep | undefined): string {
  const place = position !== undefined ? `place ${position}` : 'in the merge queue';
  return `Queued: ${place}${step ? ` — ${QUEUE_STEP_WORDS[step]}` : ''}`;
}

/** How the last `[review] check` ended, in words: passed, failed exit N, timed out, or could not start. */
export function checkOutcome(check: ReviewCheck): string {
  if (check.passed) return 'passed';
  if (check.timed_out) return 'timed out';
  if (check.exit_code !== undefined) return `failed exit ${check.exit_code}`;
  return `could not start${check.error ? `: ${check.error}` : ''}`;
}

/** A run's length as a person reads it: milliseconds under a second, else seconds with one decimal. */
export function checkDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}
