import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Replaces a file so that readers (and a crash) see either the old or the new content, never a mix. The new file
 * has `mode` when one is given (to keep a file's own, say), else 0600.
 */
export function writeFileAtomic(path: string, content: string, options: { mode?: number } = {}): void {
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    try {
      if (options.mode !== undefined) fchmodSync(fd, options.mode);
      writeSync(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    // A write that did not happen leaves nothing behind.
    rmSync(tmp, { force: true });
    throw err;
  }
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
