import { chmodSync, constants, copyFileSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { outsideTree } from '../../shared/fs/within.js';

/** What laying an overlay down did. */
export interface OverlayCopy {
  copied: number;
  /** Files left out, each with why (a link leading out of the overlay, a place outside the work directory). */
  skipped: string[];
}

/**
 * Copies the files of `overlay` into `workDir`, keeping their relative paths, as the reference's `overlay_dir`
 * does: additive — a file the work directory has already is never overwritten. Nothing is read from outside the
 * overlay (a symbolic link leading out of it is skipped) and nothing is written outside the work directory (a
 * directory there that is a link leading out is skipped). Its top-level `per-provider/` is left out: the
 * reference's provider hook files, which ctl does not install. Throws when the overlay is not a directory.
 */
export function copyOverlay(overlay: string, workDir: string): OverlayCopy {
  if (!statSync(overlay, { throwIfNoEntry: false })?.isDirectory()) {
    throw new Error(`its overlay_dir ${overlay} is not a directory`);
  }
  const out: OverlayCopy = { copied: 0, skipped: [] };
  mkdirSync(workDir, { recursive: true });
  const walk = (from: string, to: string) => {
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      // The reference's provider hook files, staged per provider there: hooks are not installed (validate says so).
      if (from === overlay && entry.name === 'per-provider') continue;
      const source = join(from, entry.name);
      const target = join(to, entry.name);
      const name = relative(overlay, source);
      const out1 = outsideTree(source, overlay, 'the overlay');
      if (out1) {
        out.skipped.push(`${name}: ${out1}`);
        continue;
      }
      const stat = statSync(source, { throwIfNoEntry: false });
      if (!stat) continue;
      if (stat.isDirectory()) {
        const there = lstatSync(target, { throwIfNoEntry: false });
        if (there && !there.isDirectory()) {
          // A file, or a link (even to a directory inside): never followed, never replaced.
          out.skipped.push(`${name}/: ${there.isSymbolicLink() ? 'a link' : 'a file'} in the work directory`);
          continue;
        }
        if (!there) mkdirSync(target);
        walk(source, target);
        continue;
      }
      if (!stat.isFile()) continue;
      if (outsideTree(to, workDir, 'the work directory')) {
        out.skipped.push(`${name}: its directory leads out of the work directory`);
        continue;
      }
      if (lstatSync(target, { throwIfNoEntry: false })) continue; // there already: kept as it is
      copyFileSync(source, target, constants.COPYFILE_EXCL);
      chmodSync(target, stat.mode & 0o777);
      out.copied++;
    }
  };
  walk(overlay, workDir);
  return out;
}
