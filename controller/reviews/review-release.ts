import type { Logger } from 'pino';
import type { MergeRecord } from '../worktrees/bead-merge.js';
import { git, GIT_CHECKOUT_TIMEOUT_MS } from '../worktrees/git.js';
import { isComplete, type SessionWorktrees } from '../worktrees/session-worktrees.js';

/**
 * What a review's end does to its session's worktree, which was kept for it. Merged: the branch, when it is still
 * at the reviewed commit, moves to what landed (the reviewed commit rebased), as a direct merge's rebase would
 * leave it — so that it holds nothing its base lacks; then, when the session is closed, its worktree and branch
 * are released as at a close. Abandoned: a closed session's worktree is removed, its branch kept. A live
 * session keeps its worktree either way (it works there). Never throws.
 */
export async function releaseAfterReview(o: {
  record: MergeRecord | undefined;
  open: boolean;
  worktrees: SessionWorktrees;
  review: { repo: string; branch: string; commit: string };
  /** The base's commit once merged; absent: abandoned. */
  landed?: string;
  logger?: Logger;
}): Promise<void> {
  const { record, review } = o;
  if (!record?.worktree || record.branch !== review.branch) return;
  try {
    if (o.landed !== undefined) {
      if (record.host === undefined && o.landed !== review.commit) await moveBranch(record, review, o.landed);
      if (!o.open) await o.worktrees.release(record);
    } else if (!o.open) {
      await o.worktrees.releaseKeepingBranch(record);
    }
  } catch (err) {
    o.logger?.warn({ err, session: record.id }, 'could not release the worktree of an ended review');
  }
}

async function moveBranch(
  record: MergeRecord,
  review: { repo: string; branch: string; commit: string },
  landed: string,
): Promise<void> {
  const head = await git(review.repo, ['rev-parse', `refs/heads/${review.branch}`], { allow: [128] });
  // Later commits on it are the session's since: left as they are.
  if (head.exitCode !== 0 || head.stdout.trim() !== review.commit) return;
  if (isComplete(record.worktree!)) {
    // --keep: a change the session made since that the move would touch refuses it, and nothing moves.
    await git(record.worktree!, ['reset', '--quiet', '--keep', landed], {
      allow: [1, 128],
      timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
    });
  } else {
    await git(review.repo, ['update-ref', `refs/heads/${review.branch}`, landed, review.commit]);
  }
}
