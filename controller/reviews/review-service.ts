import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import { join } from 'node:path';
import type { PartyOverlap } from '../../shared/dto/overlaps.js';
import type {
  ReviewCheck,
  ReviewComment,
  ReviewCommentInputBody,
  ReviewDetail,
  ReviewEventPayload,
  ReviewState,
  ReviewSummary,
} from '../../shared/dto/reviews.js';
import type { KnownNewEvent } from '../../shared/events/event-types.js';
import { Problem } from '../../shared/http/problem.js';
import { ASSIGNED_SESSION } from '../beads/work-schema.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { ReviewConfig } from '../../shared/config/review-config.js';
import type { CommandRunner } from '../commands.js';
import { MERGED, REVIEW, type MergeRecord, type WorktreeMerges } from '../worktrees/bead-merge.js';
import { git } from '../worktrees/git.js';
import type { SessionWorktrees } from '../worktrees/session-worktrees.js';
import { MergeQueue, type QueueOutcome } from './merge-queue.js';
import { nextSeq } from './queue-order.js';
import { checkFailedMessage, checkOutcome, keptOutput } from './review-check.js';
import { pushMetadata, type PushOutcome } from '../worktrees/bead-push.js';
import { newSideLines, splitDiff } from './review-diff.js';
import { branchProblem } from './review-landing.js';
import { releaseAfterReview } from './review-release.js';
import type { ReviewRecord, ReviewStore } from './review-store.js';

export interface ReviewHost {
  beads: BeadsService;
  merges: WorktreeMerges;
  worktrees: SessionWorktrees;
  store: ReviewStore;
  /** The city's shell commands: the merge queue's check runs through them. */
  commands: CommandRunner;
  /** `[review]` of the city's configuration as it is now. */
  reviewConfig(): ReviewConfig | undefined;
  /** What the check's environment starts from. */
  env: NodeJS.ProcessEnv;
  /** A session's record, open or closed. */
  sessionRecord(id: string): MergeRecord | undefined;
  /** Whether the session is open (its worktree in use). */
  sessionOpen(id: string): boolean;
  /** Tells an open session something (waking it); false when it is not open. */
  tell(sessionId: string, text: string): boolean;
  record(event: KnownNewEvent): Promise<unknown>;
  /** What a review waiting to land overlaps with in its rig, read now; undefined when it is no side of any. */
  overlapsOf?(review: ReviewRecord): Promise<PartyOverlap[] | undefined>;
  /** What an approval does with the branch (`[review] land`): merge it into its base (the default), or push it. */
  land?(): 'merge' | 'push';
  logger?: Logger;
}

/** A comment's text past this is a 422: a review comment is a remark, not a document. */
const COMMENT_LIMIT = 10_000;

/**
 * Reviews of finished work (`merge = "review"`): a bead closed in a worktree holds its branch for a person instead
 * of merging it. A review is keyed by its bead id and records the branch, its base, the commits and the diff stat
 * of the branch as finished; people comment (on a line of the diff or on the whole), approve (the branch goes in as
 * `merge = "direct"` would: a conflict is `conflicted`, never forced), request changes (the bead reopens for its
 * session, or for its agent when that session is gone, with every comment and its file:line) or abandon it. A bead
 * closed again after changes comes back as the same review, one round later, its comments kept.
 */
export class ReviewService {
  private readonly queue: MergeQueue;

  constructor(private readonly host: ReviewHost) {
    host.merges.reviewWith({ requested: (bead, record, commit) => this.requested(bead, record, commit) });
    this.queue = new MergeQueue({
      store: host.store,
      merges: host.merges,
      commands: host.commands,
      reviewConfig: () => host.reviewConfig(),
      env: host.env,
      treesDir: join(host.store.dir, 'trees'),
      outputDir: host.store.dir,
      fetchBack: async (review) => {
        const record = host.sessionRecord(review.session);
        if (record) await host.worktrees.fetchBack(record);
      },
      checked: (bead, check) => this.checked(bead, check),
      settle: (bead, outcome) => this.settle(bead, outcome),
      land: () => host.land?.() ?? 'merge',
      push: (review, commit) => this.push(review, commit),
      ...(host.logger ? { logger: host.logger } : {}),
    });
  }

  /** At start: the merge queues go on with the reviews approved and not yet merged. */
  resume(): void {
    this.queue.resume();
  }

  stop(): void {
    this.queue.stop();
  }

  list(filter: { agent?: string; rig?: string; state?: ReviewState } = {}): ReviewSummary[] {
    return this.host.store
      .all()
      .filter(
        (r) =>
          (filter.agent === undefined || r.agent === filter.agent) &&
          (filter.rig === undefined || r.rig === filter.rig),
      )
      .filter((r) => filter.state === undefined || r.state === filter.state)
      .map((r) => this.summaryOf(r));
  }

  /** A review with its comments and diff; with `overlaps` (the default), what it overlaps in its rig, read now. */
  async detail(bead: string, { overlaps: withOverlaps = true } = {}): Promise<ReviewDetail> {
    const review = this.get(bead);
    const { files, truncated } = splitDiff(await diffOf(review.repo, review.base_commit, review.commit));
    const detail: ReviewDetail = { ...this.summaryOf(review), comments: review.comments, diff: files, truncated };
    const output = review.check ? keptOutput(this.host.store.dir, bead) : undefined;
    if (output !== undefined) detail.check_output = output;
    if (review.previous_commit !== undefined && review.previous_commit !== review.commit) {
      detail.diff_since_previous = splitDiff(await diffOf(review.repo, review.previous_commit, review.commit)).files;
    }
    if (!withOverlaps) return detail;
    const overlaps = await this.host.overlapsOf?.(review).catch((err: unknown) => {
      // The review is read all the same; what it overlaps is for the page, not the review itself.
      this.host.logger?.warn({ err, bead }, 'could not read what a review overlaps');
      return undefined;
    });
    if (overlaps) detail.overlaps = overlaps;
    return detail;
  }

  async comment(bead: string, input: ReviewCommentInputBody, author: string): Promise<ReviewComment> {
    const review = this.get(bead);
    const text = input.text.trim();
    if (text === '') throw invalid('text', 'text is empty');
    if (text.length > COMMENT_LIMIT) throw invalid('text', `text is over ${COMMENT_LIMIT} characters`);
    if (input.line !== undefined && input.path === undefined) throw invalid('line', 'line goes with path');
    if (review.state === 'merged' || review.state === 'abandoned') {
      throw new Problem('conflict-wrong-state', `conflict: review ${bead} is ${review.state}`);
    }
    if (input.path !== undefined) {
      const file = (await this.detail(bead, { overlaps: false })).diff.find((f) => f.path === input.path);
      if (!file) throw invalid('path', `${input.path} is not in the diff of ${bead}`);
      if (input.line !== undefined && !newSideLines(file.diff).has(input.line)) {
        throw invalid('line', `line ${input.line} of ${input.path} is not in the diff of ${bead}`);
      }
    }
    const comment: ReviewComment = {
      id: review.comments.reduce((n, c) => Math.max(n, c.id), 0) + 1,
      text,
      author,
      at: new Date().toISOString(),
      ...(input.path !== undefined ? { path: input.path } : {}),
      ...(input.line !== undefined ? { line: input.line } : {}),
    };
    // Read again: the merge queue may have moved it on while the diff was read.
    const current = this.get(bead);
    const next = { ...current, comments: [...current.comments, comment], updated_at: comment.at };
    this.host.store.put(next);
    await this.event(next, 'review.commented', author, `${author} commented on the review of ${bead}`, {
      comment: comment.id,
    });
    return comment;
  }

  /**
   * Approves a pending review: it joins its rig's merge queue (`approved`, with its place in it) and the queue lands
   * it in the background — rebased onto what landed before it, checked, fast-forwarded — recording `merged`,
   * `conflicted` or, when the check fails, `changes_requested`. A branch that is gone, or was force-moved so that
   * the reviewed commit is no longer on it, is a 409: a person approves what they saw.
   */
  async approve(bead: string, actor: string): Promise<ReviewSummary> {
    const review = this.get(bead);
    if (review.state !== 'pending') {
      throw new Problem('conflict-wrong-state', `conflict: review ${bead} is ${review.state}, not pending`);
    }
    const record = this.host.sessionRecord(review.session);
    if (record) await this.host.worktrees.fetchBack(record);
    const problem = await branchProblem(review);
    if (problem) throw new Problem('conflict-wrong-state', `conflict: review ${bead} cannot be approved: ${problem}`);
    const current = this.get(bead);
    if (current.state !== 'pending') {
      throw new Problem('conflict-wrong-state', `conflict: review ${bead} is ${current.state}, not pending`);
    }
    const at = new Date().toISOString();
    const approved: ReviewRecord = {
      ...current,
      decided_by: actor,
      decided_at: at,
      state: 'approved',
      updated_at: at,
      queue_seq: nextSeq(this.host.store.all()),
    };
    delete approved.landing_commit;
    this.host.store.put(approved);
    const summary = this.summaryOf(approved);
    await this.event(approved, 'review.approved', actor, `${actor} approved the review of ${bead}`, {
      ...(summary.queue_position !== undefined ? { queue_position: summary.queue_position } : {}),
    });
    this.queue.enqueue(approved);
    return summary;
  }

  /**
   * `[review] land = "push"`: the reviewed commit as rebased and checked pushed to its rig's remote as
   * `merge = "push"` does (the bead's trailer on its commits, the event recorded by the push).
   */
  private async push(review: ReviewRecord, commit: string): Promise<PushOutcome> {
    const record = this.host.sessionRecord(review.session);
    const bead = this.host.beads.find(review.bead);
    if (!record?.worktree || !bead) {
      return {
        kind: 'failed',
        remote: '',
        ref: `refs/heads/${review.branch}`,
        reason: `the session ${review.session} and its worktree are gone`,
      };
    }
    return this.host.merges.pushFor(record, bead, commit);
  }

  /** The merge queue's check ran on a review: kept on it, and `review.checked`. */
  private async checked(bead: string, check: ReviewCheck): Promise<void> {
    const next: ReviewRecord = { ...this.get(bead), check, updated_at: check.at };
    this.host.store.put(next);
    const how = check.passed ? 'passed' : `failed: ${checkOutcome(check, this.host.reviewConfig()?.checkTimeoutMs)}`;
    await this.event(next, 'review.checked', 'ctl', `the check of ${bead} ${how}`, { check });
  }

  /** An approved review left the merge queue: merged, conflicted, or sent back by its check. */
  private async settle(bead: string, outcome: QueueOutcome): Promise<void> {
    const review = this.get(bead);
    const at = new Date().toISOString();
    if (outcome.kind === 'check_failed') {
      const message = checkFailedMessage(
        review,
        outcome.check,
        outcome.output,
        this.host.reviewConfig()?.checkTimeoutMs ?? 0,
      );
      await this.sendBack(review, message, 'ctl', `the check failed on ${bead}: it is sent back to ${review.agent}`);
      return;
    }
    if (outcome.kind === 'pushed') {
      // The spec's states have no other for work that left the machine: `merged`, and `pushed_ref` says where.
      const merged: ReviewRecord = {
        ...review,
        state: 'merged',
        pushed_remote: outcome.remote,
        pushed_ref: outcome.ref,
        pushed_commit: outcome.commit,
        updated_at: at,
      };
      delete merged.conflict;
      delete merged.conflict_files;
      delete merged.landing_commit;
      this.host.store.put(merged);
      await this.host.beads.update(bead, { metadata: { [REVIEW]: 'merged', ...pushMetadata(outcome) } }, 'ctl');
      await this.event(
        merged,
        'review.merged',
        'ctl',
        `the branch of ${bead} was pushed to ${outcome.remote} ${outcome.ref}`,
        { pushed_ref: outcome.ref, pushed_commit: outcome.commit },
      );
      return;
    }
    if (outcome.kind === 'merged') {
      const merged: ReviewRecord = { ...review, state: 'merged', merged: outcome.commit, updated_at: at };
      delete merged.conflict;
      delete merged.conflict_files;
      delete merged.landing_commit;
      this.host.store.put(merged);
      await this.host.beads.update(bead, { metadata: { [REVIEW]: 'merged', [MERGED]: outcome.commit } }, 'ctl');
      await this.event(merged, 'review.merged', 'ctl', `the branch of ${bead} went into ${review.base}`, {
        merged: outcome.commit,
      });
      await releaseAfterReview({
        record: this.host.sessionRecord(review.session),
        open: this.host.sessionOpen(review.session),
        worktrees: this.host.worktrees,
        review,
        landed: outcome.commit,
        ...(this.host.logger ? { logger: this.host.logger } : {}),
      });
      return;
    }
    const conflicted: ReviewRecord = {
      ...review,
      state: 'conflicted',
      conflict: outcome.reason,
      conflict_files: outcome.files,
      updated_at: at,
    };
    delete conflicted.landing_commit;
    this.host.store.put(conflicted);
    await this.host.beads.update(bead, { metadata: { [REVIEW]: 'conflicted' } }, 'ctl');
    await this.event(
      conflicted,
      'review.conflicted',
      'ctl',
      `the branch of ${bead} could not go in: ${outcome.reason}`,
      {
        files: outcome.files,
        reason: outcome.reason,
      },
    );
  }

  /**
   * Sends the work back: the bead reopens for the session that did it when it still lives (its context warm),
   * else for its agent, with `text` and every comment with its file:line.
   */
  async requestChanges(bead: string, text: string, actor: string): Promise<ReviewSummary> {
    const review = this.get(bead);
    if (text.trim() === '') throw invalid('text', 'text is empty');
    if (review.state !== 'pending' && review.state !== 'conflicted') {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: review ${bead} is ${review.state}: changes are asked of a pending or conflicted one`,
      );
    }
    return this.sendBack(
      review,
      changesMessage(review, text.trim(), actor),
      actor,
      `${actor} asked for changes to ${bead}`,
    );
  }

  /**
   * `changes_requested`: the bead reopens for the session that did the work when it still lives (its context warm),
   * told `message`; else it goes back to its agent's queue with `message` on it as a comment.
   */
  private async sendBack(review: ReviewRecord, message: string, actor: string, said: string): Promise<ReviewSummary> {
    const bead = review.bead;
    const at = new Date().toISOString();
    const next: ReviewRecord = {
      ...this.get(bead),
      state: 'changes_requested',
      decided_by: actor,
      decided_at: at,
      updated_at: at,
    };
    delete next.landing_commit;
    this.host.store.put(next);
    await this.host.beads.update(bead, { status: 'in_progress', metadata: { [REVIEW]: 'changes_requested' } }, actor);
    if (!this.host.tell(review.session, message)) {
      // Its session is gone: the bead goes back to its agent's queue, the request on it for whoever takes it.
      await this.host.beads.update(bead, { status: 'open', assignee: '', metadata: { [ASSIGNED_SESSION]: '' } }, actor);
      await this.host.beads.comment(bead, message, actor);
    }
    await this.event(next, 'review.changes_requested', actor, said);
    return this.summaryOf(next);
  }

  async abandon(bead: string, actor: string): Promise<ReviewSummary> {
    const review = this.get(bead);
    if (review.state === 'merged' || review.state === 'abandoned') {
      throw new Problem('conflict-wrong-state', `conflict: review ${bead} is ${review.state}`);
    }
    const at = new Date().toISOString();
    const next: ReviewRecord = { ...review, state: 'abandoned', decided_by: actor, decided_at: at, updated_at: at };
    this.host.store.put(next);
    await this.host.beads.update(bead, { metadata: { [REVIEW]: 'abandoned' } }, actor);
    await this.event(next, 'review.abandoned', actor, `${actor} abandoned the review of ${bead}`);
    await releaseAfterReview({
      record: this.host.sessionRecord(review.session),
      open: this.host.sessionOpen(review.session),
      worktrees: this.host.worktrees,
      review,
      ...(this.host.logger ? { logger: this.host.logger } : {}),
    });
    return this.summaryOf(next);
  }

  /** A bead's close held its branch: a new review, or the next round of the one sent back. */
  private async requested(bead: Bead, record: MergeRecord, commit: string): Promise<void> {
    const repo = record.worktree_repo!;
    const base = record.base!;
    const baseCommit = (await git(repo, ['merge-base', `refs/heads/${base}`, commit])).stdout.trim();
    const log = await git(repo, ['log', '--no-color', '--format=%H%x09%s', `${baseCommit}..${commit}`]);
    const numstat = await git(repo, [
      'diff',
      '--no-color',
      '--no-ext-diff',
      '--no-textconv',
      '--numstat',
      baseCommit,
      commit,
    ]);
    const at = new Date().toISOString();
    const earlier = this.host.store.get(bead.id);
    const review: ReviewRecord = {
      bead: bead.id,
      state: 'pending',
      agent: record.template,
      ...(record.template.includes('/') ? { rig: record.template.slice(0, record.template.lastIndexOf('/')) } : {}),
      session: record.id,
      branch: record.branch!,
      base,
      repo,
      commit,
      base_commit: baseCommit,
      commits: log.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => ({ sha: line.slice(0, line.indexOf('\t')), subject: line.slice(line.indexOf('\t') + 1) })),
      files: numstat.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [added, removed, ...path] = line.split('\t');
          return { path: path.join('\t'), insertions: Number(added) || 0, deletions: Number(removed) || 0 };
        }),
      round: (earlier?.round ?? 0) + 1,
      ...(earlier ? { previous_commit: earlier.commit } : {}),
      created_at: earlier?.created_at ?? at,
      requested_at: at,
      updated_at: at,
      comments: earlier?.comments ?? [],
    };
    this.host.store.put(review);
    await this.event(review, 'review.requested', 'ctl', `the branch of ${bead.id} waits for review`);
  }

  /** The summary, with an approved review's place in its queue and what the queue is doing with it. */
  private summaryOf(review: ReviewRecord): ReviewSummary {
    const summary = summaryOf(review);
    if (review.state === 'approved') {
      const position = this.queue.positions().get(review.bead);
      if (position !== undefined) summary.queue_position = position;
      summary.queue_step = this.queue.stepOf(review.bead);
    }
    return summary;
  }

  private get(bead: string): ReviewRecord {
    const review = this.host.store.get(bead);
    if (!review) throw new Problem('review-not-found', `not_found: no review of bead ${bead}`);
    return review;
  }

  private async event(
    review: ReviewRecord,
    type: `review.${'requested' | 'commented' | 'changes_requested' | 'approved' | 'merged' | 'conflicted' | 'checked' | 'abandoned'}`,
    actor: string,
    message: string,
    extra: Partial<
      Pick<
        ReviewEventPayload,
        'comment' | 'merged' | 'files' | 'reason' | 'check' | 'queue_position' | 'pushed_ref' | 'pushed_commit'
      >
    > = {},
  ): Promise<void> {
    await this.host.record({
      type,
      actor,
      subject: review.bead,
      message,
      payload: {
        bead: review.bead,
        state: review.state,
        agent: review.agent,
        branch: review.branch,
        base: review.base,
        ...extra,
      },
    });
  }
}

/** The unified diff between two commits, with no program of the repository run (no external diff, no textconv). */
async function diffOf(repo: string, from: string, to: string): Promise<string> {
  return (await git(repo, ['diff', '--no-color', '--no-ext-diff', '--no-textconv', from, to])).stdout;
}

/** What the agent is told when changes are asked: the request, then every comment with its file:line. */
export function changesMessage(review: ReviewRecord, text: string, actor: string): string {
  const lines = [
    `Changes were requested on bead ${review.bead} by ${actor} (review round ${review.round}): ${text}`,
    ...review.comments.map((c) => {
      const where = c.path === undefined ? '' : c.line === undefined ? `${c.path}: ` : `${c.path}:${c.line}: `;
      return `- ${where}${c.text} (${c.author})`;
    }),
    `Make the changes on your branch ${review.branch} in your worktree and commit; when done: ctl bead close ${review.bead}`,
  ];
  return lines.join('\n');
}

/** A review as kept, without what only the controller reads (its comments are in the detail). */
function summaryOf(review: ReviewRecord): ReviewSummary {
  const summary: Partial<ReviewRecord> = { ...review };
  delete summary.comments;
  delete summary.repo;
  delete summary.queue_seq;
  delete summary.landing_commit;
  return summary as ReviewSummary;
}

function invalid(field: string, message: string): Problem {
  return new Problem('validation-failed', `invalid: ${message}`, { errors: [{ location: `body.${field}`, message }] });
}
