/** A dependency edge: `issue_id` depends on `depends_on_id`. */
export interface Dep {
  issue_id: string;
  depends_on_id: string;
  /** `blocks` (default), `waits-for`, `conditional-blocks` (these three hold a bead out of ready), `tracks`, `parent-child`, `relates-to`. */
  type: string;
}

/** A work unit. */
export interface Bead {
  /** `<prefix>-<n>`: the city's prefix and a number never reused. */
  id: string;
  title: string;
  /** `open`, `in_progress` or `closed`. */
  status: string;
  /** The bead's type (`task`, `bug`, `feature`, `chore`, `epic`, `message`, `convoy`, …). */
  issue_type: string;
  /** @format date-time */
  created_at: string;
  /** @format date-time */
  updated_at?: string;
  assignee?: string;
  description?: string;
  /**
   * 0 (highest) to 4.
   * @isInt
   */
  priority?: number;
  labels?: string[];
  metadata?: { [key: string]: string };
  /** Parent bead id. */
  parent?: string;
  /** Ids of the beads this one waits for (its blocking dependencies). */
  needs?: string[];
  dependencies?: Dep[];
  /** An open blocking dependency holds it back. */
  is_blocked?: boolean;
  /**
   * Hidden from ready until this time.
   * @format date-time
   */
  defer_until?: string;
  /** Kept out of ready and normal lists (mail). */
  ephemeral?: boolean;
  /** Sender, for messages. */
  from?: string;
  ref?: string;
}

/** Body of `POST /v0/city/{cityName}/beads`. */
export interface BeadCreateInputBody {
  /** @minLength 1 */
  title: string;
  /** Type (default `task`). */
  type?: string;
  description?: string;
  /**
   * @isInt
   * @minimum 0
   * @maximum 4
   */
  priority?: number;
  assignee?: string;
  /** null: none. */
  labels?: string[] | null;
  metadata?: { [key: string]: string };
  /** Parent bead id (it must exist). */
  parent?: string;
  /** Rig name, recorded as metadata `rig`. */
  rig?: string;
  /**
   * Hidden from ready until this time.
   * @format date-time
   */
  defer_until?: string;
}

/** Body of `PATCH /v0/city/{cityName}/bead/{id}` (and `POST …/update`). Absent fields are left as they are. */
export interface BeadUpdateBody {
  /** @minLength 1 */
  title?: string;
  /** `open`, `in_progress` or `closed` (closing records `bead.closed`). */
  status?: string;
  type?: string;
  /**
   * @isInt
   * @minimum 0
   * @maximum 4
   */
  priority?: number;
  assignee?: string;
  description?: string;
  /** Labels to add (labels are appended, never replaced); null adds none. */
  labels?: string[] | null;
  /** Labels to remove; null removes none. */
  remove_labels?: string[] | null;
  /** Keys to set (merged into the existing metadata; an empty value removes the key). */
  metadata?: { [key: string]: string };
  /** Parent bead id; null or "" clears it. */
  parent?: string | null;
  /**
   * @format date-time
   */
  defer_until?: string | null;
}

/** Body of `POST /v0/city/{cityName}/bead/{id}/assign`. */
export interface BeadAssignInputBody {
  /** Assignee; empty clears it. */
  assignee?: string;
}

/** Body of `POST /v0/city/{cityName}/bead/{id}/deps`. */
export interface BeadDepInputBody {
  /**
   * The bead this one depends on.
   * @minLength 1
   */
  depends_on: string;
  /** Kind of dependency (default `blocks`). */
  type?: 'blocks' | 'waits-for' | 'conditional-blocks' | 'tracks' | 'parent-child' | 'relates-to';
}

/** Body of `GET /v0/city/{cityName}/bead/{id}/deps`. */
export interface BeadDepsResponse {
  /** The bead's own dependency edges. */
  dependencies: Dep[];
  /** Beads this one depends on. */
  depends_on: Bead[];
  /** Beads that depend on this one. */
  dependents: Bead[];
  /** Beads whose parent is this one. */
  children: Bead[];
}

/** A page of beads. */
export interface ListBodyBead {
  items: Bead[];
  /**
   * Number of beads matching the query.
   * @isInt
   */
  total: number;
  /** Present when there are more; pass it back as `cursor`. */
  next_cursor?: string;
}

export interface WorkflowDepResponse {
  from: string;
  to: string;
  kind?: string;
}

/** Body of `GET /v0/city/{cityName}/beads/graph/{rootID}`. */
export interface BeadGraphResponse {
  root: Bead;
  beads: Bead[];
  deps: WorkflowDepResponse[];
  /** Which beads are in `beads`: the root, those with metadata `ctl.root_bead_id` = root, a convoy root's members, and the parent-child closure of all of them. */
  membership: 'direct-root-id+parent-closure' | 'direct-root-id+parent-closure+convoy-members';
}

/** Payload of `bead.created`, `bead.updated`, `bead.closed` and `bead.deleted`. */
export interface BeadEventPayload {
  bead: Bead;
}

/** Body of `POST /v0/city/{cityName}/bead/{id}/close` (optional). */
export interface BeadCloseInputBody {
  /** Why it is closed (kept in its metadata as `close_reason`). */
  reason?: string;
  /**
   * The session closing it, as an agent's `ctl bead close` sends it (`CTL_SESSION_ID`): the event's actor is its
   * agent and `closed_by` names the session. A session that is not open is a 404 and nothing changes.
   */
  session?: string;
}

/** A comment on a bead: what a person or an agent says about the work, kept with it. */
export interface BeadComment {
  /**
   * Unique in the city's store, never reused; later comments have larger ids.
   * @isInt
   */
  id: number;
  /** The bead it is on. */
  issue_id: string;
  /** Who wrote it: the requester (a local user, `token:NAME`), or the agent of the session that wrote it. */
  author: string;
  text: string;
  /** @format date-time */
  created_at: string;
}

/** Body of `POST /v0/city/{cityName}/bead/{id}/comments`. */
export interface BeadCommentInputBody {
  /**
   * The comment: not blank, at most 10,000 characters.
   * @minLength 1
   * @maxLength 10000
   */
  text: string;
  /**
   * The session writing it, as an agent's `ctl bead comment` sends it (`CTL_SESSION_ID`): the author is its agent.
   * A session that is not open is a 404 and nothing is written.
   */
  session?: string;
}

/** A page of a bead's comments: the newest page first, each page oldest first. */
export interface ListBodyBeadComment {
  items: BeadComment[];
  /**
   * Comments on the bead in all.
   * @isInt
   */
  total: number;
  /** Present when earlier comments remain; pass it back as `cursor`. */
  next_cursor?: string;
}

/** Payload of `bead.commented` and `bead.comment_deleted`. */
export interface BeadCommentEventPayload {
  comment: BeadComment;
}
