import { closeSync, openSync, readdirSync, readFileSync, fstatSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { ByteSource } from './log-file.js';

// Rotated parts of a log, named after the active file and the seqs they hold:
//   events.jsonl.rotating-20261122T031500Z-seq-1-5000        just rotated, plain, being compressed
//   events.jsonl.archive-20261122T031500Z-seq-1-5000.gz      compressed
// Readers read them in seq order before the active file, so rotation is invisible but for its anchor event.

export interface Archive {
  path: string;
  firstSeq: number;
  lastSeq: number;
  compressed: boolean;
}

const ROTATING = /\.rotating-(\d{8}T\d{6}Z)-seq-(\d+)-(\d+)$/;
const ARCHIVE = /\.archive-(\d{8}T\d{6}Z)-seq-(\d+)-(\d+)\.gz$/;

/** `YYYYMMDDTHHMMSSZ`. */
export function utcStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

export function rotatingPath(activePath: string, stamp: string, first: number, last: number): string {
  return `${activePath}.rotating-${stamp}-seq-${first}-${last}`;
}

export function archivePath(activePath: string, stamp: string, first: number, last: number): string {
  return `${activePath}.archive-${stamp}-seq-${first}-${last}.gz`;
}

/** The archives of a log, oldest first; when one range exists both plain and compressed, the plain one. */
export function listArchives(activePath: string): Archive[] {
  const base = basename(activePath);
  const dir = dirname(activePath);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const byRange = new Map<string, Archive>();
  for (const name of names) {
    if (!name.startsWith(`${base}.`)) continue;
    const plain = ROTATING.exec(name);
    const gz = plain ? null : ARCHIVE.exec(name);
    const match = plain ?? gz;
    if (!match || name.slice(0, match.index) !== base) continue;
    const archive: Archive = {
      path: join(dir, name),
      firstSeq: Number(match[2]),
      lastSeq: Number(match[3]),
      compressed: gz !== null,
    };
    const key = `${archive.firstSeq}-${archive.lastSeq}`;
    const seen = byRange.get(key);
    if (!seen || (seen.compressed && !archive.compressed)) byRange.set(key, archive);
  }
  return [...byRange.values()].sort((a, b) => a.firstSeq - b.firstSeq);
}

/** The highest seq any archive holds (0 without archives): where numbering continues after rotation. */
export function archivedHead(activePath: string): number {
  return listArchives(activePath).reduce((max, a) => Math.max(max, a.lastSeq), 0);
}

let lastInflated: { path: string; bytes: Buffer } | undefined;

/** The bytes of an archive, to read with the same functions as the active file; `close` when done. */
export function openArchive(archive: Archive): { src: ByteSource; size: number; close: () => void } {
  if (archive.compressed) {
    // Pages through old history usually revisit the same archive: keep the last one inflated.
    if (lastInflated?.path !== archive.path) {
      lastInflated = { path: archive.path, bytes: gunzipSync(readFileSync(archive.path)) };
    }
    const bytes = lastInflated.bytes;
    return { src: bytes, size: bytes.length, close: () => undefined };
  }
  const fd = openSync(archive.path, 'r');
  return { src: fd, size: fstatSync(fd).size, close: () => closeSync(fd) };
}
