import { LogTail } from '../shared/events/log-tail.js';
import type { EventRecord } from '../shared/events/record.js';
import type { EventSource, EventView } from './event-view.js';

export interface HubSubscriber {
  /** New records of one log, in seq order. */
  records(scope: string, records: EventRecord[]): void;
  /** A log the hub did not follow before (a city registered after the subscriber connected). */
  sourceAdded(source: EventSource): void;
}

/**
 * The supervisor's live view of every log: one tail per log, whose reads fan out to every subscriber of
 * the supervisor stream. Follows the event view's sources as cities are registered and unregistered.
 */
export class EventHub {
  private readonly tails = new Map<string, { source: EventSource; tail: LogTail; stop: () => void }>();
  private readonly subscribers = new Set<HubSubscriber>();

  constructor(private readonly view: EventView) {
    this.sync();
  }

  /** The logs being followed now. */
  sources(): EventSource[] {
    return [...this.tails.values()].map((t) => t.source);
  }

  subscribe(subscriber: HubSubscriber): () => void {
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
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
      const unsubscribe = tail.subscribe((records) => {
        for (const subscriber of this.subscribers) subscriber.records(scope, records);
      });
      // Appends from this process reach the tail at once.
      const unhook = source.log.onAppend(() => tail.poke());
      this.tails.set(scope, {
        source,
        tail,
        stop: () => {
          unsubscribe();
          unhook();
          void tail.close();
        },
      });
      for (const subscriber of this.subscribers) subscriber.sourceAdded(source);
    }
  }

  async close(): Promise<void> {
    for (const entry of this.tails.values()) entry.stop();
    this.tails.clear();
    this.subscribers.clear();
  }
}
