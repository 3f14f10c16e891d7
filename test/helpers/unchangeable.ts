import { execFileSync } from 'node:child_process';
import { chmodSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Makes `file` impossible to change until the returned function undoes it, however a writer goes about it:
 * rewritten in place, replaced through a temporary file and a rename, deleted. It can still be read. Root
 * ignores permission bits, so as root the file is made immutable (`chattr +i`, which binds root too);
 * otherwise the file and its directory lose their write permission (replacing or deleting a file writes to
 * its directory), so nothing new can be created in that directory meanwhile either.
 *
 * Undo it in a `finally`: an immutable file cannot be deleted, so a test's temporary root would stay behind.
 */
export function makeUnchangeable(file: string): () => void {
  if (process.getuid?.() === 0) {
    try {
      execFileSync('chattr', ['+i', file], { stdio: 'pipe' });
    } catch (err) {
      const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
      throw new Error(`chattr +i ${file} failed (does this filesystem support it?): ${stderr ?? String(err)}`, {
        cause: err,
      });
    }
    return () => execFileSync('chattr', ['-i', file], { stdio: 'pipe' });
  }
  const dir = dirname(file);
  const modes = [file, dir].map((path) => [path, statSync(path).mode & 0o7777] as const);
  for (const [path, mode] of modes) chmodSync(path, mode & ~0o222);
  return () => {
    for (const [path, mode] of modes.reverse()) chmodSync(path, mode);
  };
}
