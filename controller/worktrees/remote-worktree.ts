import { createHash } from 'node:crypto';
import { basename, posix } from 'node:path';
import { KeyedSerial } from '../../shared/serial.js';
import type { Host, HostGitRepository } from '../hosts/host.js';
import { git, GIT_CHECKOUT_TIMEOUT_MS, GitError, porcelainPaths } from './git.js';

/** Where in its directory on a host a session works there: its worktree, or a plain directory without one. */
export const HOST_WORK_DIR = 'work';
/** Where the host's repository keeps a rig's copy of a session's branch, for a worktree made again there. */
const RIG_BRANCHES = 'refs/ctl/rig';
/** A short command on the host (its repository made, a status): a checkout gets GIT_CHECKOUT_TIMEOUT_MS. */
const SHORT_MS = 60_000;
/** What every git on the host is given: none of a repository's own programs run (as git-safety.ts here). */
const SAFE = 'g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c commit.gpgSign=false "$@"; }';

/** The fields of a session's record its worktree on a host reads. */
export interface RemoteWorktreeRecord {
  id: string;
  branch: string;
  worktree_repo: string;
  worktree_subdir?: string;
}

/** The directory a session on a remote host works in there: its worktree (and subdir), or its plain `work`. */
export function workDirOnHost(host: Host, record: { id: string; worktree?: string; worktree_subdir?: string }): string {
  const top = posix.join(host.sessionDir(record.id, ''), HOST_WORK_DIR);
  return record.worktree && record.worktree_subdir ? posix.join(top, record.worktree_subdir) : top;
}

/** The name of a rig's repository on a host: its directory's name and a digest of its path (two rigs of one name). */
export function repositoryName(repo: string): string {
  const digest = createHash('sha256').update(repo).digest('hex').slice(0, 12);
  return `${basename(repo).replace(/[^\w.-]/g, '_')}-${digest}`;
}

/**
 * The host's half of making a session's worktree (`sh -c` with the repository, the worktree, the branch and the
 * base): nothing to do when it is there; git's record of one that is gone pruned; the branch made — from the rig's
 * copy of it when the rig has one (the host lost it), else from the base — and checked out. A worktree whose
 * `.git` git no longer knows may hold work: it is left alone, and said (exit 3).
 */
export const MAKE_WORKTREE = [
  'set -e',
  SAFE,
  'repo=$1 work=$2 branch=$3 base=$4',
  'if [ -f "$work/.git" ]; then',
  '  if g -C "$work" rev-parse --git-dir >/dev/null 2>&1; then exit 0; fi',
  '  echo "its worktree $work on the host is broken (git no longer knows it): move it away, and the next start makes a new one from $branch" >&2',
  '  exit 3',
  'fi',
  'rm -rf "$work"',
  'g -C "$repo" worktree prune',
  `if ! g -C "$repo" rev-parse --verify --quiet "refs/heads/$branch^{commit}" >/dev/null; then`,
  `  if g -C "$repo" rev-parse --verify --quiet "${RIG_BRANCHES}/$branch^{commit}" >/dev/null; then`,
  `    g -C "$repo" branch --quiet --no-track "$branch" "${RIG_BRANCHES}/$branch"`,
  '  else',
  '    g -C "$repo" branch --quiet --no-track "$branch" "refs/heads/$base"',
  '  fi',
  'fi',
  'mkdir -p "$(dirname "$work")"',
  'g -C "$repo" worktree add --quiet "$work" "$branch"',
].join('\n');

/** The host's half of removing a session's worktree and its branch there (`sh -c` with the same arguments). */
export const REMOVE_WORKTREE = [
  SAFE,
  'repo=$1 work=$2 branch=$3',
  'g -C "$repo" worktree remove --force "$work" 2>/dev/null || rm -rf "$work"',
  'g -C "$repo" worktree prune',
  'g -C "$repo" branch -D --quiet "$branch" 2>/dev/null',
  `g -C "$repo" update-ref -d "${RIG_BRANCHES}/$branch" 2>/dev/null`,
  'true',
].join('\n');

/**
 * The host's half of a rebase of a session's branch onto its base (`sh -c` with the worktree and the base): a
 * committer of ctl's own when the host names none (commits keep their authors); a rebase git cannot finish is
 * abandoned (exit 1), the branch left as it was.
 */
export const REBASE_WORKTREE = [
  SAFE,
  'work=$1 base=$2',
  'set --',
  'g -C "$work" config user.email >/dev/null || set -- -c user.name=ctl -c user.email=ctl@localhost',
  'g -C "$work" "$@" rebase --quiet "$base" >/dev/null 2>&1 && exit 0',
  'g -C "$work" rebase --abort >/dev/null 2>&1',
  'exit 1',
].join('\n');

/** What a push of a session's start sends: the base, and the rig's copy of its branch when the rig has one. */
export function pushRefspecs(base: string, branch: string, rigHasBranch: boolean): string[] {
  return [
    `+refs/heads/${base}:refs/heads/${base}`,
    ...(rigHasBranch ? [`+refs/heads/${branch}:${RIG_BRANCHES}/${branch}`] : []),
  ];
}

/**
 * A session's worktree on a remote host (`SessionWorktrees` uses it for a session whose host is remote): the rig
 * stays on this machine, and the host has a bare repository of its own per rig (`<city dir there>/repos/`) that
 * this machine's git pushes the session's base into and fetches its branch back from, over the host's one
 * connection (`Host.gitRepository`: the host cannot reach this machine). The worktree is `<session dir there>/work`
 * on branch `ctl/<agent>/<session>`; the rig's `refs/heads/<that branch>` is the host's as last fetched, which is
 * what a bead's close records and merges, as for a worktree here. Fetches of one session go one at a time.
 */
export class RemoteWorktree {
  private static readonly fetches = new KeyedSerial();
  /**
   * Pushes into one repository on one host go one at a time: two sessions of a rig starting there at once would
   * otherwise race for the lock of its base ref, and the loser's start would fail.
   */
  private static readonly pushes = new KeyedSerial();

  constructor(private readonly host: Host) {}

  /** Makes the worktree there (pushing the base first) unless it is there; resolves with the program's directory. */
  async prepare(record: RemoteWorktreeRecord, base: string): Promise<string> {
    await this.host.prepare();
    const remote = this.repository(record);
    await this.pushing(remote, async () => {
      const made = await this.host.run(['sh', '-c', `[ -d "$1" ] || git init --bare --quiet "$1"`, 'sh', remote.path], {
        timeoutMs: SHORT_MS,
      });
      if (made.code !== 0) throw hostFailure('init', made.stderr || made.stdout);
      const rigHasBranch = await refExists(record.worktree_repo, `refs/heads/${record.branch}`);
      await git(
        record.worktree_repo,
        [
          'push',
          '--quiet',
          '--no-verify',
          '--no-signed',
          '--no-recurse-submodules',
          remote.url,
          ...pushRefspecs(base, record.branch, rigHasBranch),
        ],
        { env: remote.env, timeoutMs: GIT_CHECKOUT_TIMEOUT_MS },
      );
    });
    const work = workDirOnHost(this.host, { id: record.id });
    const added = await this.host.run(['sh', '-c', MAKE_WORKTREE, 'sh', remote.path, work, record.branch, base], {
      timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
    });
    if (added.code !== 0) throw hostFailure('worktree add', added.stderr || added.stdout);
    const dir = workDirOnHost(this.host, { id: record.id, worktree: work, worktree_subdir: record.worktree_subdir });
    if (dir !== work) {
      // The agent's directory may be one git does not track: made in the worktree too, as here.
      const mkdir = await this.host.run(['mkdir', '-p', dir], { timeoutMs: SHORT_MS });
      if (mkdir.code !== 0) throw hostFailure('worktree add', mkdir.stderr);
    }
    return dir;
  }

  /**
   * The session's branch fetched back into the rig (its `refs/heads/<branch>`); nothing when the host has no such
   * branch (its worktree was never made there). Throws with git's reason.
   */
  fetch(record: RemoteWorktreeRecord): Promise<void> {
    return RemoteWorktree.fetches.run(record.id, async () => {
      await this.host.prepare();
      const remote = this.repository(record);
      const fetched = await git(
        record.worktree_repo,
        [
          'fetch',
          '--quiet',
          '--no-tags',
          '--no-recurse-submodules',
          '--no-write-fetch-head',
          remote.url,
          `+refs/heads/${record.branch}:refs/heads/${record.branch}`,
        ],
        { env: remote.env, timeoutMs: GIT_CHECKOUT_TIMEOUT_MS, allow: [128] },
      );
      if (fetched.exitCode !== 0 && !/couldn't find remote ref/.test(fetched.stderr)) {
        throw new GitError('fetch', saidBy(fetched.stderr), fetched.exitCode);
      }
    });
  }

  /**
   * The branch rebased onto the rig's `base` in the worktree there (that base pushed first), then fetched back:
   * whether git could. Throws when the host cannot be reached.
   */
  async rebase(record: RemoteWorktreeRecord, base: string): Promise<boolean> {
    await this.host.prepare();
    const remote = this.repository(record);
    await this.pushing(remote, () =>
      git(
        record.worktree_repo,
        ['push', '--quiet', '--no-verify', '--no-signed', remote.url, ...pushRefspecs(base, record.branch, false)],
        { env: remote.env, timeoutMs: GIT_CHECKOUT_TIMEOUT_MS },
      ),
    );
    const work = workDirOnHost(this.host, { id: record.id });
    const rebased = await this.host.run(['sh', '-c', REBASE_WORKTREE, 'sh', work, base], {
      timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
    });
    if (rebased.code === null) throw hostFailure('rebase', rebased.stderr || 'no answer from the host');
    await this.fetch(record);
    return rebased.code === 0;
  }

  /** Files with uncommitted changes in the worktree there (none when it is not there). */
  async changedFiles(record: RemoteWorktreeRecord, timeoutMs = SHORT_MS): Promise<string[]> {
    await this.host.prepare();
    const work = workDirOnHost(this.host, { id: record.id });
    const status = await this.host.run(
      [
        'sh',
        '-c',
        `${SAFE}\n[ -f "$1/.git" ] || exit 0\ng -C "$1" status --porcelain=v1 -z --untracked-files=all`,
        'sh',
        work,
      ],
      { timeoutMs },
    );
    if (status.code !== 0) throw hostFailure('status', status.stderr || 'no answer from the host in time');
    return porcelainPaths(status.stdout);
  }

  /** The worktree there and its branch there removed (the rig's branch is the caller's). */
  async remove(record: RemoteWorktreeRecord): Promise<void> {
    await this.host.prepare();
    const remote = this.repository(record);
    const work = workDirOnHost(this.host, { id: record.id });
    const removed = await this.host.run(['sh', '-c', REMOVE_WORKTREE, 'sh', remote.path, work, record.branch], {
      timeoutMs: GIT_CHECKOUT_TIMEOUT_MS,
    });
    if (removed.code !== 0) throw hostFailure('worktree remove', removed.stderr);
  }

  private pushing<T>(remote: HostGitRepository, push: () => Promise<T>): Promise<T> {
    return RemoteWorktree.pushes.run(`${this.host.name}\0${remote.path}`, push);
  }

  private repository(record: RemoteWorktreeRecord): HostGitRepository {
    const remote = this.host.gitRepository(repositoryName(record.worktree_repo));
    if (!remote) throw new Error(`host ${this.host.name} keeps no repositories`);
    return remote;
  }
}

async function refExists(repo: string, ref: string): Promise<boolean> {
  const found = await git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { allow: [1] });
  return found.exitCode === 0;
}

function hostFailure(command: string, said: string): GitError {
  return new GitError(command, `on the host: ${saidBy(said)}`, undefined);
}

/** git's (or sh's) first line, without its `fatal:`. */
function saidBy(said: string): string {
  const line = said
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  return (line ?? 'failed').replace(/^(fatal|error): /, '');
}
