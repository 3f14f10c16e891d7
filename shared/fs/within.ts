import { closeSync, constants, fstatSync, openSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';

// The C library's realpath: one system call per path, where Node's JavaScript one lstat()s every component of
// it (composing a city of 100 pack agents spent 43% of its time there).
const realPathOf = realpathSync.native;
import { sep } from 'node:path';

/**
 * A file whose real path (symbolic links followed, `../` ones and absolute ones alike) lies outside the tree it
 * belongs to — a pack, a rig, the city. Such a file is skipped, never read: a pack fetched from anywhere could
 * otherwise serve `/etc/passwd` or an SSH key as its formula.
 */
export class OutsideTree extends Error {}

/** The real path of a tree's root (the root as given when it does not exist). */
export function realRoot(root: string): string {
  try {
    return realPathOf(root);
  } catch {
    return root;
  }
}

function inside(real: string, root: string): boolean {
  return real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Why `path` may not be read as part of the tree at `root` (`what` names the tree: "the pack"), or undefined when
 * it may (or does not exist: the caller's read says so).
 */
export function outsideTree(path: string, root: string, what: string): string | undefined {
  let real: string;
  try {
    real = realPathOf(path);
  } catch {
    return undefined;
  }
  return inside(real, realRoot(root)) ? undefined : `a symbolic link leading out of ${what}: skipped, not read`;
}

/**
 * Reads a file of the tree at `root` as text, refusing (OutsideTree) one whose real path is outside it. Checked
 * before opening, then again on what was opened (its `/proc/self/fd` link), so a link swapped in between is
 * caught too; opened without following into a FIFO's wait, and only a regular file is read.
 */
export function readWithin(path: string, root: string, what: string): string {
  const why = outsideTree(path, root, what);
  if (why) throw new OutsideTree(why);
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    let opened: string | undefined;
    try {
      opened = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      opened = undefined; // no /proc: the check before opening stands
    }
    if (opened !== undefined && !inside(opened, realRoot(root))) {
      throw new OutsideTree(`a symbolic link leading out of ${what}: skipped, not read`);
    }
    if (!fstatSync(fd).isFile()) throw new OutsideTree('not a regular file: skipped, not read');
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
