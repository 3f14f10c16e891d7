import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Makes a city's `.ctl/` its controller's user's alone: the directory 0700, and everything already in it without
 * group or other permissions (0600 files, 0700 directories), so a city made by an older version, or files copied
 * in, are closed too. What is created in it later is out of every other account's reach through the directory's
 * own mode, whatever the umask gave it. Symbolic links are left alone (their target is not ours to change).
 */
export function makeRuntimeDirPrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  closeEntries(dir);
}

function closeEntries(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    const mode = lstatSync(path).mode & 0o777;
    if (entry.isDirectory()) {
      if (mode & 0o077) chmodSync(path, mode & 0o700);
      closeEntries(path);
    } else if (mode & 0o077) {
      chmodSync(path, mode & 0o700);
    }
  }
}

/**
 * Refuses a socket directory another account owns (a `ctl-<uid>` in a shared /tmp someone made first could let
 * them replace our socket), and closes one we own to 0700.
 */
export function ensureOwnSocketDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  const uid = process.geteuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    throw new Error(`the socket directory ${dir} is not a directory of ours; remove it`);
  }
  if (stat.mode & 0o077) chmodSync(dir, 0o700);
}
