import { readSync } from 'node:fs';
import { parseEventLine, type EventRecord } from './record.js';

// Low-level, synchronous reads of one events.jsonl file by byte offset. Only complete lines (ending in "\n")
// count; lines that do not parse are skipped. Seqs grow with the offset, which is what makes the binary
// search and the backward page reads below possible without scanning the whole file.

const CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

/** Where the bytes are: an open file descriptor, or a buffer (a decompressed archive). */
export type ByteSource = number | Buffer;

export interface LocatedRecord {
  record: EventRecord;
  /** Offset of the line's first byte. */
  start: number;
  /** Offset just past the line's "\n". */
  end: number;
}

function readRange(src: ByteSource, start: number, end: number): Buffer {
  if (typeof src !== 'number') return src.subarray(start, Math.min(end, src.length));
  const fd = src;
  const buf = Buffer.allocUnsafe(end - start);
  let done = 0;
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, start + done);
    if (n === 0) break;
    done += n;
  }
  return done === buf.length ? buf : buf.subarray(0, done);
}

/** The offset just past the last "\n" in [floor, end); `floor` when there is none. */
export function completeEnd(src: ByteSource, end: number, floor = 0): number {
  let pos = end;
  while (pos > floor) {
    const from = Math.max(floor, pos - CHUNK);
    const buf = readRange(src, from, pos);
    const i = buf.lastIndexOf(NEWLINE);
    if (i >= 0) return from + i + 1;
    pos = from;
  }
  return floor;
}

/** Complete lines of [floor, end), newest (highest offset) first. `floor` must be a line start. */
export function* recordsBackward(src: ByteSource, end: number, floor = 0): Generator<LocatedRecord> {
  let bufEnd = completeEnd(src, end, floor);
  let bufStart = bufEnd;
  let buf: Buffer = Buffer.alloc(0);
  while (bufEnd > floor) {
    // buf holds [bufStart, bufEnd), and bufEnd is just past a "\n".
    const j = buf.length >= 2 ? buf.lastIndexOf(NEWLINE, buf.length - 2) : -1;
    if (j < 0 && bufStart > floor) {
      const from = Math.max(floor, bufStart - CHUNK);
      buf = Buffer.concat([readRange(src, from, bufStart), buf]);
      bufStart = from;
      continue;
    }
    const lineStart = j < 0 ? 0 : j + 1;
    const start = bufStart + lineStart;
    const record = parseEventLine(buf.toString('utf8', lineStart, buf.length - 1));
    if (record) yield { record, start, end: bufEnd };
    buf = buf.subarray(0, lineStart);
    bufEnd = start;
  }
}

/** Complete lines of [start, end), oldest first. `start` must be a line start. */
export function* recordsForward(src: ByteSource, start: number, end: number): Generator<LocatedRecord> {
  let pos = start;
  let carry: Buffer = Buffer.alloc(0);
  let carryStart = start;
  while (pos < end) {
    const chunk = readRange(src, pos, Math.min(end, pos + CHUNK));
    if (chunk.length === 0) break;
    pos += chunk.length;
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let lineStart = 0;
    for (let i = buf.indexOf(NEWLINE); i >= 0; i = buf.indexOf(NEWLINE, lineStart)) {
      const record = parseEventLine(buf.toString('utf8', lineStart, i));
      if (record) yield { record, start: carryStart + lineStart, end: carryStart + i + 1 };
      lineStart = i + 1;
    }
    carry = buf.subarray(lineStart);
    carryStart += lineStart;
  }
}

/** The last well-formed record in [floor, end), or undefined. */
export function lastRecord(src: ByteSource, end: number, floor = 0): LocatedRecord | undefined {
  for (const located of recordsBackward(src, end, floor)) return located;
  return undefined;
}

/** The first well-formed record that starts at or after `offset` (and before `end`). */
function firstRecordFrom(src: ByteSource, offset: number, end: number): LocatedRecord | undefined {
  let start = offset;
  if (offset > 0) {
    // Move to the start of the next line unless `offset` already is one.
    const before = readRange(src, offset - 1, offset);
    if (before[0] !== NEWLINE) {
      let pos = offset;
      start = -1;
      while (pos < end) {
        const buf = readRange(src, pos, Math.min(end, pos + 4096));
        const i = buf.indexOf(NEWLINE);
        if (i >= 0) {
          start = pos + i + 1;
          break;
        }
        pos += buf.length;
        if (buf.length === 0) break;
      }
      if (start < 0) return undefined;
    }
  }
  for (const located of recordsForward(src, start, end)) return located;
  return undefined;
}

/**
 * The offset of the first line whose seq is greater than `seq` (or `end` when none is), found by binary
 * search over byte offsets: O(log n) small reads however long the file.
 */
export function offsetAfterSeq(src: ByteSource, seq: number, end: number, floor = 0): number {
  let lo = floor;
  let hi = end;
  while (hi - lo > CHUNK) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const probe = firstRecordFrom(src, mid, hi);
    if (!probe) {
      hi = mid;
    } else if (probe.record.seq <= seq) {
      lo = probe.end;
    } else {
      hi = probe.start;
    }
  }
  for (const located of recordsForward(src, lo, end)) {
    if (located.record.seq > seq) return located.start;
  }
  return end;
}
