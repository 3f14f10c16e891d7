import type { CityDaemonConfig } from '../../shared/config/city-config.js';

interface Failures {
  /** Fast failures in a row. */
  count: number;
  /** No start before this (ms since the epoch). */
  notBefore: number;
  /** Why the next start waits. */
  why: string;
}

/**
 * Sessions that keep failing: how many fast failures in a row each has had, and how long its next start waits
 * (`restart_backoff`, doubling per failure up to `restart_backoff_max`). In memory: a new controller starts
 * afresh, as a person restarting it would want.
 */
export class CrashTracker {
  private readonly failures = new Map<string, Failures>();

  /** Records a failure; a slow one (the program ran past the restart window) starts the count again. */
  failed(id: string, fast: boolean, daemon: CityDaemonConfig): number {
    const count = fast ? (this.failures.get(id)?.count ?? 0) + 1 : 1;
    const delay = Math.min(daemon.restartBackoffMs * 2 ** (count - 1), daemon.restartBackoffMaxMs);
    this.failures.set(id, {
      count,
      notBefore: Date.now() + delay,
      why: `after ${count} failure${count === 1 ? '' : 's'}`,
    });
    return count;
  }

  /** Holds the next start for `ms` without counting a failure (the provider's service said to wait). */
  pause(id: string, ms: number, why: string): void {
    const count = this.failures.get(id)?.count ?? 0;
    this.failures.set(id, { count, notBefore: Date.now() + ms, why });
  }

  /** When the next start of `id` may be (ms since the epoch; 0 when it may start now). */
  notBefore(id: string): number {
    return this.failures.get(id)?.notBefore ?? 0;
  }

  /** Why the next start of `id` waits. */
  why(id: string): string {
    return this.failures.get(id)?.why ?? '';
  }

  /** How long the next start of `id` must still wait (0: it may start). */
  waitFor(id: string): number {
    const entry = this.failures.get(id);
    return entry ? Math.max(0, entry.notBefore - Date.now()) : 0;
  }

  count(id: string): number {
    return this.failures.get(id)?.count ?? 0;
  }

  forget(id: string): void {
    this.failures.delete(id);
  }
}
