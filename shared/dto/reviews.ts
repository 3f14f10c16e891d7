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
  truncated: boolean; /** From the second round: what changed since the round before (`previous_commit` to `commit`), bounded alike. */
  diff_since_previous?: ReviewFileDiff[];
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
}
