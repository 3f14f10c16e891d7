import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, linkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packageRoot } from '../../shared/paths.js';
import { tempDir } from './temp-dir.js';

const run = promisify(execFile);

/** `ctl` as another account can run it: its own Node and the built bundle, outside the checkout. */
export interface StagedCtl {
  /** The Node binary to run. */
  node: string;
  /** `dist/cli/main.js` of the staged copy. */
  entry: string;
  /** Where it is (a directory every account may enter and read). */
  dir: string;
  remove(): void;
}

/**
 * Stages what another account (`uid`) runs of ctl where it can read it: a checkout need not be readable by
 * anyone else (a clone under a 0700 home, a `mktemp -d`), and an account that cannot enter it cannot run the
 * Node binary or the bundle in it. The bundle (dist/, with the package.json that marks its root) is copied
 * into a fresh 0755 directory and the Node this process runs on is linked there (copied when it lives on
 * another file system). Checks that `uid` can run it; throws, saying why, when it cannot (a temporary
 * directory that account cannot reach).
 */
export async function stageCtlFor(uid: number): Promise<StagedCtl> {
  const dir = tempDir('ctl-staged-');
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    chmodSync(dir, 0o755);
    copyFileSync(join(packageRoot, 'package.json'), join(dir, 'package.json'));
    cpSync(join(packageRoot, 'dist'), join(dir, 'dist'), { recursive: true });
    const node = join(dir, 'node');
    try {
      linkSync(process.execPath, node);
    } catch {
      copyFileSync(process.execPath, node);
    }
    chmodSync(node, 0o755);
    const entry = join(dir, 'dist', 'cli', 'main.js');
    await run('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', node, entry, '--version'], {
      cwd: dir,
    }).catch((err: { stderr?: string; message: string }) => {
      throw new Error(
        `uid ${uid} cannot run ctl staged in ${dir} (is a directory above it closed to that account? set TMPDIR ` +
          `to one it can enter): ${err.stderr?.trim() || err.message}`,
      );
    });
    return { node, entry, dir, remove };
  } catch (err) {
    remove();
    throw err;
  }
}
