import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { SessionWorktree, SessionWorktreeRelease } from '../../shared/dto/sessions.js';
import type { Host } from '../hosts/host.js';
import { git, GIT_CHECKOUT_TIMEOUT_MS, GitError, porcelainPaths } from './git.js';
import { RemoteWorktree, workDirOnHost } from './remote-worktree.js';

/** An agent's worktree settings, resolved (by agent-catalog/ from its `isolation = "worktree"`). */
export interface AgentWorktree {
  /** The top of the git working tree its directory is in. */
  repo: string;
  /** Its directory inside that tree (`''` for the top): a session works in the same place of its worktree. */
  subdir: string;
  /** The branch to start from and merge into, when configured (the agent's `base_branch`, else its rig's). */
  base?: string;
  merge: 'none' | 'direct' | 'review' | 'push';
  /** The remote its branches are pushed to (`merge = "push"`): its rig's `remote`, else `origin`. */
  remote: string;
}

/** The record fields of a session with a worktree (a session's record, sessions/session-store.ts, has them). */
export interface WorktreeFields {
  /** Its own git worktree (an agent with `isolation = "worktree"`): the directory, under `.ctl/worktrees/`. */
  worktree?: string;
  /** The worktree's branch, `ctl/<agent>/<session name>`. */
  branch?: string;
  /** The branch the worktree starts from and merges into (set when configured, else when it is first made). */
  base?: string;
  /** The repository (its main working tree) the worktree is made from. */
  worktree_repo?: string;
  /** Where in the worktree its program works (the agent's directory inside the repository); absent: the top. */
  worktree_subdir?: string;
}

/** A session's record as its worktree reads it: the session, where it works, and its worktree's fields. */
export interface WorktreeRecord extends WorktreeFields {
  id: string;
  work_dir: string;
  /** The `[[host]]` it runs on; absent: this machine. */
  host?: string;
}

/** How long a view waits for a host's `git status`. */
const VIEW_MS = 5_000;

/** A record that has a worktree. */
type WithWorktree = WorktreeRecord & { worktree: string; branch: string; worktree_repo: string };

function hasWorktree(record: WorktreeRecord): record is WithWorktree {
  return record.worktree !== undefined && record.branch !== undefined && record.worktree_repo !== undefined;
}

/**
 * Sessions' git worktrees: each session of an agent with `isolation = "worktree"` works in its own worktree of the
 * agent's repository, `<city>/.ctl/worktrees/<session name>`, on branch `ctl/<agent>/<session name>`. Made before
 * its program first starts, found again on every restart and wake, removed at close when it holds nothing its base
 * lacks (kept, with the reason, when it does), pruned when a controller died half-way. Every git command is bounded
 * in time (git.ts); every failure is a reason in words, never an exception the caller did not expect.
 */
export class SessionWorktrees {
  constructor(
    /** `<city>/.ctl/worktrees`. */
    readonly root: string,
    private readonly logger: Logger,
    /**
     * The host a session runs on (`SessionContext.hostOf`): on a remote one its worktree is there (RemoteWorktree),
     * its branch fetched back into the rig. None: every session's is here.
     */
    private readonly hostOf?: (record: WorktreeRecord) => Host,
  ) {}

  private readonly turnListeners: ((record: WorktreeRecord) => void)[] = [];

  /** The remote host a session runs on, or undefined for this machine. */
  private remoteOf(record: WorktreeRecord): Host | undefined {
    if (!this.hostOf || record.host === undefined) return undefined;
    const host = this.hostOf(record);
    return host.remote ? host : undefined;
  }

  /** The fields a new session of `agent` records: where its worktree will be and its branch. */
  plan(agentName: string, worktree: AgentWorktree, sessionName: string): WorktreeFields {
    return {
      worktree: join(this.root, sessionName),
      branch: `ctl/${agentName}/${sessionName}`,
      worktree_repo: worktree.repo,
      ...(worktree.subdir ? { worktree_subdir: worktree.subdir } : {}),
      ...(worktree.base ? { base: worktree.base } : {}),
    };
  }

  /**
   * The directory a session's program starts in: for a worktree session, its worktree (made now if it is not
   * there — the first start, or a controller that died while making it — from its branch if that exists, else a
   * new branch from its base); `saveBase` records the base once it is known. Throws with git's reason.
   */
  async prepare(record: WorktreeRecord, saveBase: (base: string) => void): Promise<string> {
    const host = this.remoteOf(record);
    if (host) return this.prepareOnHost(host, record, saveBase);
    if (!hasWorktree(record)) return record.work_dir;
    const { worktree, branch, worktree_repo: repo } = record;
    const state = stateOf(worktree);
    if (state === 'broken') {
      throw new GitError(
        'worktree add',
        `its worktree ${worktree} is broken (git no longer knows it): move it away, and the next start makes a new one from ${branch}`,
        undefined,
      );
    }
    if (state !== 'complete') {
      if (state === 'half-made') {
        // Half-made by a controller that died in `git worktree add`: made again from nothing.
        discard(worktree);
        await git(repo, ['worktree', 'prune']);
      }
      mkdirSync(this.root, { recursive: true, mode: 0o700 });
      let args: string[];
      if (await branchExists(repo, branch)) {
        args = ['worktree', 'add', '--quiet', worktree, branch];
      } else {
        const base = record.base ?? (await defaultBranch(repo));
        if (!(await branchExists(repo, base))) {
          throw new GitError('worktree add', `the base branch ${base} does not exist in ${repo}`, undefined);
        }
        if (record.base !== base) saveBase(base);
        args = ['worktree', 'add', '--quiet', '--no-track', '-b', branch, worktree, base];
      }
      try {
        await git(repo, args, { timeoutMs: GIT_CHECKOUT_TIMEOUT_MS });
      } catch (err) {
        // Git may still record a worktree of that path whose directory someone removed: forgotten, then once more.
        // (Pruning only then: a prune while another session's worktree is being made is best avoided.)
        if (!(err instanceof GitError) || !/already registered|already exists/.test(err.reason)) throw err;
        discard(worktree);
        await git(repo, ['worktree', 'prune']);
        await git(repo, args, { timeoutMs: GIT_CHECKOUT_TIMEOUT_MS });
      }
    }
    const dir = record.worktree_subdir ? join(worktree, record.worktree_subdir) : worktree;
    // The agent's directory may be one git does not track (empty, or ignored): made in the worktree too.
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * A session on a remote host works there: in its worktree there (the rig's base pushed to the host first), or in
   * a plain directory of its own when it has none (its agent's directory is this machine's).
   */
  private async prepareOnHost(host: Host, record: WorktreeRecord, saveBase: (base: string) => void): Promise<string> {
    await host.prepare();
    if (!hasWorktree(record)) {
      const dir = workDirOnHost(host, record);
      const made = await host.run(['mkdir', '-p', '-m', '700', dir], { timeoutMs: 30_000 });
      if (made.code !== 0) throw new Error(`cannot make its directory ${dir} on ${host.name}: ${made.stderr.trim()}`);
      return dir;
    }
    const base = record.base ?? (await defaultBranch(record.worktree_repo));
    if (!(await branchExists(record.worktree_repo, base))) {
      throw new GitError(
        'worktree add',
        `the base branch ${base} does not exist in ${record.worktree_repo}`,
        undefined,
      );
    }
    if (record.base !== base) saveBase(base);
    return new RemoteWorktree(host).prepare(record, base);
  }

  /**
   * A session on a remote host: its branch fetched back into the rig (each turn's end; a bead's close and the
   * session's own do it themselves). Never throws: a host that does not answer is logged, and the rig keeps what
   * it fetched last.
   */
  async fetchBack(record: WorktreeRecord): Promise<void> {
    const host = this.remoteOf(record);
    if (!host || !hasWorktree(record)) return;
    try {
      await new RemoteWorktree(host).fetch(record);
    } catch (err) {
      this.logger.warn(
        { err, session: record.id, host: host.name },
        'could not fetch a session’s branch from its host',
      );
    }
  }

  /**
   * A session's turn has ended: a remote one's branch fetched back, then whoever listens told (overlaps.ts reads
   * what every worktree of the rig changed). Never throws.
   */
  async turnEnded(record: WorktreeRecord): Promise<void> {
    await this.fetchBack(record);
    if (!hasWorktree(record)) return;
    for (const listener of this.turnListeners) {
      try {
        listener(record);
      } catch (err) {
        this.logger.warn({ err, session: record.id }, 'a turn-end listener of the worktrees failed');
      }
    }
  }

  /** Calls `listener` after every turn end of a session with a worktree (its branch fetched back first). */
  onTurnEnded(listener: (record: WorktreeRecord) => void): void {
    this.turnListeners.push(listener);
  }

  /**
   * A remote session's branch rebased onto `base` in its worktree there (a merge whose base moved on), then
   * fetched back: whether git could; undefined for a session on this machine. Throws when the host cannot be reached.
   */
  async rebaseOnHost(record: WorktreeRecord, base: string): Promise<boolean | undefined> {
    const host = this.remoteOf(record);
    if (!host || !hasWorktree(record)) return undefined;
    return new RemoteWorktree(host).rebase(record, base);
  }

  /** The worktree as the API shows it; with `state`, its branch's state read with git (an `error` if it cannot be). */
  async view(record: WorktreeRecord, state: boolean): Promise<SessionWorktree | undefined> {
    if (!hasWorktree(record)) return undefined;
    const host = this.remoteOf(record);
    if (host) return this.viewOnHost(host, record, state);
    const view: SessionWorktree = {
      path: record.worktree,
      branch: record.branch,
      repository: record.worktree_repo,
      ...(record.base ? { base: record.base } : {}),
    };
    if (!state) return view;
    try {
      if (!isComplete(record.worktree)) return { ...view, error: 'the worktree is not made yet (or was removed)' };
      const [head, dirty] = await Promise.all([
        git(record.worktree, ['rev-parse', 'HEAD']),
        changedFiles(record.worktree),
      ]);
      view.head = head.stdout.trim();
      view.dirty = dirty.length > 0;
      if (record.base) Object.assign(view, await distance(record.worktree_repo, record.base, record.branch));
    } catch (err) {
      view.error = reasonOf(err);
    }
    return view;
  }

  /** A remote session's worktree: where it is there, its branch as last fetched, its changes as the host says. */
  private async viewOnHost(host: Host, record: WithWorktree, state: boolean): Promise<SessionWorktree> {
    const remote = new RemoteWorktree(host);
    let path = record.worktree;
    try {
      if (!host.lost()) path = `${host.name}:${workDirOnHost(host, { id: record.id })}`;
    } catch {
      // not connected yet: the planned path here
    }
    const view: SessionWorktree = {
      path,
      branch: record.branch,
      repository: record.worktree_repo,
      ...(record.base ? { base: record.base } : {}),
    };
    if (!state) return view;
    const lost = host.lost();
    // A view never waits for a host that does not answer (a session's detail reads it).
    if (lost) return { ...view, error: `its host ${host.name} does not answer: ${lost}` };
    try {
      if (!(await branchExists(record.worktree_repo, record.branch))) {
        return { ...view, error: `its branch is not fetched from ${host.name} yet` };
      }
      view.head = (await git(record.worktree_repo, ['rev-parse', `refs/heads/${record.branch}`])).stdout.trim();
      view.dirty = (await remote.changedFiles(record, VIEW_MS)).length > 0;
      if (record.base) Object.assign(view, await distance(record.worktree_repo, record.base, record.branch));
    } catch (err) {
      view.error = reasonOf(err);
    }
    return view;
  }

  /**
   * The commit a session's branch is at, and whether its worktree has uncommitted changes. A remote session's
   * branch is fetched back first (its host not answering: what was fetched last, said in the log).
   */
  async branchHead(record: WorktreeRecord): Promise<{ commit: string; dirty: boolean } | undefined> {
    if (!hasWorktree(record)) return undefined;
    const host = this.remoteOf(record);
    if (host) {
      await this.fetchBack(record);
      const commit = (await git(record.worktree_repo, ['rev-parse', `refs/heads/${record.branch}`])).stdout.trim();
      const dirty = (await new RemoteWorktree(host).changedFiles(record).catch(() => [])).length > 0;
      return { commit, dirty };
    }
    const commit = (await git(record.worktree_repo, ['rev-parse', `refs/heads/${record.branch}`])).stdout.trim();
    const dirty = isComplete(record.worktree) ? (await changedFiles(record.worktree)).length > 0 : false;
    return { commit, dirty };
  }

  /**
   * At close: the worktree and its branch are removed when they hold nothing its base lacks — no uncommitted
   * change, no commit the base does not have — else kept, and the reason said. Never throws: a git failure keeps
   * the worktree and is the reason.
   */
  async release(record: WorktreeRecord): Promise<SessionWorktreeRelease | undefined> {
    if (!hasWorktree(record)) return undefined;
    const note = { path: record.worktree, branch: record.branch };
    const host = this.remoteOf(record);
    try {
      // On a host: its branch fetched back and its changes read there first; a host not answering keeps it all.
      const remote = host ? new RemoteWorktree(host) : undefined;
      if (remote) await remote.fetch(record);
      const kept = await this.unmerged(record, remote ? () => remote.changedFiles(record) : undefined);
      if (kept) return { ...note, removed: false, reason: kept };
      await remote?.remove(record);
      await this.remove(record);
      return { ...note, removed: true };
    } catch (err) {
      const reason = reasonOf(err);
      this.logger.warn({ err, session: record.id, worktree: record.worktree }, 'could not release a worktree');
      return { ...note, removed: false, reason };
    }
  }

  /**
   * The worktree of a closed session whose review was abandoned: removed when it holds no uncommitted change, its
   * branch kept (the work on it stays where it is). Kept, with the reason, otherwise — and on a remote host, whose
   * worktree its own close released. Never throws.
   */
  async releaseKeepingBranch(record: WorktreeRecord): Promise<SessionWorktreeRelease | undefined> {
    if (!hasWorktree(record)) return undefined;
    const note = { path: record.worktree, branch: record.branch };
    if (this.remoteOf(record)) return { ...note, removed: false, reason: 'it is on a remote host' };
    try {
      const state = stateOf(record.worktree);
      if (state === 'missing') return { ...note, removed: true };
      if (state === 'broken') return { ...note, removed: false, reason: `${record.worktree} is broken` };
      if (state === 'complete') {
        const changed = await changedFiles(record.worktree);
        if (changed.length)
          return { ...note, removed: false, reason: `uncommitted changes in ${describeFiles(changed)}` };
        await git(record.worktree_repo, ['worktree', 'remove', '--force', record.worktree], {
          timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
        });
      } else {
        discard(record.worktree);
        await git(record.worktree_repo, ['worktree', 'prune']);
      }
      return { ...note, removed: true };
    } catch (err) {
      this.logger.warn({ err, session: record.id, worktree: record.worktree }, 'could not release a worktree');
      return { ...note, removed: false, reason: reasonOf(err) };
    }
  }

  /**
   * As a controller starts: worktrees no open session holds are released as a close would (a controller that died
   * between closing a session and removing its worktree), half-made ones removed, and each repository's records of
   * worktrees that are gone pruned. `closedRecord` finds a closed session by its session name.
   */
  async prune(
    open: WorktreeRecord[],
    closedRecord: (sessionName: string) => WorktreeRecord | undefined,
  ): Promise<void> {
    const held = new Set(open.filter(hasWorktree).map((r) => r.worktree));
    const repos = new Set(open.filter(hasWorktree).map((r) => r.worktree_repo));
    let names: string[];
    try {
      names = readdirSync(this.root);
    } catch {
      names = [];
    }
    for (const name of names) {
      const path = join(this.root, name);
      if (held.has(path)) continue;
      const repo = repositoryOfWorktree(path);
      if (repo) repos.add(repo);
      const state = stateOf(path);
      if (state === 'half-made') {
        discard(path);
        this.logger.info({ worktree: path }, 'removed a half-made worktree');
        continue;
      }
      const record = closedRecord(name);
      if (state === 'broken' || !record || !hasWorktree(record) || record.worktree !== path) {
        // Nobody's, or broken: kept (it may hold work), said once per start.
        this.logger.warn({ worktree: path, state }, 'kept a worktree no closed session can release');
        continue;
      }
      const released = await this.release(record);
      if (released && !released.removed) {
        this.logger.info({ worktree: path, reason: released.reason }, 'kept the worktree of a closed session');
      }
    }
    for (const repo of repos) {
      await git(repo, ['worktree', 'prune']).catch((err: unknown) =>
        this.logger.warn({ err, repo }, 'could not prune the worktrees of a repository'),
      );
    }
  }

  /** Why the worktree must be kept (uncommitted changes, commits not in its base), or undefined. */
  private async unmerged(record: WithWorktree, changedThere?: () => Promise<string[]>): Promise<string | undefined> {
    if (changedThere || isComplete(record.worktree)) {
      const changed = changedThere ? await changedThere() : await changedFiles(record.worktree);
      if (changed.length) return `uncommitted changes in ${describeFiles(changed)}`;
    }
    if (!(await branchExists(record.worktree_repo, record.branch))) return undefined;
    if (!record.base) return `its branch ${record.branch} has no known base to compare with`;
    if (!(await branchExists(record.worktree_repo, record.base))) {
      return `its base branch ${record.base} no longer exists`;
    }
    const { ahead } = await distance(record.worktree_repo, record.base, record.branch);
    return ahead > 0 ? `${ahead} commit${ahead === 1 ? '' : 's'} not in ${record.base}` : undefined;
  }

  private async remove(record: WithWorktree): Promise<void> {
    const repo = record.worktree_repo;
    const state = stateOf(record.worktree);
    if (state === 'complete') {
      // --force: what is left is only what git ignores (build output), checked above to hold no work.
      await git(repo, ['worktree', 'remove', '--force', record.worktree], { timeoutMs: GIT_CHECKOUT_TIMEOUT_MS });
    } else if (state === 'broken') {
      throw new GitError('worktree remove', `${record.worktree} is broken (git no longer knows it)`, undefined);
    } else {
      discard(record.worktree);
      await git(repo, ['worktree', 'prune']);
    }
    if (await branchExists(repo, record.branch)) await git(repo, ['branch', '-D', '--quiet', record.branch]);
  }
}

/**
 * A half-made worktree removed, and git's "initializing" lock on it lifted so that `git worktree prune` forgets it
 * (git never prunes a locked worktree) and its branch can be checked out again.
 */
function discard(path: string): void {
  const admin = gitdirOf(path);
  if (admin) rmSync(join(admin, 'locked'), { force: true });
  rmSync(path, { recursive: true, force: true });
}

/**
 * What a worktree directory is: `complete` (git finished making it), `half-made` (no `.git` file, or git's own
 * "initializing" lock still on it: `git worktree add` never finished), `broken` (its `.git` file names an
 * administrative directory that is gone: it may hold work, so it is never removed), or `missing`.
 */
export function stateOf(path: string): 'complete' | 'half-made' | 'broken' | 'missing' {
  if (!existsSync(path)) return 'missing';
  const gitdir = gitdirOf(path);
  if (gitdir === undefined) return 'half-made';
  if (!existsSync(gitdir)) return 'broken';
  try {
    return readFileSync(join(gitdir, 'locked'), 'utf8').startsWith('initializing') ? 'half-made' : 'complete';
  } catch {
    return 'complete';
  }
}

export function isComplete(path: string): boolean {
  return stateOf(path) === 'complete';
}

/** The administrative directory a worktree's `.git` file names (`<repo>/.git/worktrees/<name>`). */
function gitdirOf(path: string): string | undefined {
  try {
    const line = /^gitdir: (.+)$/m.exec(readFileSync(join(path, '.git'), 'utf8'))?.[1]?.trim();
    if (!line) return undefined;
    return isAbsolute(line) ? line : resolve(path, line);
  } catch {
    return undefined;
  }
}

/** The repository a worktree belongs to (the directory holding its common `.git`), when it says. */
function repositoryOfWorktree(path: string): string | undefined {
  const gitdir = gitdirOf(path);
  // <repo>/.git/worktrees/<name>
  return gitdir && /\/\.git\/worktrees\/[^/]+$/.test(gitdir) ? resolve(gitdir, '..', '..', '..') : undefined;
}

async function branchExists(repo: string, branch: string): Promise<boolean> {
  const found = await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], {
    allow: [1],
  });
  return found.exitCode === 0;
}

/**
 * The repository's default branch: the one its `origin` names as HEAD (when a local branch of that name exists),
 * else the branch its main working tree has checked out.
 */
export async function defaultBranch(repo: string): Promise<string> {
  const remote = await git(repo, ['symbolic-ref', '--quiet', '--short', 'refs/remotes/origin/HEAD'], {
    allow: [1, 128],
  });
  const named = remote.exitCode === 0 ? remote.stdout.trim().replace(/^origin\//, '') : '';
  if (named && (await branchExists(repo, named))) return named;
  const head = await git(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD'], { allow: [1, 128] });
  if (head.exitCode === 0 && head.stdout.trim()) return head.stdout.trim();
  throw new GitError(
    'symbolic-ref',
    `${repo} has no default branch (its HEAD is detached): set default_branch on the rig or base_branch on the agent`,
    undefined,
  );
}

/** Files with uncommitted changes, untracked ones included (what git ignores is not work). */
export async function changedFiles(worktree: string): Promise<string[]> {
  const status = await git(worktree, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
  return porcelainPaths(status.stdout);
}

/** Commits on `branch` its `base` lacks (ahead), and the reverse (behind). */
export async function distance(repo: string, base: string, branch: string): Promise<{ ahead: number; behind: number }> {
  const counts = await git(repo, ['rev-list', '--left-right', '--count', `refs/heads/${base}...refs/heads/${branch}`]);
  const [behind, ahead] = counts.stdout.trim().split(/\s+/).map(Number);
  return { ahead: ahead ?? 0, behind: behind ?? 0 };
}

function describeFiles(files: string[]): string {
  const shown = files.slice(0, 3).join(', ');
  return files.length > 3 ? `${shown} and ${files.length - 3} more` : shown;
}

export function reasonOf(err: unknown): string {
  if (err instanceof GitError) return err.message;
  return (err as Error).message ?? String(err);
}
