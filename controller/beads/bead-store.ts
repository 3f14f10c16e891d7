import type { Bead, BeadComment } from '../../shared/dto/beads.js';

/** Dependency kinds; the first three hold a bead out of ready while their target is not closed. */
export const DEP_KINDS = ['blocks', 'waits-for', 'conditional-blocks', 'tracks', 'parent-child', 'relates-to'] as const;
export type DepKind = (typeof DEP_KINDS)[number];
export const BLOCKING_KINDS: ReadonlySet<string> = new Set(['blocks', 'waits-for', 'conditional-blocks']);

export const STATUSES = ['open', 'in_progress', 'closed'] as const;

/** Types that are containers or records, never ready work. */
export const NOT_WORK_TYPES: ReadonlySet<string> = new Set([
  'message',
  'convoy',
  'molecule',
  'wisp',
  'step',
  'session',
  'gate',
  'wait',
  'merge-request',
  'agent',
  'role',
  'rig',
]);
/** Labels that mark a bead as bookkeeping, never ready work. */
export const NOT_WORK_LABELS: ReadonlySet<string> = new Set(['order-tracking', 'ctl:order-tracking']);

export interface NewBead {
  /** Its id's prefix, when not the store's (a rig's beads). */
  prefix?: string;
  title: string;
  type?: string;
  description?: string;
  priority?: number;
  assignee?: string;
  labels?: string[];
  metadata?: Record<string, string>;
  parent?: string;
  deferUntil?: string;
  ephemeral?: boolean;
  from?: string;
  /** Dependencies it starts with (a convoy's `tracks` edges), created with it in one write. */
  dependencies?: { dependsOn: string; kind: DepKind }[];
}

/** A change to a bead; absent fields stay as they are. */
export interface BeadChange {
  title?: string;
  status?: string;
  type?: string;
  priority?: number;
  assignee?: string;
  description?: string;
  addLabels?: string[];
  removeLabels?: string[];
  /** Merged in; an empty value removes the key. */
  metadata?: Record<string, string>;
  /** null clears it. */
  parent?: string | null;
  /** null clears it. */
  deferUntil?: string | null;
}

export interface BeadQuery {
  status?: string;
  type?: string;
  /** Beads not of this type (`session`: the list a person reads, without the sessions' own beads). */
  excludeType?: string;
  label?: string;
  /** Beads with every one of these labels too (an order's runs: `order-tracking` and its `order-run:` label). */
  labels?: string[];
  assignee?: string;
  parent?: string;
  /** Include closed beads (otherwise open and in-progress only, unless `status` asks for closed). */
  includeClosed?: boolean;
  /** Include ephemeral beads (mail). */
  includeEphemeral?: boolean;
  /** Work only: beads that could ever be ready (not mail, containers, records or bookkeeping; see isWork). */
  workOnly?: boolean;
  /** Beads without this label (unread mail: without `read`). */
  withoutLabel?: string;
  /** Beads whose metadata has each of these key/value pairs. */
  metadata?: Record<string, string>;
  /** Beads created before this time (an ISO 8601 UTC time, as the store writes `created_at`). */
  createdBefore?: string;
  limit: number;
  /** Keyset position: beads created before this one. */
  before?: string;
}

export interface BeadPage<T = Bead> {
  /** Newest first. */
  items: T[];
  /** Beads matching the query in all. */
  total: number;
  more: boolean;
}

export type BeadErrorCode = 'not-found' | 'invalid' | 'cycle' | 'missing-dependency';

export class BeadError extends Error {
  constructor(
    readonly code: BeadErrorCode,
    message: string,
    /** The request field at fault, for validation errors. */
    readonly field?: string,
  ) {
    super(message);
  }
}

/** What a bead store does; the unit suite runs against this, so another backend can be tested the same way. */
export interface BeadStore {
  /** Which kind of store it is (`sqlite`, `journal`). */
  readonly backend: string;
  readonly size: number;
  get(id: string): Bead | undefined;
  /**
   * Creates a bead; with an idempotency key, the key, the request's hash and the answer (the new bead) are
   * kept with it, in the same write.
   */
  create(bead: NewBead, idempotency?: { key: string; hash: string }): Bead;
  update(id: string, change: BeadChange): Bead;
  delete(id: string): Bead;
  addDependency(id: string, dependsOn: string, kind: DepKind): Bead;
  removeDependency(id: string, dependsOn: string, kind?: DepKind): Bead;
  list(query: BeadQuery): BeadPage;
  /**
   * Open, not deferred, not a container or record, and every blocking dependency closed; oldest first, at most
   * `limit` created after the bead `after` (keyset position), with how many there are in all and whether more
   * follow the page.
   */
  ready(query: { assignee?: string; limit?: number; after?: string }): { items: Bead[]; total: number; more: boolean };
  /** Beads with a dependency on this one. */
  dependents(id: string): Bead[];
  /** Beads whose parent is this one. */
  children(id: string): Bead[];
  /**
   * What a create under an idempotency key (in the last 30 minutes) answered, with that request's body hash;
   * the bead as it was created, whatever became of it since.
   */
  idempotent(key: string): { bead: Bead; hash: string } | undefined;
  /** Adds a comment to a bead (`not-found` when there is no such bead); its id is the store's next. */
  addComment(id: string, comment: { author: string; text: string }): BeadComment;
  /**
   * A bead's comments, the newest page first and each page oldest first: at most `limit` of those with an id
   * below `before`, with how many the bead has in all and whether earlier ones remain.
   */
  comments(
    id: string,
    query: { limit: number; before?: number },
  ): { items: BeadComment[]; total: number; more: boolean };
  /** One comment of a bead, if it has it. */
  comment(id: string, commentId: number): BeadComment | undefined;
  /** Deletes a comment (`not-found` when the bead has none with this id). A bead's comments go when it goes. */
  deleteComment(id: string, commentId: number): BeadComment;
  /** The files the store keeps, with their sizes now. */
  files(): { path: string; bytes: number }[];
  /**
   * Gives back the space dead data holds (deleted beads, old versions): the operations it ran, in order. It holds
   * the store while it runs.
   */
  maintain(): string[];
  close(): void;
}
