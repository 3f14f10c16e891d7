import type { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';
import * as K from './molecule-keys.js';

/**
 * Each run's version: the seq of the last event that changed it — a bead of it made, changed, closed or deleted
 * (`bead.*` carries the bead, and so its run), or the run itself made or resolved (`molecule.*`). It grows only
 * when the run changes, so a client holding a snapshot can tell whether the run moved on and wait until it does.
 * Kept as events are written; a run not seen since the controller started is looked up once in the log.
 */
export class RunVersions {
  private readonly versions = new Map<string, number>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly log: EventLog) {
    log.onAppend((records) => {
      let changed = false;
      for (const record of records) {
        const run = runOf(record);
        if (run === undefined) continue;
        this.versions.set(run, record.seq);
        changed = true;
      }
      if (changed) for (const wake of [...this.waiters]) wake();
    });
  }

  /** The run's version; 0 only when no event of it is left in the log (rotated away). */
  version(runId: string): number {
    const known = this.versions.get(runId);
    if (known !== undefined) return known;
    const [last] = this.log.newest({ limit: 1, filter: (r) => runOf(r) === runId }).records;
    // Nothing found: no change is recorded; any later change gets a higher seq than 0.
    const version = last?.seq ?? 0;
    this.versions.set(runId, version);
    return version;
  }

  /** Resolves once the run's version passes `index`, or after `waitMs`; with the version then. */
  async changedSince(runId: string, index: number, waitMs: number): Promise<number> {
    if (this.version(runId) > index) return this.version(runId);
    await new Promise<void>((resolve) => {
      const done = () => {
        if (this.version(runId) <= index) return;
        finish();
      };
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(finish, waitMs);
      this.waiters.add(done);
    });
    return this.version(runId);
  }
}

/** The run an event is about, if any. */
function runOf(record: EventRecord): string | undefined {
  const payload = record.payload as { bead?: { id?: string; metadata?: Record<string, string> }; run_id?: string };
  if (record.type.startsWith('bead.') && payload?.bead) {
    const meta = payload.bead.metadata ?? {};
    if (meta[K.ROOT_BEAD_ID]) return meta[K.ROOT_BEAD_ID];
    if (meta[K.KIND] === 'workflow') return payload.bead.id;
    return undefined;
  }
  if (record.type.startsWith('molecule.') && typeof payload?.run_id === 'string') return payload.run_id;
  return undefined;
}
