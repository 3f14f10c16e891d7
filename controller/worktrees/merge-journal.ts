import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';

/** A close with a merge that was begun: the bead, and the session whose worktree holds its branch. */
export interface PendingMerge {
  bead: string;
  session: string;
  /** When it was begun (ISO 8601). */
  at: string;
}

/**
 * The closes with a `merge = "direct"` merge that were begun and not yet stored, one file each in
 * `.ctl/merges/<bead id>.json`: written before git runs, removed once the close (and the reopen of a bead whose
 * branch could not go in) is stored. A controller killed in between leaves the file, and the next one finishes
 * the close from it (`WorktreeMerges.resume`) — a merge is never left half-told.
 */
export class MergeJournal {
  constructor(private readonly dir: string) {}

  begin(entry: Omit<PendingMerge, 'at'>): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileAtomic(this.fileOf(entry.bead), JSON.stringify({ ...entry, at: new Date().toISOString() }) + '\n');
  }

  done(bead: string): void {
    rmSync(this.fileOf(bead), { force: true });
  }

  has(bead: string): boolean {
    return existsSync(this.fileOf(bead));
  }

  /** What was begun and not done, oldest first; a file that cannot be read is dropped (nothing to finish). */
  pending(): PendingMerge[] {
    let files: string[];
    try {
      files = readdirSync(this.dir).filter((f) => f.endsWith('.json'));
    } catch {
      return [];
    }
    const found: PendingMerge[] = [];
    for (const file of files) {
      try {
        const entry = JSON.parse(readFileSync(join(this.dir, file), 'utf8')) as PendingMerge;
        if (typeof entry.bead === 'string' && typeof entry.session === 'string') found.push(entry);
        else rmSync(join(this.dir, file), { force: true });
      } catch {
        rmSync(join(this.dir, file), { force: true });
      }
    }
    return found.sort((a, b) => a.at.localeCompare(b.at));
  }

  private fileOf(bead: string): string {
    // Bead ids are `<prefix>-<number>`; anything else cannot name a file outside the directory either.
    return join(this.dir, `${bead.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
  }
}

/**
 * A test's crash point, off unless `CTL_TEST_CRASH_MID_MERGE` names a file: while that file exists, the controller
 * kills itself (SIGKILL, as `kill -9` would) in a direct merge right before the base is fast-forwarded — the
 * branch rebased, the base not yet moved, the close not stored — having removed the file so that the controller
 * started after it goes on (test/worktrees.test.ts).
 */
export function mergeCrashHook(env: NodeJS.ProcessEnv): (() => void) | undefined {
  const file = env.CTL_TEST_CRASH_MID_MERGE;
  if (!file) return undefined;
  return () => {
    if (!existsSync(file)) return;
    rmSync(file, { force: true });
    process.kill(process.pid, 'SIGKILL');
  };
}
