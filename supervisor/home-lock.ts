import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { FileLock } from '../shared/fs/file-lock.js';
import { readPid } from '../shared/fs/pid-file.js';
import type { HomePaths } from '../shared/paths.js';
import { writeFileAtomic } from '../shared/atomic-write.js';

export class HomeLockedError extends Error {}

/**
 * One supervisor per `$CTL_HOME`: an flock on `supervisor.lock` (released by the kernel if we die) plus a pid
 * file for `ctl supervisor stop`. A pid file found at start means the previous supervisor did not exit cleanly.
 */
export class HomeLock {
  private lock: FileLock | undefined;

  constructor(private readonly paths: HomePaths) {}

  /** Takes the lock; returns how the previous supervisor ended. */
  acquire(): 'clean' | 'crash' | 'unknown' {
    mkdirSync(this.paths.home, { recursive: true, mode: 0o700 });
    const lock = new FileLock(this.paths.lock);
    if (!lock.tryAcquire()) {
      lock.close();
      const pid = readPid(this.paths.pid);
      throw new HomeLockedError(
        `another supervisor is already running for ${this.paths.home}${pid ? ` (pid ${pid})` : ''}`,
      );
    }
    this.lock = lock;
    const previous = existsSync(this.paths.pid) ? 'crash' : existsSync(this.paths.registry) ? 'clean' : 'unknown';
    writeFileAtomic(this.paths.pid, `${process.pid}\n`);
    return previous;
  }

  release(): void {
    rmSync(this.paths.address, { force: true });
    rmSync(this.paths.pid, { force: true });
    this.lock?.release();
    this.lock?.close();
    this.lock = undefined;
  }
}
