import { createHash } from 'node:crypto';
import { canonicalJson } from '../../shared/canonical-json.js';
import type { Bead, BeadComment, BeadGraphResponse } from '../../shared/dto/beads.js';
import type { StatusWorkCounts } from '../../shared/dto/health.js';
import type { KnownNewEvent } from '../../shared/events/event-types.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import { KeyedSerial } from '../../shared/serial.js';
import {
  BeadError,
  type BeadChange,
  type BeadPage,
  type BeadQuery,
  type BeadStore,
  type NewBead,
} from './bead-store.js';
import { ORDER_TRACKING, runLabel } from './order-labels.js';

/** 9999-12-31T23:59:59.999Z: the last time toISOString() writes with four digits of year. */
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

/** The longest comment kept: a note about the work, not a log file (attach those as files). */
export const COMMENT_MAX_CHARS = 10_000;

function commentProblem(message: string): Problem {
  return new Problem('validation-failed', `invalid: text ${message}`, { errors: [{ location: 'body.text', message }] });
}

/** An `Idempotency-Key` with the endpoint it was sent to (`/beads`, `/mail/{id}/reply`) and the body. */
export interface IdempotencyKey {
  key: string;
  endpoint: string;
  body: unknown;
}

/** A request body's identity for idempotency: the hash of its JSON with keys sorted. */
export function bodyHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/** The problem a store error becomes, with the spec's detail prefixes. */
export function problemOf(
  err: unknown,
  notFound: 'bead-not-found' | 'mail-not-found' | 'convoy-not-found' = 'bead-not-found',
): unknown {
  if (!(err instanceof BeadError)) return err;
  if (err.code === 'not-found') return new Problem(notFound, `not_found: ${err.message}`);
  const location = err.field ? `body.${err.field}` : 'body';
  return new Problem('validation-failed', `invalid: ${err.message}`, { errors: [{ location, message: err.message }] });
}

/** The reads of beads the domains make, answered by the store's query and indexes. */
export type BeadReads = Pick<BeadsService, 'find' | 'list' | 'ready' | 'dependents' | 'children'>;

/** What a bead about to close adds to its closing change (metadata), or nothing. */
export type ClosingStep = (bead: Bead) => Promise<Record<string, string> | undefined>;

/**
 * The bead operations of the API: the store's changes, each recorded in the city's event log as
 * `bead.created|updated|closed|deleted` with the bead as payload, and store errors as problems.
 */
export class BeadsService {
  private readonly closedListeners: ((bead: Bead) => Promise<void>)[] = [];
  private readonly closingSteps: ClosingStep[] = [];
  /** Closes of one bead go one at a time: a close's steps run once, on the bead as it is just before it closes. */
  private readonly closes = new KeyedSerial();

  /** Private: every read goes through a query here, so the store's indexes answer it (never a caller's filter). */
  constructor(
    private readonly store: BeadStore,
    private readonly log: EventLog,
  ) {}

  /**
   * Runs `listener` after any change that closes a bead (and after its `bead.closed` event), however it was
   * closed: what convoys build on (`convoy.closed`, closing a convoy once its last member closes).
   */
  onClosed(listener: (bead: Bead) => Promise<void>): void {
    this.closedListeners.push(listener);
  }

  /**
   * Runs `step` before any change that closes a bead is stored: the metadata it answers goes into the same
   * change, so that whoever sees the bead closed — a read, the `bead.closed` event — sees it too (a worktree's
   * branch and commit, its merge). A step reports its own failures in what it answers; it does not throw.
   */
  onClosing(step: ClosingStep): void {
    this.closingSteps.push(step);
  }

  /** The bead, or undefined when there is none. */
  find(id: string): Bead | undefined {
    return this.store.get(id);
  }

  /** Beads matching the query, newest first, a page at a time (`before`: the last bead of the previous page). */
  list(query: BeadQuery): BeadPage {
    return this.store.list(query);
  }

  /** The ready queue, oldest first, a page at a time (`after`: the last bead of the previous page). */
  ready(query: { assignee?: string; limit?: number; after?: string }): BeadPage {
    return this.store.ready(query);
  }

  /** Beads with a dependency on this one (`not-found` from the store when there is no such bead). */
  dependents(id: string): Bead[] {
    return this.store.dependents(id);
  }

  /** Beads whose parent is this one. */
  children(id: string): Bead[] {
    return this.store.children(id);
  }

  /** A bead's comments, the newest page first and each page oldest first (a 404 when there is no such bead). */
  comments(id: string, query: { limit: number; before?: number }): BeadPage<BeadComment> {
    return this.run(() => this.store.comments(id, query));
  }

  /**
   * Order firings' tracking beads, newest first: every order's, or one order's (its scoped name); open and
   * closed, or open only (`open`). `createdBefore`: fired before this time (ms since the epoch).
   */
  orderRuns(
    scopedName: string | undefined,
    page: { limit: number; before?: string; createdBefore?: number; open?: boolean },
  ): BeadPage {
    return this.store.list({
      // One order's run label is the narrower: the store's list starts from it.
      ...(scopedName === undefined
        ? { label: ORDER_TRACKING }
        : { label: runLabel(scopedName), labels: [ORDER_TRACKING] }),
      includeClosed: page.open !== true,
      limit: page.limit,
      ...(page.before === undefined ? {} : { before: page.before }),
      // Past year 9999 an ISO time gains a sign and no longer sorts as text: every bead is before it anyway.
      ...(page.createdBefore === undefined || page.createdBefore > LAST_FOUR_DIGIT_YEAR_MS
        ? {}
        : { createdBefore: new Date(page.createdBefore).toISOString() }),
    });
  }

  /** An order firing's tracking bead, or undefined when this bead is none. */
  orderRun(id: string): Bead | undefined {
    const bead = this.store.get(id);
    return bead?.labels?.includes(ORDER_TRACKING) ? bead : undefined;
  }

  get(id: string, notFound: 'bead-not-found' | 'mail-not-found' | 'convoy-not-found' = 'bead-not-found'): Bead {
    const bead = this.store.get(id);
    if (!bead) {
      const what = notFound === 'bead-not-found' ? 'bead' : notFound === 'mail-not-found' ? 'message' : 'convoy';
      throw new Problem(notFound, `not_found: ${what} not found: ${id}`);
    }
    return bead;
  }

  /**
   * Creates a bead. With an idempotency key, a repeat of the same request answers with the bead the first
   * one created (`replayed`), and a different body under the same key is a 422.
   */
  async create(input: NewBead, key?: IdempotencyKey): Promise<{ bead: Bead; replayed: boolean }> {
    let idempotency: { key: string; hash: string } | undefined;
    if (key) {
      const hash = bodyHash(key.body);
      // A key belongs to one endpoint: the same key on another endpoint is another request.
      const scoped = `POST:${key.endpoint}:${key.key}`;
      const earlier = this.store.idempotent(scoped);
      if (earlier) {
        if (earlier.hash !== hash) {
          throw new Problem(
            'idempotency-mismatch',
            'idempotency_mismatch: this Idempotency-Key was used with a different request body',
          );
        }
        return { bead: earlier.bead, replayed: true };
      }
      idempotency = { key: scoped, hash };
    }
    const bead = this.run(() => this.store.create(input, idempotency));
    await this.record('bead.created', bead);
    return { bead, replayed: false };
  }

  /** Applies a change; records `bead.closed` when it closes the bead, else `bead.updated`. */
  async update(id: string, change: BeadChange, actor = 'api'): Promise<Bead> {
    if (change.status === 'closed' && this.get(id).status !== 'closed' && this.closingSteps.length) {
      return this.closes.run(id, () => this.apply(id, change, actor, true));
    }
    return this.apply(id, change, actor, false);
  }

  /** `steps`: a change that closes the bead takes its closing steps' metadata with it. */
  private async apply(id: string, change: BeadChange, actor: string, steps: boolean): Promise<Bead> {
    let before = this.get(id);
    if (steps && before.status !== 'closed') {
      const added: Record<string, string> = {};
      for (const step of this.closingSteps) Object.assign(added, await step(before));
      if (Object.keys(added).length) change = { ...change, metadata: { ...change.metadata, ...added } };
      // Changed meanwhile (a step takes time): the change applies to the bead as it is now.
      before = this.get(id);
    }
    const bead = this.run(() => this.store.update(id, change));
    const closed = before.status !== 'closed' && bead.status === 'closed';
    await this.record(closed ? 'bead.closed' : 'bead.updated', bead, actor);
    if (closed) for (const listener of this.closedListeners) await listener(bead);
    return bead;
  }

  /**
   * Closes a bead; closing a closed bead changes and records nothing. `reason` is kept as its `close_reason`;
   * an agent's session closing it is its `closed_by`, and its agent the event's `actor`.
   */
  async close(id: string, how: { reason?: string; by?: string; actor?: string } = {}): Promise<Bead> {
    const bead = this.get(id);
    if (bead.status === 'closed') return bead;
    const metadata: Record<string, string> = {};
    if (how.reason) metadata.close_reason = how.reason;
    if (how.by) metadata.closed_by = how.by;
    const change: BeadChange = { status: 'closed', ...(Object.keys(metadata).length ? { metadata } : {}) };
    return this.update(id, change, how.actor);
  }

  async reopen(id: string): Promise<Bead> {
    const bead = this.get(id);
    if (bead.status !== 'closed') {
      throw new Problem('conflict-wrong-state', `conflict: bead ${id} is ${bead.status}, not closed`);
    }
    return this.update(id, { status: 'open' });
  }

  async delete(id: string): Promise<Bead> {
    this.get(id);
    const edgesOf = (b: Bead) => JSON.stringify([b.dependencies ?? [], b.parent ?? null]);
    const related = new Map([...this.store.dependents(id), ...this.store.children(id)].map((b) => [b.id, edgesOf(b)]));
    const bead = this.run(() => this.store.delete(id));
    await this.record('bead.deleted', bead);
    // Beads that lost an edge or their parent with it changed too (a convoy's `tracks` edge stays).
    for (const [other, edges] of related) {
      const changed = this.store.get(other);
      if (changed && edgesOf(changed) !== edges) await this.record('bead.updated', changed);
    }
    return bead;
  }

  async addDependency(id: string, dependsOn: string, kind: Parameters<BeadStore['addDependency']>[2]): Promise<Bead> {
    this.get(id);
    const bead = this.run(() => this.store.addDependency(id, dependsOn, kind));
    await this.record('bead.updated', bead);
    return bead;
  }

  async removeDependency(
    id: string,
    dependsOn: string,
    kind?: Parameters<BeadStore['removeDependency']>[2],
  ): Promise<Bead> {
    this.get(id);
    const bead = this.run(() => this.store.removeDependency(id, dependsOn, kind));
    await this.record('bead.updated', bead);
    return bead;
  }

  /**
   * Adds a comment by `author` (trimmed of surrounding blank lines; blank is a 422) and records `bead.commented`
   * with the author as its actor.
   */
  async comment(id: string, text: string, author: string): Promise<BeadComment> {
    this.get(id);
    const body = text.replace(/^\s*\n|\s+$/g, '');
    if (body.trim() === '') throw commentProblem('must not be blank');
    if (body.length > COMMENT_MAX_CHARS) throw commentProblem(`must be at most ${COMMENT_MAX_CHARS} characters`);
    const comment = this.run(() => this.store.addComment(id, { author, text: body }));
    await this.log.append({ type: 'bead.commented', actor: author, subject: id, payload: { comment } });
    return comment;
  }

  /** Deletes a comment; only its author may (403 otherwise). Records `bead.comment_deleted`. */
  async deleteComment(id: string, commentId: number, by: string): Promise<BeadComment> {
    this.get(id);
    const comment = this.store.comment(id, commentId);
    if (!comment) throw new Problem('bead-not-found', `not_found: bead ${id} has no comment ${commentId}`);
    if (comment.author !== by) {
      throw new Problem(
        'forbidden',
        `forbidden: only ${comment.author}, who wrote comment ${commentId}, may delete it`,
      );
    }
    this.run(() => this.store.deleteComment(id, commentId));
    await this.log.append({ type: 'bead.comment_deleted', actor: by, subject: id, payload: { comment } });
    return comment;
  }

  /**
   * A root bead and what hangs from it: beads whose metadata `ctl.root_bead_id` names it, a convoy root's
   * tracked beads, and the parent-child closure of those; with the dependency edges among them.
   */
  graph(rootId: string): BeadGraphResponse {
    const root = this.get(rootId);
    const members = new Map<string, Bead>([[root.id, root]]);
    for (const bead of this.store.list({
      includeClosed: true,
      includeEphemeral: true,
      limit: Number.MAX_SAFE_INTEGER,
      metadata: { 'ctl.root_bead_id': rootId },
    }).items) {
      members.set(bead.id, bead);
    }
    const isConvoy = root.issue_type === 'convoy';
    if (isConvoy) {
      for (const dep of root.dependencies ?? []) {
        const tracked = dep.type === 'tracks' ? this.store.get(dep.depends_on_id) : undefined;
        if (tracked) members.set(tracked.id, tracked);
      }
    }
    const stack = [...members.keys()];
    while (stack.length) {
      for (const child of this.store.children(stack.pop()!)) {
        if (members.has(child.id)) continue;
        members.set(child.id, child);
        stack.push(child.id);
      }
    }
    const beads = [...members.values()];
    const deps = beads.flatMap((b) =>
      (b.dependencies ?? [])
        .filter((d) => members.has(d.depends_on_id))
        .map((d) => ({ from: d.issue_id, to: d.depends_on_id, kind: d.type })),
    );
    for (const bead of beads) {
      if (bead.parent && members.has(bead.parent)) deps.push({ from: bead.id, to: bead.parent, kind: 'parent-child' });
    }
    return {
      root,
      beads,
      deps,
      membership: isConvoy ? 'direct-root-id+parent-closure+convoy-members' : 'direct-root-id+parent-closure',
    };
  }

  /** How much work the city has: work beads open, in progress, and ready now. */
  workCounts(): StatusWorkCounts {
    const count = (status: string) => this.store.list({ status, workOnly: true, limit: 0 }).total;
    return { open: count('open'), in_progress: count('in_progress'), ready: this.store.ready({ limit: 0 }).total };
  }

  /** Records a `bead.*` event: the bead as payload. */
  async record(
    type: 'bead.created' | 'bead.updated' | 'bead.closed' | 'bead.deleted',
    bead: Bead,
    actor = 'api',
  ): Promise<void> {
    await this.log.append({ type, actor, subject: bead.id, payload: { bead } });
  }

  /** Records any other event about beads (`mail.*`, `convoy.*`). */
  async recordEvent(event: KnownNewEvent): Promise<void> {
    await this.log.append(event);
  }

  /** Runs a store call, its errors as problems. */
  run<T>(call: () => T): T {
    try {
      return call();
    } catch (err) {
      throw problemOf(err);
    }
  }
}
