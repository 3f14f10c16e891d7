import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type {
  ReviewComment,
  ReviewCommentInputBody,
  ReviewDetail,
  ReviewState,
  ReviewSummary,
} from '../../shared/dto/reviews.js';
import type { KnownNewEvent } from '../../shared/events/event-types.js';
import { Problem } from '../../shared/http/problem.js';
import { ASSIGNED_SESSION } from '../beads/work-schema.js';
import type { BeadsService } from '../beads/beads-service.js';
import { MERGED, REVIEW, type MergeRecord, type WorktreeMerges } from '../worktrees/bead-merge.js';
import { git } from '../worktrees/git.js';
import { pushMetadata, type PushOutcome } from '../worktrees/bead-push.js';
import { newSideLines, splitDiff } from './review-diff.js';
import type { ReviewRecord, ReviewStore } from './review-store.js';

export interface ReviewHost {
  beads: BeadsService;
  merges: WorktreeMerges;
  store: ReviewStore;
  /** A session's record, open or closed. */
  sessionRecord(id: string): MergeRecord | undefined;
  /** Tells an open session something (waking it); false when it is not open. */
  tell(sessionId: string, text: string): boolean;
  record(event: KnownNewEvent): Promise<unknown>;
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
  constructor(private readonly host: ReviewHost) {
    host.merges.reviewWith({ requested: (bead, record, commit) => this.requested(bead, record, commit) });
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
      .map(summaryOf);
  }

  async detail(bead: string): Promise<ReviewDetail> {
    const review = this.get(bead);
    const { files, truncated } = splitDiff(await diffOf(review.repo, review.base_commit, review.commit));
    const detail: ReviewDetail = { ...summaryOf(review), comments: review.comments, diff: files, truncated };
    if (review.previous_commit !== undefined && review.previous_commit !== review.commit) {
      detail.diff_since_previous = splitDiff(await diffOf(review.repo, review.previous_commit, review.commit)).files;
    }
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
      const file = (await this.detail(bead)).diff.find((f) => f.path === input.path);
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
    const next = { ...review, comments: [...review.comments, comment], updated_at: comment.at };
    this.host.store.put(next);
    await this.event(next, 'review.commented', author, `${author} commented on the review of ${bead}`, {
      comment: comment.id,
    });
    return comment;
  }

  /** Approves a pending review: its branch goes into its base, or the review is `conflicted` with the reason. */
  async approve(bead: string, actor: string): Promise<ReviewSummary> {
    const review = this.get(bead);
    if (review.state !== 'pending') {
      throw new Problem('conflict-wrong-state', `conflict: review ${bead} is ${review.state}, not pending`);
    }
    const record = this.host.sessionRecord(review.session);
    const decided = { decided_by: actor, decided_at: new Date().toISOString() };
    const approved: ReviewRecord = { ...review, ...decided, state: 'approved', updated_at: decided.decided_at };
    this.host.store.put(approved);
    await this.event(approved, 'review.approved', actor, `${actor} approved the review of ${bead}`);
    if (this.host.land?.() === 'push') return this.landByPush(approved, actor);
    const outcome = record?.worktree
      ? await this.host.merges.mergeApproved(record)
      : { kind: 'failed' as const, reason: `the session ${review.session} and its worktree are gone` };
    const at = new Date().toISOString();
    if (outcome.kind === 'merged') {
      const merged: ReviewRecord = { ...approved, state: 'merged', merged: outcome.commit, updated_at: at };
      delete merged.conflict;
      delete merged.conflict_files;
      this.host.store.put(merged);
      await this.host.beads.update(bead, { metadata: { [REVIEW]: 'merged', [MERGED]: outcome.commit } }, actor);
      await this.event(merged, 'review.merged', actor, `the branch of ${bead} went into ${review.base}`, {
        merged: outcome.commit,
      });
      return summaryOf(merged);
    }
    const conflicted: ReviewRecord = {
      ...approved,
      state: 'conflicted',
      conflict: outcome.reason,
      conflict_files: outcome.kind === 'refused' ? (outcome.files ?? []) : [],
      updated_at: at,
    };
    this.host.store.put(conflicted);
    await this.host.beads.update(bead, { metadata: { [REVIEW]: 'conflicted' } }, actor);
    await this.event(
      conflicted,
      'review.conflicted',
      actor,
      `the branch of ${bead} could not go in: ${outcome.reason}`,
      {
        files: conflicted.conflict_files,
      },
    );
    return summaryOf(conflicted);
  }

  /**
   * An approved review landed by a push (`[review] land = "push"`): its branch to its rig's remote as
   * `merge = "push"` does, the review `merged` with the pushed ref — the spec's states have no other for work that
   * left the machine, and `pushed_ref` says where it went — or `conflicted` with the push's reason. The merge queue
   * calls the same push (`WorktreeMerges.pushFor`).
   */
  private async landByPush(approved: ReviewRecord, actor: string): Promise<ReviewSummary> {
    const bead = approved.bead;
    const record = this.host.sessionRecord(approved.session);
    const found = this.host.beads.find(bead);
    const outcome: PushOutcome =
      record?.worktree && found
        ? await this.host.merges.pushFor(record, found)
        : {
            kind: 'failed',
            remote: '',
            ref: `refs/heads/${approved.branch}`,
            reason: `the session ${approved.session} and its worktree are gone`,
          };
    const at = new Date().toISOString();
    if (outcome.kind === 'pushed') {
      const merged: ReviewRecord = {
        ...approved,
        state: 'merged',
        pushed_remote: outcome.remote,
        pushed_ref: outcome.ref,
        pushed_commit: outcome.commit,
        updated_at: at,
      };
      delete merged.conflict;
      delete merged.conflict_files;
      this.host.store.put(merged);
      await this.host.beads.update(bead, { metadata: { [REVIEW]: 'merged', ...pushMetadata(outcome) } }, actor);
      await this.event(
        merged,
        'review.merged',
        actor,
        `the branch of ${bead} was pushed to ${outcome.remote} ${outcome.ref}`,
        {
          pushed_ref: outcome.ref,
          pushed_commit: outcome.commit,
        },
      );
      return summaryOf(merged);
    }
    const conflicted: ReviewRecord = {
      ...approved,
      state: 'conflicted',
      conflict: outcome.remote ? `the push to ${outcome.remote} failed: ${outcome.reason}` : outcome.reason,
      conflict_files: [],
      updated_at: at,
    };
    this.host.store.put(conflicted);
    await this.host.beads.update(bead, { metadata: { [REVIEW]: 'conflicted', ...pushMetadata(outcome) } }, actor);
    await this.event(
      conflicted,
      'review.conflicted',
      actor,
      `the branch of ${bead} could not be pushed: ${conflicted.conflict}`,
      {
        files: [],
      },
    );
    return summaryOf(conflicted);
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
    const at = new Date().toISOString();
    const next: ReviewRecord = {
      ...review,
      state: 'changes_requested',
      decided_by: actor,
      decided_at: at,
      updated_at: at,
    };
    this.host.store.put(next);
    const message = changesMessage(next, text.trim(), actor);
    await this.host.beads.update(bead, { status: 'in_progress', metadata: { [REVIEW]: 'changes_requested' } }, actor);
    if (!this.host.tell(review.session, message)) {
      // Its session is gone: the bead goes back to its agent's queue, the request on it for whoever takes it.
      await this.host.beads.update(bead, { status: 'open', assignee: '', metadata: { [ASSIGNED_SESSION]: '' } }, actor);
      await this.host.beads.comment(bead, message, actor);
    }
    await this.event(next, 'review.changes_requested', actor, `${actor} asked for changes to ${bead}`);
    return summaryOf(next);
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
    return summaryOf(next);
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
      updated_at: at,
      comments: earlier?.comments ?? [],
    };
    this.host.store.put(review);
    await this.event(review, 'review.requested', 'ctl', `the branch of ${bead.id} waits for review`);
  }

  private get(bead: string): ReviewRecord {
    const review = this.host.store.get(bead);
    if (!review) throw new Problem('review-not-found', `not_found: no review of bead ${bead}`);
    return review;
  }

  private async event(
    review: ReviewRecord,
    type: `review.${'requested' | 'commented' | 'changes_requested' | 'approved' | 'merged' | 'conflicted' | 'abandoned'}`,
    actor: string,
    message: string,
    extra: { comment?: number; merged?: string; pushed_ref?: string; pushed_commit?: string; files?: string[] } = {},
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

function summaryOf(review: ReviewRecord): ReviewSummary {
  const summary: Partial<ReviewRecord> = { ...review };
  delete summary.comments;
  delete summary.repo;
  return summary as ReviewSummary;
}

function invalid(field: string, message: string): Problem {
  return new Problem('validation-failed', `invalid: ${message}`, { errors: [{ location: `body.${field}`, message }] });
}
