import type { SessionRecord } from './session-store.js';
import type { Session } from './session.js';

/** How many closed sessions stay at hand. */
const CLOSED_KEPT = 32;

/**
 * Closed sessions lately asked about (their transcripts are read, their streams replayed), at most CLOSED_KEPT:
 * each holds its transcript's file open, so the one asked about longest ago is let go (its transcript closed).
 */
export class ClosedSessions {
  private readonly kept = new Map<string, Session>();

  constructor(private readonly make: (record: SessionRecord) => Session) {}

  /** A closed session's object, kept among the last few asked for (so their open transcripts stay few). */
  of(record: SessionRecord): Session {
    let session = this.kept.get(record.id);
    if (session) {
      this.kept.delete(record.id);
    } else {
      session = this.make(record);
      if (this.kept.size >= CLOSED_KEPT) {
        const [oldest, evicted] = this.kept.entries().next().value as [string, Session];
        this.kept.delete(oldest);
        evicted.transcript.close();
      }
    }
    this.kept.set(record.id, session);
    return session;
  }

  /** Lets a deleted session go (the caller closes its transcript). */
  forget(id: string): void {
    this.kept.delete(id);
  }
}
