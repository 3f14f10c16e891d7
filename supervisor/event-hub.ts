import { performance } from 'node:perf_hooks';
import { LogTail } from '../shared/events/log-tail.js';
import type { EventRecord } from '../shared/events/record.js';
import type { EventSource, EventView } from './event-view.js';

export interface HubSubscriber {
  /** New records of one log, in seq order. */
  records(scope: string, records: EventRecord[]): void;
  /** A log the hub did not follow before (a city registered after the subscriber connected). */
  sourceAdded(source: EventSource): void;
}

/** A fan-out shorter than this never delays the next (below a timer's resolution, and a few streams' worth). */
const PACED_FROM_MS = 1;
/** After a longer one, the next waits this many times its length: fan-outs take at most 1/(1+this) of the loop. */
const PAUSE_PER_FAN_OUT = 3;

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
  /** Records read but not yet handed out, per log, while the hub paces its fan-outs. */
  private readonly waiting = new Map<string, EventRecord[]>();
  private flushTimer: NodeJS.Timeout | undefined;
  /** When the next fan-out may start: the last one's end plus its length. */
  private nextFanOutAt = 0;

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
      this.dropWaiting();
      for (const entry of this.tails.values()) {
        entry.unsubscribe?.();
        entry.unsubscribe = undefined;
      }
    };
  }

  private listen(scope: string, entry: FollowedLog): void {
    entry.unsubscribe ??= entry.tail.subscribe((records) => this.fanOut(scope, records));
  }

  /**
   * Hands records to every subscriber — at once, unless the last fan-out was long (PACED_FROM_MS) and ended
   * less than three times its length ago: then they wait, with whatever else arrives, until then. A fan-out costs a
   * write per subscriber (a system call, and on loopback the receiving end's TCP work too), so with hundreds
   * of streams and a busy log, one fan-out per record took the whole event loop: every other request waited
   * behind them, and streams still opening waited longest, while each one opened made every fan-out longer.
   * Paced so, fan-outs take at most about a quarter of the loop, and a busier hub sends bigger batches instead
   * of more of them (one write per batch and stream). A hub with few subscribers fans out in microseconds and
   * never waits, so a record's way to a stream stays what it was.
   */
  private fanOut(scope: string, records: EventRecord[]): void {
    const waiting = this.waiting.get(scope);
    if (!waiting) this.waiting.set(scope, records);
    else this.waiting.set(scope, waiting.concat(records));
    if (this.flushTimer) return;
    const wait = this.nextFanOutAt - performance.now();
    if (wait <= 0) this.flush();
    else this.flushTimer = setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const started = performance.now();
    const batches = [...this.waiting];
    this.waiting.clear();
    for (const [scope, records] of batches) {
      for (const subscriber of this.subscribers) subscriber.records(scope, records);
    }
    const ended = performance.now();
    const took = ended - started;
    this.nextFanOutAt = took < PACED_FROM_MS ? 0 : ended + took * PAUSE_PER_FAN_OUT;
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

  private dropWaiting(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.waiting.clear();
  }

  async close(): Promise<void> {
    this.dropWaiting();
    for (const entry of this.tails.values()) entry.stop();
    this.tails.clear();
    this.subscribers.clear();
  }
}
