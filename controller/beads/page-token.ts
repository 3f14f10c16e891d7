import { Problem } from '../../shared/http/problem.js';

/** A bead page token: `v1:` + base64url of {"k":"cb","ca":<created_at>,"id":<id>} of the page's last bead. */
export function encodeBeadCursor(bead: { id: string; created_at: string }): string {
  return 'v1:' + Buffer.from(JSON.stringify({ k: 'cb', ca: bead.created_at, id: bead.id })).toString('base64url');
}

/** The id a page token points below; a 400 `invalid-cursor` for anything we did not issue. */
export function decodeBeadCursor(token: string): string {
  const invalid = () =>
    new Problem('invalid-cursor', 'invalid_cursor: cursor is not a valid pagination token; re-fetch the first page');
  if (!token.startsWith('v1:')) throw invalid();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token.slice(3), 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const v = value as { k?: unknown; id?: unknown };
  if (v.k !== 'cb' || typeof v.id !== 'string' || v.id === '') throw invalid();
  return v.id;
}
