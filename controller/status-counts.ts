import type { StatusWorkCounts } from '../shared/dto/health.js';
import type { MailCountOutputBody } from '../shared/dto/mail.js';

/** What `GET /status` counts in the city's store: work beads and mail. */
export interface StoreCounts {
  work: StatusWorkCounts;
  mail: MailCountOutputBody;
}

/**
 * Deferred beads become ready as time passes, with no event: counts are at most this old. A status poll every
 * few milliseconds (a dashboard, `ctl status --watch`) costs the store one count a second, not one per request.
 */
export const STATUS_COUNTS_MAX_AGE_MS = 1000;

/**
 * The store's counts for `GET /status`, kept in memory: counted again only after an event this controller
 * appended (every change to beads and mail goes through the controller and is recorded as an event), or once
 * they are `STATUS_COUNTS_MAX_AGE_MS` old; never per request.
 */
export class StatusCounts {
  private cached: { counts: StoreCounts; at: number } | undefined;

  constructor(
    private readonly countStore: () => StoreCounts,
    log: { onAppend(listener: () => void): () => void },
    private readonly now: () => number = Date.now,
  ) {
    log.onAppend(() => {
      this.cached = undefined;
    });
  }

  get(): StoreCounts {
    const now = this.now();
    if (!this.cached || now - this.cached.at >= STATUS_COUNTS_MAX_AGE_MS) {
      this.cached = { counts: this.countStore(), at: now };
    }
    return this.cached.counts;
  }
}
