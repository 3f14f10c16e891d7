import { statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The top of the git working tree holding `dir` (a directory with a `.git` directory or file), found by walking
 * up as git does, without running git: agents are resolved synchronously on every configuration load.
 */
export function repositoryOf(dir: string): string | undefined {
  let at = resolve(dir);
  for (;;) {
    if (statSync(join(at, '.git'), { throwIfNoEntry: false }) !== undefined) return at;
    const up = dirname(at);
    if (up === at) return undefined;
    at = up;
  }
}

/** Whether `path` is `dir` or inside it. */
export function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith('/'));
}

/** Where a city keeps its sessions' worktrees: `<city>/.ctl/worktrees` (see docs/architecture/sessions.md). */
export function worktreesRoot(cityRoot: string): string {
  return join(cityRoot, '.ctl', 'worktrees');
}
