import { closeSync, fstatSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { FileLock } from '../../shared/fs/file-lock.js';
import { tempDir } from '../helpers/temp-dir.js';

describe('FileLock', function () {
  let root: string;

  beforeEach(function () {
    root = tempDir('ctl-lock-');
  });

  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });

  it('never touches a descriptor it closed: after its directory vanished, a reused number stays its owner’s', async function () {
    const dir = join(root, 'city', '.ctl');
    mkdirSync(dir, { recursive: true });
    const lock = new FileLock(join(dir, 'events.lock'));
    await lock.acquire();
    lock.release();
    rmSync(join(root, 'city'), { recursive: true });

    // The lock file is gone: reopening it fails, and the lock must not keep the closed number.
    let failure: unknown;
    await lock.acquire().catch((err: unknown) => (failure = err));
    expect((failure as NodeJS.ErrnoException).code).to.equal('ENOENT');

    // The lowest free number is the one the lock just closed: another file takes it.
    const other = join(root, 'other.lock');
    const otherFd = openSync(other, 'a');
    try {
      await lock.acquire().catch(() => undefined);
      lock.release();
      lock.close();
      // Still open (not closed under its owner) and not locked by the FileLock.
      expect(() => fstatSync(otherFd)).to.not.throw();
      const probe = new FileLock(other);
      try {
        expect(probe.tryAcquire(), 'the other file is not flocked').to.equal(true);
      } finally {
        probe.close();
      }
    } finally {
      closeSync(otherFd);
    }
  });

  it('works again once its lock file can be opened again', async function () {
    const dir = join(root, 'city');
    mkdirSync(dir);
    const path = join(dir, 'events.lock');
    const lock = new FileLock(path);
    rmSync(dir, { recursive: true });
    await lock.acquire().then(
      () => expect.fail('acquired a lock whose file is gone'),
      (err: NodeJS.ErrnoException) => expect(err.code).to.equal('ENOENT'),
    );
    mkdirSync(dir);
    await lock.acquire();
    const rival = new FileLock(path);
    try {
      expect(rival.tryAcquire(), 'held by the first lock').to.equal(false);
      lock.release();
      expect(rival.tryAcquire()).to.equal(true);
    } finally {
      rival.close();
      lock.close();
    }
  });

  it('close() is safe to call twice', function () {
    const lock = new FileLock(join(root, 'x.lock'));
    lock.close();
    expect(() => lock.close()).to.not.throw();
  });
});
