import { closeSync, fstatSync, openSync, statSync } from 'node:fs';
import fsExt from 'fs-ext';

/**
 * An exclusive advisory lock (flock(2)) on a lock file, shared by every process that writes one log.
 * flock is released by the kernel when its holder dies, so a writer killed with -9 never wedges the others —
 * the reason we take a native addon (fs-ext) over lock files that need stale-lock guessing.
 */
export class FileLock {
  private fd: number;

  constructor(private readonly path: string) {
    this.fd = openSync(path, 'a');
  }

  /**
   * Takes the lock, without blocking the event loop when another process holds it. A lock file that was
   * deleted and created again (a city directory removed and re-created) is reopened, so that every process
   * locks the same file.
   */
  async acquire(): Promise<void> {
    for (;;) {
      await this.lockHeldFile();
      if (this.isCurrentFile()) return;
      fsExt.flockSync(this.fd, 'un');
      closeSync(this.fd);
      this.fd = openSync(this.path, 'a');
    }
  }

  private async lockHeldFile(): Promise<void> {
    try {
      fsExt.flockSync(this.fd, 'exnb');
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw err;
    }
    // Contended: wait in libuv's thread pool instead of spinning.
    await new Promise<void>((resolve, reject) => {
      fsExt.flock(this.fd, 'ex', (err) => (err ? reject(err) : resolve()));
    });
  }

  private isCurrentFile(): boolean {
    try {
      return statSync(this.path).ino === fstatSync(this.fd).ino;
    } catch {
      return false;
    }
  }

  /** Takes the lock if it is free; false when another open file description holds it. */
  tryAcquire(): boolean {
    try {
      fsExt.flockSync(this.fd, 'exnb');
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
      throw err;
    }
  }

  release(): void {
    fsExt.flockSync(this.fd, 'un');
  }

  close(): void {
    closeSync(this.fd);
  }
}
