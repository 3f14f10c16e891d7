import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ReviewCheck, ReviewQueueStep } from '../../shared/dto/reviews.js';
import type { ReviewConfig } from '../../shared/config/review-config.js';
import type { CommandRunner } from '../commands.js';
import type { MergeOutcome, WorktreeMerges } from '../worktrees/bead-merge.js';
import type { PushOutcome } from '../worktrees/bead-push.js';
import { reasonOf } from '../worktrees/session-worktrees.js';
import { headOf, queueOf, queuePositions, queues } from './queue-order.js';
import { runCheck } from './review-check.js';
import { isAncestor, prepareLanding, removeLanding } from './review-landing.js';
import type { ReviewRecord, ReviewStore } from './review-store.js';

/** How an approved review left the queue. */
export type QueueOutcome =
  | { kind: 'merged'; commit: string }
  /** `[review] land = "push"`: the reviewed commit, rebased and checked, went to the rig's remote. */
  | { kind: 'pushed'; remote: string; ref: string; commit: string; forced: boolean; stamped: number }
  | { kind: 'conflicted'; reason: string; files: string[] }
  | { kind: 'check_failed'; check: ReviewCheck; output: string };

export interface MergeQueueHost {
  store: ReviewStore;
  merges: WorktreeMerges;
  commands: CommandRunner;
  /** `[review]` of the city's configuration as it is now. */
  reviewConfig(): ReviewConfig | undefined;
  /** What the check's environment starts from. */
  env: NodeJS.ProcessEnv;
  /** Where review trees are made (`.ctl/reviews/trees`) and check output kept (`.ctl/reviews`). */
  treesDir: string;
  outputDir: string;
  /** A remote session's branch fetched back before its review is landed. */
  fetchBack(review: ReviewRecord): Promise<void>;
  /** The check ran (recorded on the review, `review.checked`). */
  checked(bead: string, check: ReviewCheck): Promise<void>;
  /** The review left the queue: recorded by the review service. */
  settle(bead: string, outcome: QueueOutcome): Promise<void>;
  /** What landing is (`[review] land`): the base fast-forwarded (`merge`), or the branch pushed (`push`). */
  land(): 'merge' | 'push';
  /** Pushes the review's branch at `commit` (the reviewed commit as rebased) to its rig's remote. */
  push(review: ReviewRecord, commit: string): Promise<PushOutcome>;
  logger?: Logger;
}

/** A base that moves under a review this many times between its rebase and its landing makes it `conflicted`. */
const MOVED_ATTEMPTS = 3;

/**
 * The merge queue: one per rig, approved reviews landing one at a time in approval order (`queue_seq`), each
 * rebased onto what landed before it in a tree of its own at exactly the reviewed commit, checked there with the
 * city's `[review] check`, then fast-forwarded into its base (`land`). Its state is the review store: an approved
 * review is queued, and a controller that starts resumes every queue from it (`resume`); a review a dead
 * controller fast-forwarded without recording it (`landing_commit` in its base) is found merged.
 */
export class MergeQueue {
  /** Queues with a worker running. */
  private readonly running = new Set<string>();
  private readonly steps = new Map<string, ReviewQueueStep>();
  private stopped = false;

  constructor(private readonly host: MergeQueueHost) {}

  /** An approved review joins its queue (the review is stored approved first). */
  enqueue(review: ReviewRecord): void {
    this.kick(queueOf(review));
  }

  /** At start: every queue with approved reviews runs again. */
  resume(): void {
    for (const key of queues(this.host.store.all()).keys()) this.kick(key);
  }

  /** No review starts landing after this; a check running is killed by the city's CommandRunner stopping. */
  stop(): void {
    this.stopped = true;
  }

  positions(): Map<string, number> {
    return queuePositions(this.host.store.all());
  }

  stepOf(bead: string): ReviewQueueStep {
    return this.steps.get(bead) ?? 'waiting';
  }

  private kick(key: string): void {
    if (this.running.has(key) || this.stopped) return;
    this.running.add(key);
    void this.work(key);
  }

  private async work(key: string): Promise<void> {
    for (;;) {
      // Read and let go in one step: an approval stored after this read finds no worker and starts one.
      const bead = this.stopped ? undefined : headOf(this.host.store.all(), key);
      if (!bead) {
        this.running.delete(key);
        return;
      }
      let done = true;
      try {
        done = await this.runThrough(bead);
      } catch (err) {
        this.host.logger?.error({ err, bead }, 'the merge queue could not land a review');
        // Never left approved by a failure that would fail again: the queue moves on, the reason recorded — unless
        // the review had moved on already (what failed came after its outcome was stored).
        if (this.approved(bead)) {
          try {
            await this.host.settle(bead, { kind: 'conflicted', reason: reasonOf(err), files: [] });
          } catch (e) {
            this.host.logger?.error({ err: e, bead }, 'could not record a review’s failure: its queue stops');
            done = false;
          }
        }
      } finally {
        this.steps.delete(bead);
      }
      if (!done) {
        this.running.delete(key);
        return;
      }
    }
  }

  /** One review through the queue; false when the controller's stop interrupted it (it stays approved). */
  private async runThrough(bead: string): Promise<boolean> {
    const review = this.host.store.get(bead)!;
    const tree = join(this.host.treesDir, bead.replace(/[^A-Za-z0-9._-]/g, '_'));
    if (review.landing_commit && (await isAncestor(review.repo, review.landing_commit, `refs/heads/${review.base}`))) {
      await removeLanding(review.repo, tree, this.host.logger);
      await this.host.settle(bead, { kind: 'merged', commit: review.landing_commit });
      return true;
    }
    for (let attempt = 1; ; attempt++) {
      this.steps.set(bead, 'rebasing');
      await this.host.fetchBack(review);
      const prepared = await prepareLanding(review, tree, this.host.logger);
      if (prepared.kind === 'merged') {
        await this.host.settle(bead, prepared);
        return true;
      }
      if (prepared.kind === 'refused') {
        await this.host.settle(bead, { kind: 'conflicted', reason: prepared.reason, files: prepared.files ?? [] });
        return true;
      }
      const config = this.host.reviewConfig();
      if (config?.check && this.approved(bead)) {
        this.steps.set(bead, 'checking');
        const run = await runCheck(this.host.commands, {
          command: config.check,
          timeoutMs: config.checkTimeoutMs,
          tree,
          commit: prepared.commit,
          env: {
            ...this.host.env,
            CTL_REVIEW_BEAD: bead,
            CTL_REVIEW_BRANCH: review.branch,
            CTL_REVIEW_BASE: review.base,
            CTL_REVIEW_COMMIT: prepared.commit,
          },
          dir: this.host.outputDir,
          bead,
        });
        // Killed by the controller's stop, not failed: the tree stays for the next controller to remove and redo.
        if (run.interrupted || this.stopped) return false;
        await this.host.checked(bead, run.check);
        if (!run.check.passed) {
          await removeLanding(review.repo, tree, this.host.logger);
          await this.host.settle(bead, { kind: 'check_failed', check: run.check, output: run.output });
          return true;
        }
      }
      if (!this.approved(bead) || this.stopped) {
        // Abandoned while it was checked: nothing lands.
        await removeLanding(review.repo, tree, this.host.logger);
        return !this.stopped;
      }
      this.steps.set(bead, 'landing');
      if (this.host.land() === 'push') {
        const pushed = await this.host.push(review, prepared.commit);
        await removeLanding(review.repo, tree, this.host.logger);
        await this.host.settle(
          bead,
          pushed.kind === 'pushed'
            ? pushed
            : {
                kind: 'conflicted',
                reason: `the push to ${pushed.remote || 'its remote'} failed: ${pushed.reason}`,
                files: [],
              },
        );
        return true;
      }
      // Recorded before the base moves: a controller killed after it finds the review merged (above).
      this.host.store.put({ ...this.host.store.get(bead)!, landing_commit: prepared.commit });
      const landed = await this.land(review, prepared);
      if (landed.kind === 'moved' && attempt < MOVED_ATTEMPTS) {
        this.host.logger?.info({ bead, base: review.base }, 'the base moved while a review was checked: again');
        continue;
      }
      await removeLanding(review.repo, tree, this.host.logger);
      if (landed.kind === 'merged') await this.host.settle(bead, landed);
      else {
        const reason =
          landed.kind === 'moved'
            ? `its base ${review.base} moved on ${MOVED_ATTEMPTS} times while it was checked`
            : landed.reason;
        await this.host.settle(bead, { kind: 'conflicted', reason, files: [] });
      }
      return true;
    }
  }

  /**
   * The step that lands a prepared review into its base: fast-forwarded to the reviewed commit as rebased, while the
   * base is still where it was rebased onto (`[review] land = "push"` pushes instead, above).
   */
  private land(
    review: ReviewRecord,
    prepared: { commit: string; onto: string },
  ): Promise<MergeOutcome | { kind: 'moved'; to: string }> {
    return this.host.merges.fastForwardReviewed(
      review.repo,
      review.base,
      prepared.onto,
      prepared.commit,
      review.branch,
    );
  }

  private approved(bead: string): boolean {
    return this.host.store.get(bead)?.state === 'approved';
  }
}
