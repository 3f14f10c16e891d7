import {
  createReadStream,
  createWriteStream,
  closeSync,
  fstatSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { basename } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import {
  archivedHead,
  archivePath,
  listArchives,
  openArchive,
  rotatingPath,
  utcStamp,
  type Archive,
} from './archives.js';
import type { CustomNewEvent, KnownNewEvent } from './event-types.js';
import { FileLock } from '../fs/file-lock.js';
import {
  completeEnd,
  lastRecord,
  offsetAfterSeq,
  recordsBackward,
  recordsForward,
  type ByteSource,
} from './log-file.js';
import { formatEventLine, type EventRecord, type NewEvent } from './record.js';
import { recordedActor } from './request-actor.js';

export type EventFilter = (record: EventRecord) => boolean;

export interface NewestPage {
  /** Newest first. */
  records: EventRecord[];
  /** True when older matching records exist below this page. */
  more: boolean;
}

export interface RotateResult {
  rotated: boolean;
  reason?: string;
  archive?: { path: string; firstSeq: number; lastSeq: number };
  anchor?: EventRecord;
  /** Settles when the archive is compressed (it is readable, plain, before that). */
  compressed?: Promise<void>;
  /** Archives removed, oldest first, to keep within the retention. */
  removed?: string[];
}

export interface RotateOptions {
  /** Keep at most this many archives (the newest); older ones are removed. Unbounded when absent. */
  keepArchives?: number;
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
 * queued while a write is in flight go out together in one write under one lock. Reads cover the rotated
 * archives too, so a rotation is invisible to readers but for its `events.rotated` anchor.
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
  /** Serialises this process's writes and rotations: they share one flock, which does not exclude itself. */
  private exclusive: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<(records: EventRecord[]) => void>();

  private constructor(
    readonly path: string,
    private readonly lockPath: string,
  ) {}

  /**
   * Appends one event of ours, its payload checked against its type by the compiler; resolves with the stored
   * record once it is written.
   */
  append(event: KnownNewEvent): Promise<EventRecord> {
    return this.appendOne(event);
  }

  /** Appends an event of a type this product does not define (`POST …/events`, tools, tests). */
  appendCustom(event: CustomNewEvent): Promise<EventRecord> {
    return this.appendOne(event);
  }

  private async appendOne(event: NewEvent): Promise<EventRecord> {
    const [record] = await this.appendMany([event]);
    return record!;
  }

  private appendMany(events: NewEvent[]): Promise<EventRecord[]> {
    // The requester is known only here, in the caller's context; the queue drains in another.
    const attributed = events.map((e) => {
      const actor = recordedActor(e.actor);
      return actor === e.actor ? e : { ...e, actor };
    });
    return new Promise((resolve, reject) => {
      this.queue.push({ events: attributed, resolve, reject });
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
    if (!this.ensureOpen(false)) return archivedHead(this.path);
    this.refresh();
    return this.lastSeq;
  }

  /** Size of the active file in bytes (0 when missing). */
  size(): number {
    try {
      return statSync(this.path).size;
    } catch {
      return 0;
    }
  }

  /**
   * A page of records, newest first, with seq below `beforeSeq` when given. With `sinceMs` the scan stops at
   * the first record older than that: the writer stamps `ts` under the lock, so a log is in time order.
   */
  newest(options: { limit: number; beforeSeq?: number; filter?: EventFilter; sinceMs?: number }): NewestPage {
    return this.consistent(() => this.readNewest(options));
  }

  private readNewest(options: {
    limit: number;
    beforeSeq?: number;
    filter?: EventFilter;
    sinceMs?: number;
  }): NewestPage {
    const records: EventRecord[] = [];
    const below = options.beforeSeq ?? Infinity;
    let floor = below;
    let outcome: 'more' | 'stop' | 'continue' = 'continue';
    const visit = (src: ByteSource, end: number) => {
      for (const { record } of recordsBackward(src, end)) {
        if (record.seq >= floor) continue;
        floor = record.seq;
        if (options.sinceMs !== undefined && Date.parse(record.ts) < options.sinceMs) return 'stop';
        if (options.filter && !options.filter(record)) continue;
        if (records.length === options.limit) return 'more';
        records.push(record);
      }
      return 'continue';
    };
    if (this.ensureOpen(false)) {
      this.refresh();
      const end = below === Infinity ? this.scanned : offsetAfterSeq(this.fd, below - 1, this.scanned);
      outcome = visit(this.fd, end);
    }
    if (outcome === 'continue') {
      for (const archive of listArchives(this.path).reverse()) {
        if (archive.firstSeq >= floor) continue;
        outcome = this.withArchive(archive, (src, size) =>
          visit(src, below === Infinity ? size : offsetAfterSeq(src, below - 1, size)),
        );
        if (outcome !== 'continue') break;
      }
    }
    return { records, more: outcome === 'more' };
  }

  /** Records with seq greater than `afterSeq`, oldest first, at most `limit` of them. */
  after(afterSeq: number, limit = Infinity): EventRecord[] {
    return this.consistent(() => this.readAfter(afterSeq, limit));
  }

  /**
   * Runs a read again when a rotation (in any process) overlapped it: the archives it listed and the active
   * file it then read would not fit together, and records rotated away in between would be missed.
   */
  private consistent<T>(read: () => T): T {
    for (let attempt = 0; ; attempt++) {
      const before = this.generation();
      const result = read();
      if (this.generation() === before || attempt >= 10) return result;
    }
  }

  /** Changes with every rotation: the active file's inode and the highest archived seq. */
  private generation(): string {
    let ino = -1;
    try {
      ino = statSync(this.path).ino;
    } catch {
      // mid-rotation
    }
    return `${ino}:${archivedHead(this.path)}`;
  }

  private readAfter(afterSeq: number, limit: number): EventRecord[] {
    const records: EventRecord[] = [];
    let last = afterSeq;
    const visit = (src: ByteSource, end: number) => {
      const start = last <= 0 ? 0 : offsetAfterSeq(src, last, end);
      for (const { record } of recordsForward(src, start, end)) {
        if (record.seq <= last) continue;
        records.push(record);
        last = record.seq;
        if (records.length >= limit) return;
      }
    };
    for (const archive of listArchives(this.path)) {
      if (archive.lastSeq <= last || records.length >= limit) continue;
      this.withArchive(archive, (src, size) => visit(src, size));
    }
    if (records.length < limit && this.ensureOpen(false)) {
      this.refresh();
      visit(this.fd, this.scanned);
    }
    return records;
  }

  /**
   * Rotates the log: the active file becomes an archive (compressed in the background) and a fresh one
   * starts with an `events.rotated` anchor, whose seq continues the numbering. Other writers notice the new
   * file under the lock and carry on in it.
   */
  rotate(options: RotateOptions = {}): Promise<RotateResult> {
    return this.serialise(() => this.rotateLocked(options));
  }

  private async rotateLocked(options: RotateOptions): Promise<RotateResult> {
    this.lock ??= new FileLock(this.lockPath);
    await this.lock.acquire();
    let rotated: RotateResult;
    try {
      this.ensureOpen(true);
      this.refresh();
      const records = recordsForward(this.fd, 0, this.scanned);
      const first = records.next();
      if (first.done) return { rotated: false, reason: 'active log is empty', ...this.prune(options) };
      // Only the anchor of the last rotation: archiving it again would only make a one-event archive.
      if (first.value.record.type === 'events.rotated' && records.next().done) {
        return { rotated: false, reason: 'nothing new since the last rotation', ...this.prune(options) };
      }
      const firstSeq = first.value.record.seq;
      const lastSeq = this.lastSeq;
      const stamp = utcStamp(new Date());
      const plain = rotatingPath(this.path, stamp, firstSeq, lastSeq);
      const archive = archivePath(this.path, stamp, firstSeq, lastSeq);
      renameSync(this.path, plain);
      this.ensureOpen(true);
      this.refresh();
      const [anchor] = this.writeRecords([
        {
          type: 'events.rotated',
          actor: 'events',
          message: `rotated to ${basename(archive)}`,
          payload: { prior_archive: archive, prior_first_seq: firstSeq, prior_last_seq: lastSeq },
        },
      ]);
      const compressed = compress(plain, archive);
      // Nobody may be waiting for it; a failure leaves the plain archive, which readers read just as well.
      compressed.catch(() => undefined);
      rotated = {
        rotated: true,
        archive: { path: archive, firstSeq, lastSeq },
        anchor,
        compressed,
        ...this.prune(options),
      };
    } finally {
      this.lock.release();
    }
    for (const listener of this.listeners) listener([rotated.anchor!]);
    return rotated;
  }

  /** Removes the oldest archives beyond `keepArchives` (under the lock; the newest is always kept). */
  private prune(options: RotateOptions): { removed?: string[] } {
    const keep = options.keepArchives;
    if (keep === undefined) return {};
    const archives = listArchives(this.path);
    const old = archives.slice(0, Math.max(0, archives.length - Math.max(1, keep)));
    if (old.length === 0) return {};
    for (const archive of old) rmSync(archive.path, { force: true });
    return { removed: old.map((a) => a.path) };
  }

  /** Finishes what a rotation interrupted by a crash left: compresses leftover plain archives, drops temp files. */
  async sweep(): Promise<void> {
    for (const archive of listArchives(this.path)) {
      if (!archive.compressed) {
        const stamp = /\.rotating-(\d{8}T\d{6}Z)-/.exec(archive.path)?.[1] ?? utcStamp(new Date());
        await compress(archive.path, archivePath(this.path, stamp, archive.firstSeq, archive.lastSeq));
      }
    }
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    this.ino = -1;
    this.lock?.close();
    this.lock = undefined;
    EventLog.open.delete(this.path);
  }

  private withArchive<T>(archive: Archive, read: (src: ByteSource, size: number) => T): T {
    let opened;
    try {
      opened = openArchive(archive);
    } catch (err) {
      // Compressed and removed between listing and opening: read the compressed copy.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || archive.compressed) throw err;
      const gz = listArchives(this.path).find((a) => a.firstSeq === archive.firstSeq && a.compressed);
      if (!gz) throw err;
      opened = openArchive(gz);
    }
    try {
      return read(opened.src, opened.size);
    } finally {
      opened.close();
    }
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

  private serialise<T>(task: () => Promise<T>): Promise<T> {
    const run = this.exclusive.then(task);
    this.exclusive = run.catch(() => undefined);
    return run;
  }

  private writeBatch(events: NewEvent[]): Promise<EventRecord[]> {
    return this.serialise(() => this.writeBatchLocked(events));
  }

  private async writeBatchLocked(events: NewEvent[]): Promise<EventRecord[]> {
    this.lock ??= new FileLock(this.lockPath);
    await this.lock.acquire();
    try {
      this.ensureOpen(true);
      this.refresh();
      return this.writeRecords(events);
    } finally {
      this.lock.release();
    }
  }

  /** Assigns seqs and appends; the caller holds the lock and has refreshed. */
  private writeRecords(events: NewEvent[]): EventRecord[] {
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
  }

  /** Opens (or reopens, after the path was replaced) the file; false when it does not exist and `create` is off. */
  private ensureOpen(create: boolean): boolean {
    let ino: number;
    try {
      ino = statSync(this.path).ino;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      if (!create) return false;
      ino = -2;
    }
    if (this.fd >= 0 && ino === this.ino && (this.writable || !create)) return true;
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    try {
      this.fd = openSync(this.path, create ? 'a+' : 'r');
    } catch (err) {
      // Renamed away between stat and open (a rotation in another process): no active file this instant.
      if (create || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.ino = -1;
      return false;
    }
    this.writable = create;
    const st = fstatSync(this.fd);
    if (st.ino !== this.ino) {
      // A different file (first open, or the log was rotated or replaced): account for it from the start.
      // Numbering continues from what is on disk (its archives, after a rotation), not from memory: a city
      // removed and created again starts at 1.
      this.scanned = 0;
      this.lastSeq = 0;
      this.endsWithNewline = true;
    }
    this.ino = st.ino;
    return true;
  }

  /** Brings lastSeq up to date with bytes appended since the last look, by this or any other process. */
  private refresh(): void {
    const size = fstatSync(this.fd).size;
    if (size < this.scanned) this.scanned = 0;
    if (this.scanned === 0) {
      // A new file: numbering continues after the archives (a rotation's anchor, or a crash right after one).
      this.lastSeq = archivedHead(this.path);
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

/** Gzips a plain archive to `target` (through a temp file) and removes the plain one. */
async function compress(plain: string, target: string): Promise<void> {
  const tmp = `${target}.tmp`;
  await pipeline(createReadStream(plain), createGzip(), createWriteStream(tmp));
  renameSync(tmp, target);
  rmSync(plain, { force: true });
}
