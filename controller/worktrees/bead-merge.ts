import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import { KeyedSerial } from '../../shared/serial.js';
import { ASSIGNED_SESSION, MERGE_STRATEGY } from '../beads/work-schema.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { KnownNewEvent } from '../../shared/events/event-types.js';
import { LOCAL_HOST } from '../hosts/host.js';
import { DEFAULT_REMOTE, previousPush, pushBranch, pushMetadata, type PushOutcome } from './bead-push.js';
import { git, GIT_CHECKOUT_TIMEOUT_MS } from './git.js';
import type { MergeJournal } from './merge-journal.js';
import {
  distance,
  isComplete,
  reasonOf,
  type AgentWorktree,
  type SessionWorktrees,
  type WorktreeRecord,
} from './session-worktrees.js';

/** Bead metadata a bead finished in a worktree carries. */
export const BRANCH = 'ctl.branch';
export const COMMIT = 'ctl.commit';
export const BASE = 'ctl.base';
/** With `merge = "direct"`: the base's commit once the branch is in it. */
export const MERGED = 'ctl.merged';
/** Why the branch could not go into its base and the bead was reopened (conflicts, uncommitted changes). */
export const MERGE_CONFLICT = 'ctl.merge_conflict';
/** Why the merge failed for a reason the agent cannot mend (the base's checkout, git): the bead stays closed. */
export const MERGE_ERROR = 'ctl.merge_error';

/** With `merge = "review"`: the bead's branch is held for a person's review (controller/reviews/). */
export const REVIEW = 'ctl.review';

/** What holds a branch for review once its bead's close is stored (controller/reviews/review-service.ts). */
export interface ReviewDesk {
  requested(bead: Bead, record: MergeRecord, commit: string): Promise<void>;
}

/** A session's record as a merge reads it: its worktree's fields, and the agent it was created from. */
export interface MergeRecord extends WorktreeRecord {
  template: string;
}

export interface MergeHost {
  beads: BeadsService;
  worktrees: SessionWorktrees;
  /** A session's record, open or closed. */
  sessionRecord(id: string): MergeRecord | undefined;
  /** The agent called `name` now (its worktree settings). */
  agent(name: string): { worktree?: AgentWorktree } | undefined;
  /** Tells an open session something (waking it when it sleeps); false when it is not open. */
  tell(sessionId: string, text: string): boolean;
  /** Where a close with a merge is recorded as begun until it is stored (none: a unit test). */
  journal?: MergeJournal;
  /** Records an event (`bead.pushed`, `bead.push_failed`); none: a unit test. */
  record?: (event: KnownNewEvent) => Promise<unknown>;
  /** A test's crash point right before the base is fast-forwarded (`mergeCrashHook`). */
  crashBeforeFastForward?: () => void;
  logger?: Logger;
}

export type MergeOutcome =
  | { kind: 'merged'; commit: string }
  /** `files`: those git found in conflict, when it named them. */
  | { kind: 'refused'; reason: string; files?: string[] }
  | { kind: 'failed'; reason: string };

/**
 * What closing a bead finished in a session's worktree does, before the close is stored, so that the close itself
 * carries it (a read or a `bead.closed` event that sees the bead closed sees its branch): the bead records the
 * branch and the commit it was finished at; with `merge = "push"` the branch goes to its rig's remote
 * (bead-push.ts: a failure is recorded on the bead and told its session, the bead closed all the same); with
 * `merge = "direct"` on the session's agent, the branch goes into
 * its base — fast-forward only, after rebasing it in its worktree when the base moved on and git finds no
 * conflict. Nothing is forced: a conflict, or uncommitted changes, close it with the reason
 * (`ctl.merge_conflict`) and then reopen it for its session; a failure the agent cannot mend (the base's own
 * checkout has changes in the way, git failed) leaves it closed with the reason recorded. Merges into one
 * repository go one at a time. A close with a merge is recorded as begun (`MergeJournal`) before git runs and
 * done once stored: a controller killed in between has the next one finish it (`resume`), and tell the session.
 */
export class WorktreeMerges {
  private readonly merges = new KeyedSerial();
  /** Beads whose close found their branch could not go in: reopened for their session once the close is stored. */
  private readonly reopens = new Map<string, { record: MergeRecord; reason: string }>();
  /** Beads whose close holds their branch for review: handed to the review desk once the close is stored. */
  private readonly toReview = new Map<string, { record: MergeRecord; commit: string }>();
  /** Beads whose close pushed their branch (or failed to): recorded, and a failure told, once the close is stored. */
  private readonly pushes = new Map<string, { record: MergeRecord; outcome: PushOutcome }>();
  private desk?: ReviewDesk;

  constructor(private readonly host: MergeHost) {
    host.beads.onClosing((bead) => this.closing(bead));
    host.beads.onClosed((bead) => this.closed(bead));
  }

  /** Where branches of beads closed with `merge = "review"` go (set once, by the review service). */
  reviewWith(desk: ReviewDesk): void {
    this.desk = desk;
  }

  /**
   * `base` of `repo` fast-forwarded to `commit` (an approved review's, rebased by the merge queue), after every merge
   * into `repo` asked for before it — but only while `base` is still at `onto`, the commit `commit` was rebased
   * onto: else `moved`, and the caller rebases again. Never forced.
   */
  async fastForwardReviewed(
    repo: string,
    base: string,
    onto: string,
    commit: string,
    label: string,
  ): Promise<MergeOutcome | { kind: 'moved'; to: string }> {
    return this.serially(repo, async () => {
      try {
        const now = await commitOf(repo, `refs/heads/${base}`);
        if (now !== onto) return { kind: 'moved', to: now };
        return await fastForward(repo, base, commit, label);
      } catch (err) {
        return { kind: 'failed', reason: reasonOf(err) };
      }
    });
  }

  /**
   * A session's branch pushed for `bead` to its rig's remote (`merge = "push"`, or a review approved with
   * `[review] land = "push"`), after every merge or push in its repository asked for before it. The bead's
   * metadata is the caller's to write (`pushMetadata`); the outcome is recorded as an event here.
   */
  async pushFor(record: MergeRecord, bead: Bead, commit?: string): Promise<PushOutcome> {
    const outcome = await this.push(record, bead, commit);
    await this.recordPush(bead.id, record, outcome);
    return outcome;
  }

  /** `commit`: what to push instead of the branch's head (a review's commit, rebased and checked). */
  private push(record: MergeRecord, bead: Bead, commit?: string): Promise<PushOutcome> {
    const remote = this.host.agent(record.template)?.worktree?.remote ?? DEFAULT_REMOTE;
    return this.serially(record.worktree_repo!, () =>
      pushBranch({
        repo: record.worktree_repo!,
        branch: record.branch!,
        ...(record.base ? { base: record.base } : {}),
        remote,
        bead: bead.id,
        ...(previousPush(bead.metadata, remote, record.branch!) !== undefined
          ? { previous: previousPush(bead.metadata, remote, record.branch!)! }
          : {}),
        ...(commit !== undefined ? { head: commit } : {}),
        // A session on a host: the rig's branch is the host's as last fetched, so only what is pushed is stamped;
        // a review's rebased commit is not the branch's, which stays as the session left it.
        moveBranch: commit === undefined && (record.host ?? LOCAL_HOST) === LOCAL_HOST,
      }),
    );
  }

  private async recordPush(bead: string, record: MergeRecord, outcome: PushOutcome): Promise<void> {
    const payload = {
      bead,
      session: record.id,
      branch: record.branch!,
      remote: outcome.remote,
      ref: outcome.ref,
      ...(outcome.kind === 'pushed'
        ? { commit: outcome.commit, forced: outcome.forced, stamped: outcome.stamped }
        : { reason: outcome.reason }),
    };
    try {
      await this.host.record?.(
        outcome.kind === 'pushed'
          ? {
              type: 'bead.pushed',
              actor: 'ctl',
              subject: bead,
              message: `the branch of ${bead} was pushed to ${outcome.remote} ${outcome.ref}`,
              payload,
            }
          : {
              type: 'bead.push_failed',
              actor: 'ctl',
              subject: bead,
              message: `the branch of ${bead} could not be pushed to ${outcome.remote}: ${outcome.reason}`,
              payload,
            },
      );
    } catch (err) {
      this.host.logger?.error({ err, bead }, 'could not record a push');
    }
  }

  /** Before the bead closes: what its close records (branch, commit, the merge's outcome). */
  private async closing(bead: Bead): Promise<Record<string, string> | undefined> {
    const sessionId = bead.metadata?.[ASSIGNED_SESSION];
    const record = sessionId ? this.host.sessionRecord(sessionId) : undefined;
    if (!record?.worktree || !record.branch || !record.worktree_repo) return undefined;
    try {
      return await this.finish(bead, record);
    } catch (err) {
      // The bead closes whatever happens here: what went wrong is on it, and in the log.
      this.host.logger?.warn({ err, bead: bead.id, session: record.id }, 'could not record a worktree bead');
      return { [MERGE_ERROR]: reasonOf(err) };
    }
  }

  private async finish(bead: Bead, record: MergeRecord): Promise<Record<string, string> | undefined> {
    const head = await this.host.worktrees.branchHead(record);
    if (!head) return undefined;
    const metadata: Record<string, string> = {
      [BRANCH]: record.branch!,
      [COMMIT]: head.commit,
      ...(record.base ? { [BASE]: record.base } : {}),
    };
    // A bead slung with a merge strategy says it for itself; otherwise its session's agent does.
    const strategy = bead.metadata?.[MERGE_STRATEGY];
    const chosen = strategy ?? this.host.agent(record.template)?.worktree?.merge;
    // A branch with nothing its base lacks has nothing to review.
    if (
      chosen === 'review' &&
      record.base &&
      this.desk &&
      (await distance(record.worktree_repo!, record.base, record.branch!)).ahead > 0
    ) {
      this.toReview.set(bead.id, { record, commit: head.commit });
      return { ...metadata, [REVIEW]: 'pending' };
    }
    if (chosen === 'push') {
      const outcome = await this.push(record, bead);
      this.pushes.set(bead.id, { record, outcome });
      return {
        ...metadata,
        ...(outcome.kind === 'pushed' ? { [COMMIT]: outcome.commit } : {}),
        ...pushMetadata(outcome),
      };
    }
    if (chosen !== 'direct' || !record.base) return metadata;
    this.host.journal?.begin({ bead: bead.id, session: record.id });
    const outcome = await this.serially(record.worktree_repo!, () =>
      merge(record, head.dirty, this.host.worktrees, this.host.crashBeforeFastForward),
    );
    if (outcome.kind === 'merged') {
      return {
        ...metadata,
        [COMMIT]: outcome.commit,
        [MERGED]: outcome.commit,
        [MERGE_CONFLICT]: '',
        [MERGE_ERROR]: '',
      };
    }
    if (outcome.kind === 'failed') return { ...metadata, [MERGE_ERROR]: outcome.reason };
    // Closed with the reason, then back to its session, which holds the branch and can mend it.
    this.reopens.set(bead.id, { record, reason: outcome.reason });
    return { ...metadata, [MERGE_CONFLICT]: outcome.reason };
  }

  /** Once closed: a push is recorded (a failed one told its session); a bead whose branch could not go in goes back to its session. */
  private async closed(bead: Bead): Promise<void> {
    const push = this.pushes.get(bead.id);
    if (push) {
      this.pushes.delete(bead.id);
      await this.recordPush(bead.id, push.record, push.outcome);
      if (push.outcome.kind === 'failed') {
        // Closed all the same, its branch and worktree kept: what failed is rarely the agent's to mend.
        const told = this.host.tell(
          push.record.id,
          `Bead ${bead.id} was closed, but its branch ${push.record.branch} could not be pushed to ` +
            `${push.outcome.remote}: ${push.outcome.reason}. Your branch and worktree are kept; nothing was lost.`,
        );
        if (!told) this.host.logger?.info({ bead: bead.id }, 'a push failed for a bead whose session is closed');
      }
      return;
    }
    const review = this.toReview.get(bead.id);
    if (review) {
      this.toReview.delete(bead.id);
      try {
        await this.desk!.requested(bead, review.record, review.commit);
      } catch (err) {
        this.host.logger?.error({ err, bead: bead.id }, 'could not hold a closed bead for review');
      }
      return;
    }
    const reopen = this.reopens.get(bead.id);
    if (!reopen) {
      if (this.host.journal?.has(bead.id)) this.host.journal.done(bead.id);
      return;
    }
    this.reopens.delete(bead.id);
    const { record, reason } = reopen;
    try {
      await this.host.beads.update(bead.id, { status: 'in_progress' });
    } catch (err) {
      this.host.logger?.error({ err, bead: bead.id }, 'could not reopen a bead whose branch could not be merged');
      return;
    }
    this.host.journal?.done(bead.id);
    const told = this.host.tell(
      record.id,
      `Bead ${bead.id} was reopened: its branch ${record.branch} could not go into ${record.base}: ${reason}. ` +
        `Mend it in your worktree and commit (when it is done: ctl bead close ${bead.id})`,
    );
    if (!told) this.host.logger?.info({ bead: bead.id, session: record.id }, 'reopened a bead whose session is closed');
  }

  /**
   * At start: every close with a merge a dead controller began and did not store is finished — closed again, its
   * merge run again (a rebase git was killed in is abandoned first; a base already moved is simply found merged),
   * its outcome recorded as for any close — and its session told; a bead closed with a conflict whose reopen was
   * lost is reopened and its session told. Never throws.
   */
  async resume(): Promise<void> {
    const journal = this.host.journal;
    if (!journal) return;
    for (const entry of journal.pending()) {
      try {
        await this.finishPending(entry.bead, entry.session);
      } catch (err) {
        this.host.logger?.error({ err, bead: entry.bead }, 'could not finish a merge a dead controller began');
      }
    }
  }

  private async finishPending(beadId: string, sessionId: string): Promise<void> {
    const journal = this.host.journal!;
    const bead = this.host.beads.find(beadId);
    const record = this.host.sessionRecord(sessionId);
    if (!bead || !record?.worktree || !record.branch || !record.worktree_repo) {
      journal.done(beadId);
      return;
    }
    if (bead.status === 'closed') {
      if (bead.metadata?.[MERGE_CONFLICT]) {
        // Stored closed with a conflict, the reopen lost with the controller.
        this.reopens.set(bead.id, { record, reason: bead.metadata[MERGE_CONFLICT] });
        await this.closed(bead);
      } else journal.done(beadId);
      return;
    }
    if (isComplete(record.worktree)) await git(record.worktree, ['rebase', '--abort'], { allow: [1, 128] });
    this.host.logger?.warn({ bead: beadId, session: sessionId }, 'finishing a merge a dead controller began');
    const closed = await this.host.beads.close(beadId, { actor: 'ctl' });
    const meta = closed.metadata ?? {};
    // A conflict was told by the reopen; the rest are told here.
    if (meta[MERGE_CONFLICT]) return;
    const outcome = meta[MERGED]
      ? `its branch ${record.branch} went into ${record.base} at ${meta[MERGED]}`
      : `its branch ${record.branch} could not go into ${record.base}: ${meta[MERGE_ERROR] ?? 'no merge was recorded'}`;
    if (!this.host.tell(record.id, `Bead ${beadId} was closed after the controller restarted: ${outcome}`)) {
      this.host.logger?.info({ bead: beadId, session: record.id }, 'finished a merge whose session is closed');
    }
  }

  /** Runs `what` after every merge into `repo` asked for before it. */
  private serially<T>(repo: string, what: () => Promise<T>): Promise<T> {
    return this.merges.run(repo, what);
  }
}

/** The branch into its base: fast-forward, after a rebase in its worktree when the base has moved on. */
async function merge(
  record: MergeRecord,
  dirty: boolean,
  worktrees: SessionWorktrees,
  crashPoint?: () => void,
): Promise<MergeOutcome> {
  const repo = record.worktree_repo!;
  const branch = record.branch!;
  const base = record.base!;
  if (dirty) return { kind: 'refused', reason: 'its worktree has uncommitted changes' };
  try {
    const { ahead, behind } = await distance(repo, base, branch);
    if (ahead === 0) return { kind: 'merged', commit: await commitOf(repo, base) };
    if (behind > 0) {
      const check = await git(repo, ['merge-tree', '--write-tree', '--name-only', '--no-messages', base, branch], {
        allow: [1],
      });
      if (check.exitCode === 1) {
        const files = check.stdout.trim().split('\n').slice(1).filter(Boolean);
        return { kind: 'refused', reason: `it conflicts with ${base} in ${files.join(', ') || 'some files'}`, files };
      }
      // A session on a host: rebased in its worktree there, and fetched back.
      const onHost = await worktrees.rebaseOnHost(record, base);
      if (onHost === false) return { kind: 'refused', reason: `it could not be rebased onto ${base}` };
      if (onHost === undefined) {
        if (!isComplete(record.worktree!)) return { kind: 'refused', reason: `it is ${behind} commits behind ${base}` };
        const rebased = await git(record.worktree!, [...(await identity(repo)), 'rebase', '--quiet', base], {
          allow: [1, 128],
          timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
        });
        if (rebased.exitCode !== 0) {
          await git(record.worktree!, ['rebase', '--abort'], { allow: [1, 128] });
          return { kind: 'refused', reason: `it could not be rebased onto ${base}` };
        }
      }
      const after = await distance(repo, base, branch);
      if (after.behind > 0) return { kind: 'refused', reason: `it is ${after.behind} commits behind ${base}` };
    }
    const commit = await commitOf(repo, `refs/heads/${branch}`);
    crashPoint?.();
    return await fastForward(repo, base, commit, branch);
  } catch (err) {
    return { kind: 'failed', reason: reasonOf(err) };
  }
}

/**
 * `base` moved to `commit`, a descendant of it: in the checkout that has it (the rig's own, usually), whose files
 * move with it as a person's pull would, else by its ref alone.
 */
async function fastForward(repo: string, base: string, commit: string, label: string): Promise<MergeOutcome> {
  const holder = await checkedOutAt(repo, base);
  if (holder) {
    const moved = await git(holder, ['merge', '--ff-only', '--quiet', commit], {
      allow: [1, 128],
      timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
    });
    if (moved.exitCode !== 0) {
      const why = (moved.stderr || moved.stdout).split('\n').find((l) => l.trim()) ?? 'git merge failed';
      return {
        kind: 'failed',
        reason: `${base} is checked out at ${holder}, which refused it: ${why.replace(/^(error|fatal): /, '')}`,
      };
    }
  } else {
    const old = await commitOf(repo, `refs/heads/${base}`);
    await git(repo, ['update-ref', '-m', `ctl: merge ${label}`, `refs/heads/${base}`, commit, old]);
  }
  return { kind: 'merged', commit };
}

async function commitOf(repo: string, ref: string): Promise<string> {
  return (await git(repo, ['rev-parse', `${ref}^{commit}`])).stdout.trim();
}

/** The working tree that has `branch` checked out, if one has. */
async function checkedOutAt(repo: string, branch: string): Promise<string | undefined> {
  const list = await git(repo, ['worktree', 'list', '--porcelain']);
  for (const block of list.stdout.split('\n\n')) {
    const path = /^worktree (.+)$/m.exec(block)?.[1];
    if (path && new RegExp(`^branch refs/heads/${escape(branch)}$`, 'm').test(block)) return path;
  }
  return undefined;
}

/** A committer for the rebase when the repository and the machine name none (commits keep their authors). */
export async function identity(repo: string): Promise<string[]> {
  const email = await git(repo, ['config', 'user.email'], { allow: [1] });
  return email.exitCode === 0 ? [] : ['-c', 'user.name=ctl', '-c', 'user.email=ctl@localhost'];
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
