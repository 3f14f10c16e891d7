import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CityApi } from './city-api.js';
import { waitForTurn } from './sessions.js';
import { tempDir } from './temp-dir.js';

// A rig as the worktree tests make one: a real git repository that a city's `[[rigs]]` names, worked in by sessions
// of agents with `isolation = "worktree"` whose program is the echo example agent (its `run` runs a shell command
// where the session works). What the tests check is read back from git itself.

/** git in `cwd`, as a person runs it there; its output, trimmed. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

/**
 * A repository `<a temporary folder named prefix…>/<name>` on `main`, with a committer of its own (its worktrees
 * share its config) and `files` (path to content) as its first commit.
 */
export function rigRepository(files: Record<string, string>, where: { prefix: string; name?: string }): string {
  const repo = join(tempDir(where.prefix), where.name ?? 'web');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'dev@example.invalid');
  git(repo, 'config', 'user.name', 'dev');
  for (const [path, content] of Object.entries(files)) writeFileSync(join(repo, path), content);
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  return repo;
}

/** A session's worktree as its view (`GET …/session/{id}`) shows it. */
export interface WorktreeView {
  path: string;
  branch: string;
  base?: string;
  repository?: string;
  head?: string;
  dirty?: boolean;
  ahead?: number;
  behind?: number;
  error?: string;
}

/**
 * Has the session's program run `command` where it works and waits for the turn to end; resolves with what the
 * command printed.
 */
export async function runInSession(api: CityApi, id: string, command: string): Promise<string> {
  const mark = `${Date.now()}-${Math.random()}`;
  await api.post(`/session/${id}/messages`, { message: `run ${command}; echo done-${mark}` });
  const turn = await waitForTurn(api, id, 'assistant', new RegExp(`done-${mark}`));
  return turn.text
    .split('\n')
    .map((l) => l.replace(/^run: /, ''))
    .filter((l) => l !== `done-${mark}`)
    .join('\n');
}

/** Has the session's program write `text` (a printf format) to `file` in its worktree and commit it. */
export function commitInSession(api: CityApi, id: string, file: string, text: string): Promise<string> {
  return runInSession(api, id, `printf '${text}' > ${file} && git add ${file} && git commit -q -m 'edit ${file}'`);
}
