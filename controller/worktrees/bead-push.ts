import { repositoryTransportOverrides, TRANSPORT_PROGRAMS_QUERY, configArgs } from '../git-safety.js';
import { BEAD_TRAILER, trailerValues, withTrailer } from './commit-trailer.js';
import { git, GitError } from './git.js';

/** Bead metadata of a branch pushed for it (`merge = "push"`): the commit, the remote and the ref it went to. */
export const PUSHED = 'ctl.pushed';
export const PUSHED_REMOTE = 'ctl.pushed_remote';
export const PUSHED_REF = 'ctl.pushed_ref';
/** Why the last push of the bead's branch failed (cleared by the next that succeeds). */
export const PUSH_ERROR = 'ctl.push_error';

/** The remote a rig's branches are pushed to when it names none (`[[rigs]] remote`). */
export const DEFAULT_REMOTE = 'origin';

/**
 * A push is stopped after this long (a remote that hangs fails the push, never the controller): long enough for
 * a large first push over a slow link. `CTL_TEST_PUSH_TIMEOUT_MS` shortens it for a test.
 */
export const PUSH_TIMEOUT_MS = Number(process.env.CTL_TEST_PUSH_TIMEOUT_MS) || 5 * 60_000;

/** What a push is asked to do. */
export interface PushRequest {
  /** The repository (the rig's main working tree) holding the branch. */
  repo: string;
  branch: string;
  /** The branch it started from: its commits are not the session's and are never rewritten. */
  base?: string;
  /** The rig's remote (`origin`, or its `remote`). */
  remote: string;
  bead: string;
  /** What a previous push of this bead left on the remote, when it went to the same remote and ref: the lease. */
  previous?: string;
  /** Whether the branch itself moves to the commits with the trailer (its worktree is on this machine). */
  moveBranch: boolean;
  /** What to push instead of the branch's head: a review's commit as rebased and checked by the merge queue. */
  head?: string;
}

export type PushOutcome =
  | {
      kind: 'pushed';
      remote: string;
      ref: string;
      commit: string;
      /** The remote's ref was moved to a commit that does not contain its old one (the lease held). */
      forced: boolean;
      /** How many of the branch's commits were given the trailer. */
      stamped: number;
    }
  | { kind: 'failed'; remote: string; ref: string; reason: string };

/** The metadata a bead records of a push's outcome. */
export function pushMetadata(outcome: PushOutcome): Record<string, string> {
  return outcome.kind === 'pushed'
    ? { [PUSHED]: outcome.commit, [PUSHED_REMOTE]: outcome.remote, [PUSHED_REF]: outcome.ref, [PUSH_ERROR]: '' }
    : { [PUSH_ERROR]: outcome.reason };
}

/**
 * The lease of a bead's next push: the commit its last push left, when that went to the same remote and ref.
 * A bead sent back and pushed again moves its own ref even when its branch was rebased in between, and only
 * while the remote still has what ctl put there.
 */
export function previousPush(metadata: Record<string, string> | undefined, remote: string, branch: string) {
  const sha = metadata?.[PUSHED];
  return sha && metadata[PUSHED_REMOTE] === remote && metadata[PUSHED_REF] === `refs/heads/${branch}` ? sha : undefined;
}

/**
 * A session's branch to `refs/heads/<branch>` of the rig's remote, each of its own commits carrying the bead's
 * trailer (`Ctl-Bead: <id>`): those that carry none are rewritten first (`stampBranch`). Never forced unless
 * the bead was pushed before to the same ref, and then only with a lease on what that push left there. Bounded
 * in time; never prompts; credentials are the person's (their helpers and ssh keys; the repository's own
 * helpers are not run: git-safety.ts). Never throws: a failure is the outcome's reason, with nothing changed but
 * the trailers.
 */
export async function pushBranch(request: PushRequest): Promise<PushOutcome> {
  const ref = `refs/heads/${request.branch}`;
  const failed = (reason: string): PushOutcome => ({ kind: 'failed', remote: request.remote, ref, reason });
  try {
    const known = await git(request.repo, ['remote'], {});
    if (!known.stdout.split('\n').includes(request.remote)) {
      return failed(`the repository ${request.repo} has no remote ${request.remote}`);
    }
    const { commit, stamped } = await stampBranch(request);
    const transport = repositoryTransportOverrides(
      (await git(request.repo, TRANSPORT_PROGRAMS_QUERY, { allow: [1] })).stdout,
    );
    const pushed = await git(
      request.repo,
      [
        ...configArgs(['push.gpgSign=false', ...transport]),
        'push',
        '--porcelain',
        '--no-verify',
        ...(request.previous ? [`--force-with-lease=${ref}:${request.previous}`] : []),
        request.remote,
        `${commit}:${ref}`,
      ],
      { allow: [1, 128], timeoutMs: PUSH_TIMEOUT_MS, ownGroup: true },
    );
    const line = pushed.stdout.split('\n').find((l) => l.endsWith(`:${ref}`) || l.includes(`:${ref}\t`));
    if (pushed.exitCode !== 0 || !line || line.startsWith('!')) return failed(refusal(pushed.stdout, pushed.stderr));
    return { kind: 'pushed', remote: request.remote, ref, commit, forced: line.startsWith('+'), stamped };
  } catch (err) {
    return failed(withoutCredentials(err instanceof GitError ? err.message : (err as Error).message));
  }
}

/**
 * The branch's own commits — those its base, the remote's branches and the bead's previous push lack — each with
 * the bead's trailer: a commit that carries no `Ctl-Bead` trailer gets this bead's, and a commit above a rewritten
 * one is written again on its new parent. Only messages change: every tree, author and committer (names and
 * dates) is kept, so the worktree's files and index match the new head as they did the old one, and stamping the
 * same commits again gives the same commits. The branch moves to the new head (`moveBranch`) only if it has not
 * moved meanwhile. A commit that already has a `Ctl-Bead` trailer (this bead's, or an earlier bead's of the same
 * session) is kept as it is unless its parent changed.
 */
export async function stampBranch(request: PushRequest): Promise<{ commit: string; stamped: number }> {
  const ref = `refs/heads/${request.branch}`;
  const head = request.head ?? (await git(request.repo, ['rev-parse', '--verify', `${ref}^{commit}`])).stdout.trim();
  const exclude = [
    ...(request.base ? [`^refs/heads/${request.base}`] : []),
    ...(request.previous && (await exists(request.repo, request.previous)) ? [`^${request.previous}`] : []),
  ];
  const listed = await git(request.repo, [
    'rev-list',
    '--reverse',
    '--topo-order',
    '--parents',
    head,
    ...exclude,
    '--not',
    `--remotes=${request.remote}`,
  ]);
  const rewritten = new Map<string, string>();
  let stamped = 0;
  for (const line of listed.stdout.split('\n').filter(Boolean)) {
    const [sha, ...parents] = line.split(' ') as [string, ...string[]];
    const object = (await git(request.repo, ['cat-file', 'commit', sha])).stdout;
    const split = object.indexOf('\n\n');
    const headers = object.slice(0, split < 0 ? object.length : split).split('\n');
    const message = split < 0 ? '' : object.slice(split + 2);
    const needsTrailer = trailerValues(message, BEAD_TRAILER).length === 0;
    const newParents = parents.map((p) => rewritten.get(p) ?? p);
    if (!needsTrailer && newParents.every((p, i) => p === parents[i])) continue;
    const tree = headers.find((h) => h.startsWith('tree '))!.slice(5);
    const created = await git(request.repo, ['commit-tree', tree, ...newParents.flatMap((p) => ['-p', p]), '-F', '-'], {
      input: needsTrailer ? withTrailer(message, BEAD_TRAILER, request.bead) : message,
      env: { ...identityOf(headers, 'author', 'AUTHOR'), ...identityOf(headers, 'committer', 'COMMITTER') },
    });
    rewritten.set(sha, created.stdout.trim());
    if (needsTrailer) stamped += 1;
  }
  const commit = rewritten.get(head) ?? head;
  if (commit !== head && request.moveBranch) {
    await git(request.repo, ['update-ref', '-m', `ctl: ${BEAD_TRAILER} ${request.bead}`, ref, commit, head]);
  }
  return { commit, stamped };
}

/** `GIT_AUTHOR_NAME`/`_EMAIL`/`_DATE` (or the committer's) from a commit's header, so a rewrite keeps them. */
function identityOf(headers: string[], header: string, name: string): Record<string, string> {
  const line = headers.find((h) => h.startsWith(`${header} `));
  const match = line ? /^\S+ (.*) <(.*)> (\d+ [+-]\d{4})$/.exec(line) : null;
  if (!match) return {};
  return {
    [`GIT_${name}_NAME`]: match[1]!,
    [`GIT_${name}_EMAIL`]: match[2]!,
    [`GIT_${name}_DATE`]: `@${match[3]!}`,
  };
}

async function exists(repo: string, sha: string): Promise<boolean> {
  return (await git(repo, ['cat-file', '-e', `${sha}^{commit}`], { allow: [1, 128] })).exitCode === 0;
}

/** Why the remote or git refused the push, in one line: the ref's `[rejected] (…)` when there is one. */
function refusal(stdout: string, stderr: string): string {
  const rejected = stdout.split('\n').find((l) => l.startsWith('!'));
  if (rejected) {
    const [, , summary] = rejected.split('\t');
    return withoutCredentials(`the remote refused it: ${summary ?? 'rejected'}`);
  }
  const lines = stderr.split('\n').map((l) => l.trim());
  const said =
    lines.find((l) => /^fatal:/.test(l)) ??
    lines.find((l) => /^error:/.test(l)) ??
    lines.find(Boolean) ??
    'push failed';
  return withoutCredentials(said.replace(/^(fatal|error): /, ''));
}

/** A URL's `user:password@` never reaches a bead, an event or a log. */
function withoutCredentials(text: string): string {
  return text.replace(/(\w+:\/\/)[^/@\s]+@/g, '$1');
}
