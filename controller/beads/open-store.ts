import type { Logger } from 'pino';
import type { BeadStore } from './bead-store.js';
import { JournalBeadStore } from './journal-store.js';

export type BeadBackend = 'sqlite' | 'journal';

/**
 * Opens the city's bead store: SQLite (`beads.db`) unless `city.toml` asks for the journal
 * (`[beads] backend = "journal"`), or the SQLite addon (an optional dependency, compiled at install) is not
 * there — then the journal, with a warning. Why SQLite is the default: docs/architecture/bead-store.md.
 */
export async function openBeadStore(
  dir: string,
  prefix: string,
  backend: BeadBackend | undefined,
  logger: Logger,
): Promise<{ store: BeadStore; backend: BeadBackend }> {
  if (backend !== 'journal') {
    try {
      const { SqliteBeadStore } = await import('./sqlite-store.js');
      return { store: SqliteBeadStore.open(dir, prefix), backend: 'sqlite' };
    } catch (err) {
      if (backend === 'sqlite') throw err;
      logger.warn({ err }, 'SQLite is not available (better-sqlite3 did not build); using the journal bead store');
    }
  }
  return { store: JournalBeadStore.open(dir, prefix), backend: 'journal' };
}
