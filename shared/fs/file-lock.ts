import { closeSync, fstatSync, openSync, statSync } from 'node:fs';
import fsExt from 'fs-ext';

/**
 * An exclusive advisory lock (flock(2)) on a lock file, shared by every process that writes one log.
 * flock is released by the kernel when its holder dies, so a writer killed with -9 never wedges the others —
 * the reason we take a native addon (fs-ext) over lock files that need stale-lock guessing.
 *
 * The lock owns at most one descriptor, and forgets its number the moment it closes it: a descriptor number is
 * reused by the next open, socket or file, so acting on a number we closed would lock — or close — someone
 * else's file (a client socket, in the crash that taught us this).
 */
export class FileLock {
  private fd: number | undefined;
  /** A blocking flock waiting in the thread pool on `fd`: closing must wait for it to return. */
  private waiting: Promise<void> | undefined;
  private closeRequested = false;

  constructor(private readonly path: string) {
    this.fd = openSync(path, 'a');
  }

  /**
   * Takes the lock, without blocking the event loop when another process holds it. A lock file that was
   * deleted and created again (a city directory removed and re-created) is reopened, so that every process
   * locks the same file; one that cannot be reopened (its directory is gone) fails the acquire, and the next
   * acquire tries to open it again.
   */
  async acquire(): Promise<void> {
    for (;;) {
      const fd = this.descriptor();
      try {
        await this.lockHeldFile(fd);
      } finally {
        if (this.closeRequested) this.finishClose();
      }
      if (this.fd !== fd) throw new Error(`lock ${this.path} was closed while it was being taken`);
      if (this.isCurrentFile(fd)) return;
      fsExt.flockSync(fd, 'un');
      this.dropDescriptor();
    }
  }

  /** Takes the lock if it is free; false when another open file description holds it. */
  tryAcquire(): boolean {
    try {
      fsExt.flockSync(this.descriptor(), 'exnb');
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
      throw err;
    }
  }

  release(): void {
    if (this.fd !== undefined) fsExt.flockSync(this.fd, 'un');
  }

  /** Closes the descriptor (after any flock still waiting on it returns); the lock can be opened again. */
  close(): void {
    if (this.waiting) this.closeRequested = true;
    else this.dropDescriptor();
  }

  /** The open descriptor, opening the lock file again when an earlier one was dropped. */
  private descriptor(): number {
    this.fd ??= openSync(this.path, 'a');
    return this.fd;
  }

  private dropDescriptor(): void {
    const fd = this.fd;
    // Forget the number before closing it: if close throws, the number is still not ours any more.
    this.fd = undefined;
    if (fd !== undefined) closeSync(fd);
  }

  private finishClose(): void {
    this.closeRequested = false;
    this.dropDescriptor();
  }

  private async lockHeldFile(fd: number): Promise<void> {
    try {
      fsExt.flockSync(fd, 'exnb');
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw err;
    }
    // Contended: wait in libuv's thread pool instead of spinning.
    const waiting = new Promise<void>((resolve, reject) => {
      fsExt.flock(fd, 'ex', (err) => (err ? reject(err) : resolve()));
    });
    this.waiting = waiting;
    try {
      await waiting;
    } finally {
      this.waiting = undefined;
    }
  }

  private isCurrentFile(fd: number): boolean {
    try {
      return statSync(this.path).ino === fstatSync(fd).ino;
    } catch {
      return false;
    }
  }
}
