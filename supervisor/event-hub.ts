import { LogTail } from '../shared/events/log-tail.js';
import type { EventRecord } from '../shared/events/record.js';
import type { EventSource, EventView } from './event-view.js';

export interface HubSubscriber {
  /** New records of one log, in seq order. */
  records(scope: string, records: EventRecord[]): void;
  /** A log the hub did not follow before (a city registered after the subscriber connected). */
  sourceAdded(source: EventSource): void;
}

interface FollowedLog {
  source: EventSource;
  tail: LogTail;
  /** Set while the hub listens to the tail (while anyone subscribes to the hub). */
  unsubscribe?: () => void;
  stop: () => void;
}

/**
 * The supervisor's live view of every log: one tail per log, whose reads fan out to every subscriber of
 * the supervisor stream. Follows the event view's sources as cities are registered and unregistered, and
 * reads them only while someone subscribes: an unwatched supervisor does no work per event.
 */
export class EventHub {
  private readonly tails = new Map<string, FollowedLog>();
  private readonly subscribers = new Set<HubSubscriber>();

  constructor(private readonly view: EventView) {
    this.sync();
  }

  /** The logs being followed now. */
  sources(): EventSource[] {
    return [...this.tails.values()].map((t) => t.source);
  }

  /**
   * Adds a subscriber; the first one starts every tail at its log's end, so a subscriber replays history up
   * to the heads it read before subscribing and takes the rest live (records seen twice are skipped by seq).
   */
  subscribe(subscriber: HubSubscriber): () => void {
    this.subscribers.add(subscriber);
    if (this.subscribers.size === 1) for (const [scope, entry] of this.tails) this.listen(scope, entry);
    return () => {
      if (!this.subscribers.delete(subscriber) || this.subscribers.size > 0) return;
      for (const entry of this.tails.values()) {
        entry.unsubscribe?.();
        entry.unsubscribe = undefined;
      }
    };
  }

  private listen(scope: string, entry: FollowedLog): void {
    entry.unsubscribe ??= entry.tail.subscribe((records) => {
      for (const subscriber of this.subscribers) subscriber.records(scope, records);
    });
  }

  /** Starts following new logs and stops following gone ones; call after the registry changes. */
  sync(): void {
    const current = new Map(this.view.sources().map((s) => [s.scope, s]));
    for (const [scope, entry] of this.tails) {
      const source = current.get(scope);
      if (!source || source.log.path !== entry.source.log.path) {
        entry.stop();
        this.tails.delete(scope);
      }
    }
    for (const [scope, source] of current) {
      if (this.tails.has(scope)) continue;
      const tail = new LogTail(source.log);
      // Appends from this process reach the tail at once.
      const unhook = source.log.onAppend(() => tail.poke());
      const entry: FollowedLog = {
        source,
        tail,
        stop: () => {
          entry.unsubscribe?.();
          unhook();
          void tail.close();
        },
      };
      this.tails.set(scope, entry);
      if (this.subscribers.size > 0) this.listen(scope, entry);
      for (const subscriber of this.subscribers) subscriber.sourceAdded(source);
    }
  }

  async close(): Promise<void> {
    for (const entry of this.tails.values()) entry.stop();
    this.tails.clear();
    this.subscribers.clear();
  }
}
