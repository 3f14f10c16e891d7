import { readdirSync } from 'node:fs';

/**
 * What exists only while a controller runs and goes with it: its socket, pid file and lock, and the bead
 * database's write-ahead log and shared-memory index (SQLite folds them into beads.db when the store
 * closes, so whether they are on disk depends only on the moment a listing is taken).
 */
const RUNTIME_ONLY = /controller\.(sock|pid|lock)$|beads\.db-(wal|shm)$/;

/** A city directory's files (recursive, sorted), without the ones a running controller adds for its lifetime. */
export function listCityTree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => !RUNTIME_ONLY.test(f))
    .sort();
}
