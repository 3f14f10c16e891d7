import { configArgs, REPOSITORY_DRIVERS_QUERY, repositoryDriverOverrides, SAFE_GIT_CONFIG } from '../git-safety.js';

/** A git command that takes longer than this is stopped and fails. */
export const GIT_TIMEOUT_MS = 60_000;
/**
 * What writes a whole tree of files (`worktree add`, a rebase) gets longer: a 10,000-file checkout took a minute on
 * a loaded two-core machine, and a rig can be ten times that.
 */
export const GIT_CHECKOUT_TIMEOUT_MS = 10 * 60_000;

/** A git command that failed: git's own reason (its `fatal:`/`error:` line), and the command. */
export class GitError extends Error {
  constructor(
    readonly command: string,
    readonly reason: string,
    readonly exitCode: number | undefined,
  ) {
    super(`git ${command}: ${reason}`);
  }
}

export interface GitResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * Runs the machine's git in `cwd`, bounded in time, with an environment that cannot redirect it (no inherited
 * `GIT_DIR` or `GIT_WORK_TREE`, never a terminal prompt, messages in English so a reason reads the same
 * everywhere), and none of the repository's own programs run (hooks, fsmonitor, and — for what checks out,
 * merges or reads status — its filters and merge drivers: git-safety.ts). `env`: what one command is given on top
 * (a host's `GIT_SSH_COMMAND`, a rewritten commit's author); `input`: its standard input. With `allow`, those exit codes are
 * answers (merge-tree's 1: conflicts), not failures.
 *
 * execa rather than simple-git: worktree, merge-tree and update-ref have no typed wrapper there, and the exit
 * code and both streams are what we read.
 */
export async function git(
  cwd: string,
  args: string[],
  options: {
    allow?: number[];
    timeoutMs?: number;
    env?: Record<string, string>;
    input?: string;
    /**
     * Run in a process group of its own, the whole group killed at the time-out: for what starts programs that
     * outlive a killed git and hold its output open (a push's `git-remote-http`, `ssh`).
     */
    ownGroup?: boolean;
  } = {},
): Promise<GitResult> {
  const drivers = RUNS_DRIVERS.has(args.find((a, i) => !a.startsWith('-') && args[i - 1] !== '-c') ?? '')
    ? repositoryDriverOverrides((await spawnGit(cwd, REPOSITORY_DRIVERS_QUERY, GIT_TIMEOUT_MS)).stdout)
    : [];
  const result = await spawnGit(
    cwd,
    [...configArgs(drivers), ...args],
    options.timeoutMs ?? GIT_TIMEOUT_MS,
    options.env,
    options.input,
    options.ownGroup,
  );
  // Named by its subcommand and first operand (`worktree add`), not its `-c` settings or options.
  const command = args
    .filter((a, i) => !a.startsWith('-') && args[i - 1] !== '-c')
    .slice(0, 2)
    .join(' ');
  if (result.timedOut) {
    throw new GitError(command, `timed out after ${(options.timeoutMs ?? GIT_TIMEOUT_MS) / 1000} s`, undefined);
  }
  if (result.failed && result.exitCode === undefined) {
    throw new GitError(command, result.shortMessage ?? 'could not run git', undefined);
  }
  const exitCode = result.exitCode ?? 1;
  if (exitCode !== 0 && !(options.allow ?? []).includes(exitCode)) {
    throw new GitError(command, reasonOf(String(result.stderr), String(result.stdout)), exitCode);
  }
  return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode };
}

/** The subcommands that check files out, merge or read status: what may run a filter or a merge driver. */
const RUNS_DRIVERS = new Set(['worktree', 'merge', 'merge-tree', 'rebase', 'status', 'checkout']);

async function spawnGit(
  cwd: string,
  args: readonly string[],
  timeoutMs: number,
  extra: Record<string, string> = {},
  input?: string,
  ownGroup = false,
) {
  // Loaded on first use: a city without worktree agents never runs git from here.
  const { execa } = await import('execa');
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  const child = execa('git', [...configArgs(SAFE_GIT_CONFIG), ...args], {
    cwd,
    env: { ...env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C', GIT_OPTIONAL_LOCKS: '0', ...extra },
    extendEnv: false,
    reject: false,
    ...(input === undefined ? { stdin: 'ignore' as const } : { input }),
    maxBuffer: 16 * 1024 * 1024,
    ...(ownGroup ? { detached: true } : { timeout: timeoutMs }),
  });
  if (!ownGroup) return child;
  // execa's time-out kills git alone, and waits for its output to close, which a surviving child holds open.
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }, timeoutMs);
  try {
    const result = await child;
    return { ...result, timedOut: result.timedOut || timedOut };
  } finally {
    clearTimeout(timer);
  }
}

/** git's own reason: its `fatal:` or `error:` line, else its first line. */
function reasonOf(stderr: string, stdout: string): string {
  const lines = `${stderr}\n${stdout}`.split('\n').map((l) => l.trim());
  const said = lines.find((l) => /^(fatal|error):/.test(l)) ?? lines.find((l) => l !== '') ?? 'git failed';
  // A push says only "failed to push some refs" there; why each ref was refused is on its own `!` line.
  const refused = lines.filter((l) => /^\s*! \[/.test(l)).map((l) => l.trim());
  const reason = said.replace(/^(fatal|error): /, '');
  return refused.length && /failed to push/.test(reason) ? `${reason}: ${refused.join('; ')}` : reason;
}

/** The paths of `git status --porcelain=v1 -z`: files with uncommitted changes. */
export function porcelainPaths(stdout: string): string[] {
  return stdout
    .split('\0')
    .filter((entry) => entry.length > 3)
    .map((entry) => entry.slice(3));
}
