import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { MaintenanceRunBody, MaintenanceStatusBody } from '../../shared/dto/maintenance.js';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadStore } from './bead-store.js';

const HISTORY = 20;

/**
 * Bead store maintenance, on demand (`POST /maintenance/compact`) or every `[maintenance] interval`: the store's
 * own `maintain()` (SQLite: VACUUM and WAL checkpoints; the journal store: a new snapshot), one run at a time
 * (a second ask while one runs is a 409), its outcome recorded as `ctl.store.maintenance.done` or `.failed` and
 * kept, with the last runs, in `.ctl/maintenance.json` so the status survives a restart.
 */
export class StoreMaintenance {
  private history: MaintenanceRunBody[] = [];
  private current: { startedAt: string; done: Promise<MaintenanceRunBody> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private nextAt: number | undefined;
  private intervalMs: number | undefined;

  constructor(
    private readonly deps: {
      store: BeadStore;
      backend: string;
      log: EventLog;
      /** `.ctl/maintenance.json`. */
      statePath: string;
      logger?: Logger;
    },
  ) {
    try {
      const saved = JSON.parse(readFileSync(deps.statePath, 'utf8')) as { history?: MaintenanceRunBody[] };
      this.history = Array.isArray(saved.history) ? saved.history.slice(-HISTORY) : [];
    } catch {
      // No runs yet (or an unreadable file: it is rewritten after the next run).
    }
  }

  /** Runs every `intervalMs` (none: only on demand); called again when the configuration changes. */
  schedule(intervalMs: number | undefined): void {
    if (intervalMs === this.intervalMs) return;
    this.intervalMs = intervalMs;
    this.arm();
  }

  /** The next scheduled run, `intervalMs` from now (none when there is no interval). */
  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.nextAt = undefined;
    const every = this.intervalMs;
    if (every === undefined) return;
    this.nextAt = Date.now() + every;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.nextAt = undefined;
      let done: Promise<unknown>;
      try {
        done = this.start('scheduled').done;
      } catch (err) {
        // A run asked for by hand is under way: it does this one's work; the next comes an interval later.
        this.deps.logger?.info({ err }, 'scheduled store maintenance skipped: a run is under way');
        done = this.current?.done ?? Promise.resolve();
      }
      void done
        .catch((err: unknown) => this.deps.logger?.error({ err }, 'scheduled store maintenance failed'))
        // Counted from the end of the run; a new interval set meanwhile has armed its own timer.
        .finally(() => {
          if (this.intervalMs === every && this.timer === undefined) this.arm();
        });
    }, every);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** Starts a run; a 409 while one runs. */
  start(trigger: 'manual' | 'scheduled'): { startedAt: string; done: Promise<MaintenanceRunBody> } {
    if (this.current) {
      throw new Problem(
        'operation-in-progress',
        `operation_in_progress: store maintenance started at ${this.current.startedAt} is still running`,
      );
    }
    const startedAt = new Date().toISOString();
    const done = this.run(trigger, startedAt).finally(() => {
      this.current = undefined;
    });
    this.current = { startedAt, done };
    return this.current;
  }

  status(): MaintenanceStatusBody {
    const files = this.deps.store.files();
    return {
      enabled: this.intervalMs !== undefined,
      interval_seconds: this.intervalMs ? Math.round(this.intervalMs / 1000) : 0,
      in_flight: this.current !== undefined,
      ...(this.current ? { in_flight_start: this.current.startedAt } : {}),
      history: this.history,
      ...(this.history.length ? { last_run: this.history.at(-1) } : {}),
      ...(this.nextAt ? { next_scheduled: new Date(this.nextAt).toISOString() } : {}),
      backend: this.deps.backend,
      files,
      total_bytes: files.reduce((sum, f) => sum + f.bytes, 0),
      beads: this.deps.store.size,
    };
  }

  private async run(trigger: string, startedAt: string): Promise<MaintenanceRunBody> {
    // Begun after the request that asked for it has its answer: the store is held while it runs.
    await new Promise((resolve) => setImmediate(resolve));
    const before = this.bytes();
    const started = Date.now();
    let run: MaintenanceRunBody;
    try {
      const operations = this.deps.store.maintain();
      const after = this.bytes();
      run = {
        started_at: startedAt,
        finished_at: new Date().toISOString(),
        duration_ms: Date.now() - started,
        trigger,
        outcome: 'succeeded',
        operations,
        before_bytes: before,
        after_bytes: after,
        reclaimed_bytes: Math.max(0, before - after),
      };
    } catch (err) {
      run = {
        started_at: startedAt,
        finished_at: new Date().toISOString(),
        duration_ms: Date.now() - started,
        trigger,
        outcome: 'failed',
        before_bytes: before,
        error: (err as Error).message,
      };
      this.deps.logger?.error({ err }, 'store maintenance failed');
    }
    this.history = [...this.history, run].slice(-HISTORY);
    try {
      writeFileAtomic(this.deps.statePath, JSON.stringify({ history: this.history }));
    } catch (err) {
      this.deps.logger?.warn({ err }, 'could not keep the maintenance history');
    }
    await this.deps.log.append({
      type: run.outcome === 'succeeded' ? 'ctl.store.maintenance.done' : 'ctl.store.maintenance.failed',
      actor: 'ctl',
      subject: 'beads',
      message:
        run.outcome === 'succeeded'
          ? `${run.reclaimed_bytes} bytes reclaimed in ${run.duration_ms} ms`
          : `store maintenance failed: ${run.error}`,
      payload: { run },
    });
    return run;
  }

  private bytes(): number {
    return this.deps.store.files().reduce((sum, f) => sum + f.bytes, 0);
  }
}
