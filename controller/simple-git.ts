import type { simpleGit } from 'simple-git';

/**
 * simple-git's factory, loaded on first use: a controller runs git only to clone a rig, report a rig's status or
 * fetch a pack, and simple-git with its dependencies is code every controller would otherwise compile before it
 * reports ready.
 */
export async function loadSimpleGit(): Promise<typeof simpleGit> {
  return (await import('simple-git')).simpleGit;
}
