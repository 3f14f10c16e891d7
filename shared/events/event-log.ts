import { closeSync, fstatSync, openSync, statSync, writeSync } from 'node:fs';
import { FileLock } from './file-lock.js';
import { completeEnd, lastRecord, offsetAfterSeq, recordsBackward, recordsForward } from './log-file.js';
import { formatEventLine, type EventRecord, type NewEvent } from './record.js';

export type EventFilter = (record: EventRecord) => boolean;

export interface NewestPage {
  /** Newest first. */
  records: EventRecord[];
  /** True when older matching records exist below this page. */
  more: boolean;
}

interface PendingAppend {
  events: NewEvent[];
  resolve: (records: EventRecord[]) => void;
  reject: (err: unknown) => void;
}

/**
 * One `events.jsonl` log: the writer and the reader every process uses (controller, supervisor, CLI tools).
 *
 * Seqs are assigned under an flock on a sibling lock file, from the highest well-formed seq at the file's
 * tail, so any number of processes can append to one log and still produce unique, gap-free seqs. Appends
 * queued while a write is in flight go out together in one write under one lock.
 */
export class EventLog {
  private static readonly open = new Map<string, EventLog>();

  /** The process-wide instance for a log, so all writers in one process share one queue. */
  static at(path: string, lockPath: string): EventLog {
    let log = EventLog.open.get(path);
    if (!log) {
      log = new EventLog(path, lockPath);
      EventLog.open.set(path, log);
    }
    return log;
  }

  private fd = -1;
  private ino = -1;
  private writable = false;
  private lock: FileLock | undefined;
  private lastSeq = 0;
  /** Bytes of the current file already accounted for in lastSeq; always just past a "\n" (or 0). */
  private scanned = 0;
  private endsWithNewline = true;
  private queue: PendingAppend[] = [];
  private draining = false;
  private readonly listeners = new Set<(records: EventRecord[]) => void>();

  private constructor(
    readonly path: string,
    private readonly lockPath: string,
  ) {}

  /** Appends one event; resolves with the stored record once it is written. */
  async append(event: NewEvent): Promise<EventRecord> {
    const [record] = await this.appendMany([event]);
    return record;
  }

  appendMany(events: NewEvent[]): Promise<EventRecord[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ events, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  /** Called with every batch this process writes, right after the write. */
  onAppend(listener: (records: EventRecord[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The highest seq in the log (0 when it is empty or missing), including other processes' appends. */
  head(): number {
    if (!this.ensureOpen(false)) return 0;
    this.refresh();
    return this.lastSeq;
  }

  /**
   * A page of records, newest first, with seq below `beforeSeq` when given. With `sinceMs` the scan stops at
   * the first record older than that: the writer stamps `ts` under the lock, so a log is in time order.
   */
  newest(options: { limit: number; beforeSeq?: number; filter?: EventFilter; sinceMs?: number }): NewestPage {
    const records: EventRecord[] = [];
    if (!this.ensureOpen(false)) return { records, more: false };
    this.refresh();
    let end = this.scanned;
    if (options.beforeSeq !== undefined) end = offsetAfterSeq(this.fd, options.beforeSeq - 1, end);
    for (const { record } of recordsBackward(this.fd, end)) {
      if (options.sinceMs !== undefined && Date.parse(record.ts) < options.sinceMs) break;
      if (options.filter && !options.filter(record)) continue;
      if (records.length === options.limit) return { records, more: true };
      records.push(record);
    }
    return { records, more: false };
  }

  /** Records with seq greater than `afterSeq`, oldest first, at most `limit` of them. */
  after(afterSeq: number, limit = Infinity): EventRecord[] {
    const records: EventRecord[] = [];
    if (!this.ensureOpen(false)) return records;
    this.refresh();
    const start = afterSeq <= 0 ? 0 : offsetAfterSeq(this.fd, afterSeq, this.scanned);
    for (const { record } of recordsForward(this.fd, start, this.scanned)) {
      if (record.seq <= afterSeq) continue;
      records.push(record);
      if (records.length >= limit) break;
    }
    return records;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    this.lock?.close();
    this.lock = undefined;
    EventLog.open.delete(this.path);
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.queue.length);
        try {
          const written = await this.writeBatch(batch.flatMap((p) => p.events));
          let i = 0;
          for (const pending of batch) {
            pending.resolve(written.slice(i, i + pending.events.length));
            i += pending.events.length;
          }
          for (const listener of this.listeners) listener(written);
        } catch (err) {
          for (const pending of batch) pending.reject(err);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private async writeBatch(events: NewEvent[]): Promise<EventRecord[]> {
    this.lock ??= new FileLock(this.lockPath);
    await this.lock.acquire();
    try {
      this.ensureOpen(true);
      this.refresh();
      const now = new Date().toISOString();
      const records: EventRecord[] = [];
      let text = this.endsWithNewline ? '' : '\n';
      for (const event of events) {
        const record: EventRecord = {
          seq: ++this.lastSeq,
          type: event.type,
          ts: event.ts ?? now,
          actor: event.actor,
          ...(event.subject ? { subject: event.subject } : {}),
          ...(event.message ? { message: event.message } : {}),
          payload: event.payload ?? {},
        };
        records.push(record);
        text += formatEventLine(record);
      }
      const bytes = Buffer.from(text);
      let written = 0;
      while (written < bytes.length) written += writeSync(this.fd, bytes, written);
      this.scanned += bytes.length;
      this.endsWithNewline = true;
      return records;
    } finally {
      this.lock.release();
    }
  }

  /** Opens (or reopens, after the path was replaced) the file; false when it does not exist and `create` is off. */
  private ensureOpen(create: boolean): boolean {
    let ino: number;
    try {
      ino = statSync(this.path).ino;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !create) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
      ino = -2;
    }
    if (this.fd >= 0 && ino === this.ino && (this.writable || !create)) return true;
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = openSync(this.path, create ? 'a+' : 'r');
    this.writable = create;
    const st = fstatSync(this.fd);
    if (st.ino !== this.ino) {
      // A different file (first open, or the log was replaced): account for it from the start.
      this.scanned = 0;
      this.endsWithNewline = true;
    }
    this.ino = st.ino;
    return true;
  }

  /** Brings lastSeq up to date with bytes appended since the last look, by this or any other process. */
  private refresh(): void {
    const size = fstatSync(this.fd).size;
    if (size < this.scanned) {
      this.scanned = 0;
      this.lastSeq = 0;
    }
    if (size === this.scanned) {
      this.endsWithNewline = true;
      return;
    }
    const last = lastRecord(this.fd, size, this.scanned);
    if (last) this.lastSeq = Math.max(this.lastSeq, last.record.seq);
    this.scanned = completeEnd(this.fd, size, this.scanned);
    this.endsWithNewline = this.scanned === size;
  }
}
