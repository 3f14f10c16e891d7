import { execFileSync } from 'node:child_process';
import { configArgs, SAFE_GIT_CONFIG } from '../git-safety.js';

/**
 * The remotes a repository names (`git remote`), read synchronously — agents are resolved on every configuration
 * load — bounded in time, with none of the repository's programs run. A repository git cannot read names none.
 */
export function remotesOf(repo: string): string[] {
  try {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
    const out = execFileSync('git', [...configArgs(SAFE_GIT_CONFIG), 'remote'], {
      cwd: repo,
      env: { ...env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'ignore'],
      encoding: 'utf8',
      timeout: 5_000,
    });
    return out.split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Why a rig's `remote` (or `origin`, when it names none and a push needs one) cannot be pushed to: it is not a
 * remote of the repository. `undefined`: it is one, or nothing asks for one.
 */
export function remoteProblem(
  repo: string,
  remote: { name: string; configured: boolean },
  pushes: boolean,
  remotes: (repo: string) => string[] = remotesOf,
): string | undefined {
  if (!remote.configured && !pushes) return undefined;
  const known = remotes(repo);
  if (known.includes(remote.name)) return undefined;
  const which = remote.configured ? `its rig's remote = "${remote.name}"` : `merge = "push" pushes to ${remote.name}`;
  const has = known.length ? `its remotes are ${known.join(', ')}` : 'it has no remote';
  return `${which}, which is not a remote of ${repo} (${has}): add it (git remote add ${remote.name} URL) or set the rig's remote`;
}
