import type { PartyOverlap } from './overlaps.js';

/** Where a review is: waiting for a person, sent back, merged, or ended without merging. */
export type ReviewState = 'pending' | 'changes_requested' | 'approved' | 'merged' | 'conflicted' | 'abandoned';

/** A commit of a reviewed branch (between its base and the commit it was finished at). */
export interface ReviewCommit {
  sha: string;
  subject: string;
}

/** What one file of a reviewed branch changed (`git diff --numstat`; a binary file counts nothing). */
export interface ReviewFileStat {
  path: string;
  /** @isInt */
  insertions: number;
  /** @isInt */
  deletions: number;
}

/** A person's word on a review, anchored to a file and a line of the new side of its diff when given. */
export interface ReviewComment {
  /** @isInt */
  id: number;
  text: string;
  author: string;
  /** When it was written (ISO 8601). */
  at: string;
  path?: string;
  /** @isInt */
  line?: number;
}

/** A review as a list shows it. */
export interface ReviewSummary {
  /** The bead whose branch is reviewed (a review is keyed by it). */
  bead: string;
  state: ReviewState;
  agent: string;
  rig?: string;
  /** The session that finished the work. */
  session: string;
  branch: string;
  base: string;
  /** The commit the branch was finished at. */
  commit: string;
  /** The base's commit the branch started from (the diff is from here). */
  base_commit: string;
  commits: ReviewCommit[];
  files: ReviewFileStat[];
  /**
   * How many times the branch came for review (1 at first; one more after each requested change).
   * @isInt
   */
  round: number;
  /** From the second round: the commit the round before was finished at (what the person last saw). */
  previous_commit?: string;
  /** When it was first requested (ISO 8601). */
  created_at: string;
  /** When it last came for review (this round's request; ISO 8601): how long it has waited. */
  requested_at?: string;
  updated_at: string;
  /** Who approved, requested changes or abandoned it, and when. */
  decided_by?: string;
  decided_at?: string;
  /** `merged`: the base's commit once the branch was in it. */
  merged?: string;
  /**
   * `merged` by a push (`[review] land = "push"`): the branch went to its rig's remote instead of its base — the
   * remote's name, the ref (`refs/heads/<branch>`) and the commit it is at there (the branch's commits with the
   * bead's `Ctl-Bead` trailer).
   */
  pushed_remote?: string;
  pushed_ref?: string;
  pushed_commit?: string;
  /** `conflicted`: why the branch could not go in, and the files in the way when git named them. */
  conflict?: string;
  conflict_files?: string[];
  /**
   * `approved`: its place in its rig's merge queue (1: the one being merged now), in approval order.
   * @isInt
   */
  queue_position?: number;
  /** `approved`: what the queue is doing with it (`waiting` its turn, `rebasing` onto the base, `checking`, `landing`). */
  queue_step?: ReviewQueueStep;
  /** The last run of the city's `[review] check` on it (the output is in the detail, `check_output`). */
  check?: ReviewCheck;
}

/** What the merge queue is doing with an approved review. */
export type ReviewQueueStep = 'waiting' | 'rebasing' | 'checking' | 'landing';

/** A run of the city's `[review] check` command in an approved review's tree, before it lands. */
export interface ReviewCheck {
  /** The command, as `city.toml` said it then. */
  command: string;
  /** Exit code 0 within its time-out. */
  passed: boolean;
  /**
   * Its exit code; absent when it was killed (its time-out) or could not start.
   * @isInt
   */
  exit_code?: number;
  /** Killed, with its whole process group, at `[review] check_timeout`. */
  timed_out: boolean;
  /** @isInt */
  duration_ms: number;
  /** When it ended (ISO 8601). */
  at: string;
  /** The commit it ran on: the reviewed commit, rebased onto the base when the base had moved on. */
  commit: string;
  /** Why it could not start. */
  error?: string;
}

/** A file of a review's diff: its unified diff, cut at the size bound when `truncated`. */
export interface ReviewFileDiff {
  path: string;
  diff: string;
  truncated: boolean;
}

/** A review with its comments and its diff. */
export interface ReviewDetail extends ReviewSummary {
  comments: ReviewComment[];
  diff: ReviewFileDiff[];
  /** Some files were left out: the whole diff is over its bound. */
  truncated: boolean;
  /** From the second round: what changed since the round before (`previous_commit` to `commit`), bounded alike. */
  diff_since_previous?: ReviewFileDiff[];
  /** The output of the last `check` (stdout and stderr as they came), its last 64 KiB. */
  check_output?: string;
  /**
   * While it waits to land (`pending`, `approved`, `conflicted`) in a rig: the rig's open sessions and other waiting
   * reviews whose branches changed some of its files, with those files (read now, as `GET …/rigs/{name}/overlaps`).
   */
  overlaps?: PartyOverlap[];
}

export interface ListBodyReviewSummary {
  items: ReviewSummary[];
  /** @isInt */
  total: number;
  next_cursor?: string;
}

export interface ReviewCommentInputBody {
  /** @minLength 1 */
  text: string;
  /** A file of the diff the comment is about. */
  path?: string;
  /**
   * A line of the new side of that file's diff (needs `path`).
   * @isInt
   * @minimum 1
   */
  line?: number;
}

export interface ReviewRequestChangesInputBody {
  /** What to change, told to the agent with every comment of the review. */
  text: string;
}

/** The payload of the `review.*` events. */
export interface ReviewEventPayload {
  bead: string;
  state: ReviewState;
  agent: string;
  branch: string;
  base: string;
  /**
   * `review.commented`: the comment's id.
   * @isInt
   */
  comment?: number;
  /** `review.merged`: the base's commit; `review.conflicted`: the files in the way. */
  merged?: string;
  /** `review.merged` by a push: the remote's ref and the commit it is at. */
  pushed_ref?: string;
  pushed_commit?: string;
  files?: string[];
  /** `review.conflicted`: why. */
  reason?: string;
  /** `review.checked`: how the check went. */
  check?: ReviewCheck;
  /**
   * `review.approved`: its place in its rig's merge queue.
   * @isInt
   */
  queue_position?: number;
}
