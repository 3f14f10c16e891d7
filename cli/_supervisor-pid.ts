import { existsSync } from 'node:fs';
import { resolveApiBase } from '../shared/api-client.js';
import { FileLock } from '../shared/fs/file-lock.js';
import { readPid } from '../shared/fs/pid-file.js';
import { ctlHome, homePaths } from '../shared/paths.js';

/**
 * The pid of the supervisor running for `$CTL_HOME`, if one is. The supervisor holds an flock on
 * `supervisor.lock` for as long as it runs, so a free lock means none runs, whatever a stale pid file says.
 */
export function supervisorPid(): number | undefined {
  const paths = homePaths(ctlHome());
  if (!existsSync(paths.lock)) return undefined;
  const lock = new FileLock(paths.lock);
  try {
    if (lock.tryAcquire()) {
      lock.release();
      return undefined;
    }
  } finally {
    lock.close();
  }
  return readPid(paths.pid);
}

/**
 * The pid of `$CTL_HOME`'s running supervisor when `base` is where it listens (by `supervisor.toml`), so a
 * message about the API at `base` can name that process; undefined when that cannot be known.
 */
export function supervisorPidAt(base: string): number | undefined {
  try {
    if (resolveApiBase(undefined, { ...process.env, CTL_API: '' }) !== base) return undefined;
  } catch {
    return undefined; // an unreadable supervisor.toml: no address to compare with
  }
  return supervisorPid();
}
