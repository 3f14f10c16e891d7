// Overlaps: pairs of a rig's open sessions (and reviews waiting to land) whose branches changed the same files,
// seen before either merges.

/**
 * One side of an overlap: an open session's worktree, or a pending review's branch (work finished, not merged,
 * that a session working now would collide with at merge).
 */
export interface OverlapParty {
  kind: 'session' | 'review';
  /** The session's name: the one working, or the one that finished the reviewed work. */
  session: string;
  session_id: string;
  /** `review`: the reviewed bead (the review's key). */
  bead?: string;
}

/** Two sides of a rig (sessions, or pending reviews) whose branches changed the same files against their bases. */
export interface RigOverlap {
  /**
   * The two sides, in the order of `sessions`.
   * @minItems 2
   * @maxItems 2
   */
  parties: OverlapParty[];
  /**
   * The two sessions' names, in order.
   * @minItems 2
   * @maxItems 2
   */
  sessions: string[];
  /**
   * Their ids, in the same order.
   * @minItems 2
   * @maxItems 2
   */
  session_ids: string[];
  /** The files both changed (paths from the repository's top), sorted. */
  files: string[];
}

/** A session or review whose changes could not be read (its branch gone, git failing): left out of the pairs. */
export interface RigOverlapProblem {
  session: string;
  session_id: string;
  /** A review's: its bead. */
  bead?: string;
  error: string;
}

/** The other side of an overlap, seen from one side (a review's or a session's page), with the files both changed. */
export interface PartyOverlap {
  party: OverlapParty;
  files: string[];
}

/** Body of `GET /v0/city/{cityName}/rigs/{name}/overlaps`. */
export interface RigOverlapsResponse {
  rig: string;
  /**
   * The pairs of the rig's open worktree sessions and of its reviews waiting to land (`pending`, `approved`,
   * `conflicted`) touching the same files (a page of them).
   */
  items: RigOverlap[];
  /**
   * How many pairs there are, on every page.
   * @isInt
   */
  total?: number;
  /** The next page's cursor, when there is one. */
  next_cursor?: string;
  /**
   * How many of the rig's open sessions had a worktree whose changes were read.
   * @isInt
   */
  sessions_checked: number;
  /**
   * How many of the rig's reviews waiting to land had their branch's changes read.
   * @isInt
   */
  reviews_checked: number;
  /** Sessions whose changes could not be read. */
  problems?: RigOverlapProblem[];
  /** When the changes were read (RFC 3339). */
  computed_at: string;
}

/** Payload of `rig.overlap`: a pair (sessions, or a session or review and a review) that has just begun touching the same files. */
export interface RigOverlapPayload {
  rig: string;
  /**
   * The two sides, in the order of `sessions`.
   * @minItems 2
   * @maxItems 2
   */
  parties: OverlapParty[];
  /**
   * @minItems 2
   * @maxItems 2
   */
  sessions: string[];
  /**
   * @minItems 2
   * @maxItems 2
   */
  session_ids: string[];
  files: string[];
}
