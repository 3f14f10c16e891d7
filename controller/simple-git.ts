import type { SimpleGit, SimpleGitOptions, simpleGit } from 'simple-git';
import { SAFE_GIT_CONFIG, SAFE_GIT_CONFIG_ALLOWED } from './git-safety.js';

/**
 * simple-git's factory, loaded on first use: a controller runs git only to clone a rig, report a rig's status or
 * fetch a pack, and simple-git with its dependencies is code every controller would otherwise compile before it
 * reports ready. Every instance it makes runs git with ctl's safe settings (git-safety.ts) before any of its own.
 */
export async function loadSimpleGit(): Promise<typeof simpleGit> {
  const make = (await import('simple-git')).simpleGit;
  return (baseDir?: string | Partial<SimpleGitOptions>, options?: Partial<SimpleGitOptions>): SimpleGit => {
    const given = typeof baseDir === 'string' ? { ...options, baseDir } : { ...baseDir };
    return make({
      ...given,
      config: [...SAFE_GIT_CONFIG, ...(given.config ?? [])],
      unsafe: { ...SAFE_GIT_CONFIG_ALLOWED, ...given.unsafe },
    });
  };
}
