// Positions in event logs, as clients see them.
//  - Composite cursor (supervisor scope): `name:seq` entries, comma-separated, sorted by name;
//    the literal `0` means "every log from its start".
//  - Page token (city list pagination): `v1:` + base64url of {"k":"sq","s":<seq>}.

import { decodeToken, encodeToken, invalidToken } from '../http/page-token.js';
import { Problem } from '../http/problem.js';

export type CompositeCursor = Map<string, number>;

/** Every log from its start. */
export const REPLAY_ALL = '0';

export function formatCursor(cursor: CompositeCursor): string {
  return [...cursor.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, seq]) => `${name}:${seq}`)
    .join(',');
}

/**
 * The per-log positions of one supervisor stream, which formats its composite cursor for every frame it
 * sends: the names are sorted once, when a log joins, not per frame (hundreds of streams, one frame each per
 * event).
 */
export class StreamPositions extends Map<string, number> {
  private sortedNames: string[] | undefined;

  override set(name: string, seq: number): this {
    if (!this.has(name)) this.sortedNames = undefined;
    return super.set(name, seq);
  }

  override delete(name: string): boolean {
    this.sortedNames = undefined;
    return super.delete(name);
  }

  /** The same text as `formatCursor(this)`. */
  cursor(): string {
    this.sortedNames ??= [...this.keys()].sort();
    let text = '';
    for (const name of this.sortedNames) text += `${text === '' ? '' : ','}${name}:${this.get(name)}`;
    return text;
  }
}

/**
 * Parses a composite cursor. `'0'` returns the string `'0'` (replay everything); anything malformed
 * (an entry without `:`, an empty name, a seq that is not a non-negative integer) is a 400 problem.
 */
export function parseCursor(text: string, what = 'cursor'): CompositeCursor | typeof REPLAY_ALL {
  const trimmed = text.trim();
  if (trimmed === REPLAY_ALL) return REPLAY_ALL;
  const cursor: CompositeCursor = new Map();
  if (trimmed === '') return cursor;
  for (const entry of trimmed.split(',')) {
    const colon = entry.lastIndexOf(':');
    const name = colon > 0 ? entry.slice(0, colon) : '';
    const seq = colon > 0 ? entry.slice(colon + 1) : '';
    if (name === '' || !/^\d+$/.test(seq) || !Number.isSafeInteger(Number(seq))) {
      throw new Problem(
        'invalid-cursor',
        `invalid_cursor: ${what} ${JSON.stringify(text)}: entry ${JSON.stringify(entry)} is not <name>:<seq>`,
      );
    }
    cursor.set(name, Number(seq));
  }
  return cursor;
}

/** A non-negative integer seq from a query parameter or `Last-Event-ID`; a 400 problem otherwise. */
export function parseSeq(text: string, what: string): number {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed) || !Number.isSafeInteger(Number(trimmed))) {
    throw new Problem(
      'invalid-cursor',
      `invalid_cursor: ${what} ${JSON.stringify(text)} is not a non-negative integer`,
    );
  }
  return Number(trimmed);
}

export function encodePageToken(seq: number): string {
  return encodeToken('sq', { s: seq });
}

/** The seq boundary of a page token; a 400 `invalid-cursor` for anything we did not issue. */
export function decodePageToken(token: string): number {
  const { s } = decodeToken(token, 'sq');
  if (!Number.isSafeInteger(s) || (s as number) < 1) throw invalidToken();
  return s as number;
}
