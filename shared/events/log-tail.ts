import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import { archivedHead } from './archives.js';
import type { EventLog } from './event-log.js';
import { completeEnd, lastRecord } from './log-file.js';
import { parseEventLine, type EventRecord } from './record.js';

const READ_CHUNK = 1024 * 1024;
const NEWLINE = 0x0a;

export type TailListener = (records: EventRecord[]) => void;

/**
 * Follows one log as it grows: reads only the bytes appended since the last read, keeps a line split across
 * two writes until its newline arrives, follows the log into its new file after a rotation, and hands each
 * batch of new records to every listener (one read, any number of readers).
 *
 * It follows the log only while someone listens: the first listener starts it at the log's end (what is
 * already there is history, read through EventLog), the last one to leave stops it. A city nobody streams
 * costs no file watch, no wake-up and no read per event.
 *
 * chokidar watches the file; we act on its `raw` events, which arrive for every write (its `change` events
 * are throttled to one per 50 ms, and the rest dropped). A slow poll backs the watcher up, and writers in
 * this process `poke()` it directly.
 */
export class LogTail {
  private fd = -1;
  private ino = -1;
  /** Offset of the first byte not yet consumed: always just past a "\n". */
  private offset = 0;
  private lastSeq = 0;
  private scheduled = false;
  private closed = false;
  private readonly listeners = new Set<TailListener>();
  /** While following: the file watcher and the backup poll. */
  private following: { watcher: FSWatcher; poll: NodeJS.Timeout } | undefined;

  readonly path: string;

  constructor(
    /** The log followed; read through it to catch up across rotations. */
    private readonly log: EventLog,
    private readonly pollMs = 1000,
  ) {
    this.path = log.path;
  }

  /** The highest seq handed to listeners (or present when following started); 0 while nobody listens. */
  get head(): number {
    return this.following ? this.lastSeq : 0;
  }

  /** Adds a listener; the first one starts following the log from its current end. */
  subscribe(listener: TailListener): () => void {
    if (this.closed) return () => undefined;
    this.listeners.add(listener);
    if (!this.following) this.follow();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) void this.unfollow();
    };
  }

  /** Resolves once a record with seq >= `seq` has been seen, or after `timeoutMs`; true if it was seen. */
  waitFor(seq: number, timeoutMs: number): Promise<boolean> {
    if (this.following && this.lastSeq >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (seen: boolean) => {
        clearTimeout(timer);
        unsubscribe();
        resolve(seen);
      };
      const timer = setTimeout(() => done(this.lastSeq >= seq), timeoutMs);
      const unsubscribe = this.subscribe(() => {
        if (this.lastSeq >= seq) done(true);
      });
      // Subscribing may just have started following, at an end already past `seq`.
      if (this.lastSeq >= seq) done(true);
      else this.poke();
    });
  }

  /** Reads what is new, soon (coalescing bursts of notifications into one read); nothing while nobody listens. */
  poke(): void {
    if (this.scheduled || !this.following) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.following) return;
      try {
        this.read();
      } catch {
        // The file was between renames (a rotation): the next notification or poll reads again.
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    await this.unfollow();
  }

  private follow(): void {
    this.openCurrent(true);
    const watcher = watch(this.path, { ignoreInitial: true, atomic: false, persistent: false });
    watcher.on('raw', () => this.poke());
    watcher.on('add', () => this.poke());
    // Appends made while the watch was being set up.
    watcher.on('ready', () => this.poke());
    watcher.on('error', () => undefined);
    const poll = setInterval(() => this.poke(), this.pollMs);
    poll.unref();
    this.following = { watcher, poll };
  }

  private async unfollow(): Promise<void> {
    const following = this.following;
    if (!following) return;
    this.following = undefined;
    clearInterval(following.poll);
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    await following.watcher.close();
  }

  private read(): void {
    const following = this.following;
    let ino: number | undefined;
    try {
      ino = statSync(this.path).ino;
    } catch {
      ino = undefined;
    }
    if (this.fd >= 0) {
      // Finish the file we have open first: after a rotation its last records are still ours to deliver.
      this.drain();
      if (this.following !== following || ino === this.ino) return;
      closeSync(this.fd);
      this.fd = -1;
    }
    if (ino === undefined) return;
    this.openCurrent(false);
    if (this.fd < 0) return;
    // The log may have rotated more than once since we last read: whatever went into archives we never
    // had open comes from the log's own reader, then we follow the new file from where that left off.
    let missed;
    let end;
    try {
      end = completeEnd(this.fd, fstatSync(this.fd).size);
      missed = this.log.after(this.lastSeq);
    } catch (err) {
      // Caught mid-rotation: forget the new file, so that the next read makes the whole switch again.
      closeSync(this.fd);
      this.fd = -1;
      throw err;
    }
    if (missed.length) {
      this.lastSeq = missed.at(-1)!.seq;
      for (const listener of [...this.listeners]) listener(missed);
      if (this.following !== following) return;
    }
    this.offset = end;
    this.drain();
  }

  private openCurrent(atEnd: boolean): void {
    try {
      this.fd = openSync(this.path, 'r');
    } catch {
      this.fd = -1;
      if (atEnd) this.lastSeq = archivedHead(this.path);
      return;
    }
    this.ino = fstatSync(this.fd).ino;
    this.offset = 0;
    if (atEnd) {
      const size = fstatSync(this.fd).size;
      this.offset = completeEnd(this.fd, size);
      this.lastSeq = lastRecord(this.fd, this.offset)?.record.seq ?? archivedHead(this.path);
    }
  }

  private drain(): void {
    const following = this.following;
    let size = fstatSync(this.fd).size;
    if (size < this.offset) this.offset = 0;
    let want = READ_CHUNK;
    while (size > this.offset) {
      const length = Math.min(want, size - this.offset);
      const buf = Buffer.allocUnsafe(length);
      const n = readSync(this.fd, buf, 0, length, this.offset);
      if (n <= 0) break;
      const end = buf.lastIndexOf(NEWLINE, n - 1);
      if (end < 0) {
        // A line still being written (wait for its newline), or one longer than the buffer (read more).
        if (this.offset + n >= size) break;
        want *= 2;
        continue;
      }
      want = READ_CHUNK;
      const records: EventRecord[] = [];
      let start = 0;
      for (let i = buf.indexOf(NEWLINE, 0); i >= 0 && i <= end; i = buf.indexOf(NEWLINE, start)) {
        const record = parseEventLine(buf.toString('utf8', start, i));
        if (record && record.seq > this.lastSeq) {
          records.push(record);
          this.lastSeq = record.seq;
        }
        start = i + 1;
      }
      this.offset += end + 1;
      if (records.length) for (const listener of [...this.listeners]) listener(records);
      // The last listener left (and maybe a new one started over, at the end): this read is over.
      if (this.following !== following) return;
      size = fstatSync(this.fd).size;
    }
  }
}
