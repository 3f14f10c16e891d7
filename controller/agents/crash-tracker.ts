import type { CityDaemonConfig } from '../../shared/config/city-config.js';
import type { Session } from '../sessions/session.js';
import type { CrashFacts } from './tick-facts.js';

/** How long a turn failure of the provider's service is taken as the reason its program ended. */
const SERVICE_FAILURE_WINDOW_MS = 30_000;
/** How long a rate-limited provider is left alone before its session starts again. */
const RATE_LIMIT_PAUSE_MS = 30_000;

interface Failures {
  /** Fast failures in a row. */
  count: number;
  /** No start before this (ms since the epoch). */
  notBefore: number;
  /** Why the next start waits. */
  why: string;
  /** Quarantined until then (ms since the epoch). */
  quarantinedUntil?: number;
}

/**
 * Sessions that keep failing: how many fast failures in a row each has had, and how long its next start waits
 * (`restart_backoff`, doubling per failure up to `restart_backoff_max`). In memory: a new controller starts
 * afresh, as a person restarting it would want.
 */
export class CrashTracker {
  private readonly failures = new Map<string, Failures>();

  /**
   * A session of an agent ended without being asked to. A failure of the provider's service (a rate limit, a
   * refused key) is no crash: it waits and tries again without counting. Otherwise a run shorter than
   * `restart_window` counts as a fast failure: restarts back off (doubling), and after `max_restarts` fast
   * failures in a row the session is quarantined for `quarantine_duration` (or until a person wakes it).
   */
  async crashed(session: Session, ranMs: number, daemon: CityDaemonConfig): Promise<void> {
    const failure = session.lastTurnFailure;
    const serviceFailure =
      failure &&
      Date.now() - failure.at < SERVICE_FAILURE_WINDOW_MS &&
      ['rate_limited', 'auth'].includes(failure.category);
    if (serviceFailure) {
      const rateLimited = failure.category === 'rate_limited';
      this.pause(
        session.id,
        rateLimited ? RATE_LIMIT_PAUSE_MS : daemon.restartBackoffMaxMs,
        rateLimited
          ? 'its provider is rate-limited; not counted as a failure'
          : 'its provider refused its credentials; not counted as a failure',
      );
      return;
    }
    const count = this.failed(session.id, ranMs < daemon.restartWindowMs, daemon);
    if (count >= daemon.maxRestarts && (session.state === 'asleep' || session.state === 'failed-create')) {
      session.transition('quarantine');
      const until = this.quarantined(session.id, daemon);
      await session.recordLifecycle(
        'session.quarantined',
        `it failed ${count} times in a row within ${Math.round(daemon.restartWindowMs / 1000)} s of starting; it may start again at ${new Date(until).toISOString()}, or wake it now`,
      );
    }
  }

  /**
   * Quarantines a session for `quarantine_duration` from now, returning until when. A quarantined session this
   * controller has no record of (the last one quarantined it) gets its time from now too.
   */
  quarantined(id: string, daemon: CityDaemonConfig): number {
    const failures = this.failures.get(id) ?? { count: daemon.maxRestarts, notBefore: Date.now(), why: 'quarantined' };
    failures.quarantinedUntil = Date.now() + daemon.quarantineMs;
    this.failures.set(id, failures);
    return failures.quarantinedUntil;
  }

  /** Whether it holds a session's quarantine time. */
  knowsQuarantine(id: string): boolean {
    return this.failures.get(id)?.quarantinedUntil !== undefined;
  }

  /** Every session's back-off, for the tick's plan. */
  facts(): Map<string, CrashFacts> {
    return new Map(
      [...this.failures].map(([id, f]) => [
        id,
        {
          notBefore: f.notBefore,
          why: f.why,
          count: f.count,
          ...(f.quarantinedUntil !== undefined ? { quarantinedUntil: f.quarantinedUntil } : {}),
        },
      ]),
    );
  }

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

  forget(id: string): void {
    this.failures.delete(id);
  }
}
