import type { Logger } from 'pino';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { identity } from '../worktrees/bead-merge.js';
import { git, GIT_CHECKOUT_TIMEOUT_MS } from '../worktrees/git.js';
import { isComplete } from '../worktrees/session-worktrees.js';

/** What the queue lands of a review: where its branch is, and exactly the commit the person saw. */
export interface Landable {
  bead: string;
  repo: string;
  branch: string;
  base: string;
  /** The reviewed commit. */
  commit: string;
}

export type Preparation =
  /** `commit`: the reviewed commit, rebased onto `onto` (the base's commit) when the base had moved on. */
  | { kind: 'prepared'; commit: string; onto: string; rebased: boolean }
  /** Already in its base (a fast-forward a dead controller made, or a person's merge). */
  | { kind: 'merged'; commit: string }
  | { kind: 'refused'; reason: string; files?: string[] };

/**
 * Why the review's branch no longer holds what was reviewed: gone, or force-moved so that the reviewed commit is
 * no longer on it; undefined when it does. A person approves what they saw, and only that.
 */
export async function branchProblem(review: Landable): Promise<string | undefined> {
  const head = await git(review.repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${review.branch}^{commit}`], {
    allow: [1, 128],
  });
  if (head.exitCode !== 0) return `its branch ${review.branch} no longer exists`;
  const on = await git(review.repo, ['merge-base', '--is-ancestor', review.commit, head.stdout.trim()], {
    allow: [1, 128],
  });
  if (on.exitCode !== 0) {
    return (
      `its branch ${review.branch} was force-moved since the review: the reviewed commit ` +
      `${review.commit.slice(0, 12)} is no longer on it (it is at ${head.stdout.trim().slice(0, 12)})`
    );
  }
  return undefined;
}

/**
 * The review's tree (`tree`, a detached worktree of its repository, at exactly the reviewed commit — never at
 * later commits of its branch, never in the session's own worktree, which may be at work on something else), the
 * reviewed commit rebased there onto its base when the base moved on and `git merge-tree` finds no conflict. A
 * tree a dead controller left (a rebase half-done in it) is aborted and removed first. A refusal leaves no tree.
 */
export async function prepareLanding(review: Landable, tree: string, logger?: Logger): Promise<Preparation> {
  const problem = await branchProblem(review);
  if (problem) return { kind: 'refused', reason: problem };
  const base = await git(review.repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${review.base}^{commit}`], {
    allow: [1, 128],
  });
  if (base.exitCode !== 0) return { kind: 'refused', reason: `its base ${review.base} no longer exists` };
  const onto = base.stdout.trim();
  if (await isAncestor(review.repo, review.commit, onto)) return { kind: 'merged', commit: onto };
  await removeLanding(review.repo, tree, logger);
  mkdirSync(dirname(tree), { recursive: true, mode: 0o700 });
  await git(review.repo, ['worktree', 'add', '--quiet', '--detach', tree, review.commit], {
    timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
  });
  if (await isAncestor(review.repo, onto, review.commit)) {
    return { kind: 'prepared', commit: review.commit, onto, rebased: false };
  }
  const check = await git(
    review.repo,
    ['merge-tree', '--write-tree', '--name-only', '--no-messages', onto, review.commit],
    {
      allow: [1],
    },
  );
  if (check.exitCode === 1) {
    await removeLanding(review.repo, tree, logger);
    const files = check.stdout.trim().split('\n').slice(1).filter(Boolean);
    return {
      kind: 'refused',
      reason: `it conflicts with ${review.base} in ${files.join(', ') || 'some files'}`,
      files,
    };
  }
  const rebased = await git(tree, [...(await identity(review.repo)), 'rebase', '--quiet', onto], {
    allow: [1, 128],
    timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
  });
  if (rebased.exitCode !== 0) {
    await removeLanding(review.repo, tree, logger);
    return { kind: 'refused', reason: `it could not be rebased onto ${review.base}` };
  }
  const commit = (await git(tree, ['rev-parse', 'HEAD'])).stdout.trim();
  return { kind: 'prepared', commit, onto, rebased: true };
}

/**
 * The review's tree removed (a rebase in it aborted first), and git's record of it with it. Never throws: a git
 * that fails here is logged, the directory removed all the same, and the next `worktree prune` drops the record.
 */
export async function removeLanding(repo: string, tree: string, logger?: Logger): Promise<void> {
  try {
    if (isComplete(tree)) {
      await git(tree, ['rebase', '--abort'], { allow: [1, 128] });
      await git(repo, ['worktree', 'remove', '--force', tree], { allow: [128], timeoutMs: GIT_CHECKOUT_TIMEOUT_MS });
    }
  } catch (err) {
    logger?.warn({ err, tree }, 'git could not remove a review’s tree: removing its directory');
  }
  if (existsSync(tree)) rmSync(tree, { recursive: true, force: true });
  try {
    await git(repo, ['worktree', 'prune']);
  } catch (err) {
    logger?.warn({ err, repo }, 'git could not prune a removed review tree’s record');
  }
}

export async function isAncestor(repo: string, ancestor: string, of: string): Promise<boolean> {
  return (await git(repo, ['merge-base', '--is-ancestor', ancestor, of], { allow: [1, 128] })).exitCode === 0;
}
