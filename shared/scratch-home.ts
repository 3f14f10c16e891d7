import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * Runs `fn` with a throw-away HOME holding copies of `files` (paths relative to `home`) that exist there, and
 * removes it after. For probes of tools that write to the home they run in (`claude auth status` creates
 * `~/.claude.json`): they see the person's credentials and change nothing of theirs.
 */
export async function withScratchHome<T>(
  home: string,
  files: string[],
  fn: (scratch: string) => Promise<T>,
): Promise<T> {
  const scratch = await mkdtemp(join(tmpdir(), 'ctl-probe-home-'));
  try {
    for (const file of files) {
      const to = join(scratch, file);
      await mkdir(dirname(to), { recursive: true, mode: 0o700 });
      await copyFile(join(home, file), to).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
    return await fn(scratch);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
