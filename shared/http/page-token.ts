import { Problem } from './problem.js';

// Page tokens: `v1:` + base64url of a small JSON object whose `k` says what kind of page it continues. Clients
// pass them back unchanged; anything we did not issue is a 400 `invalid-cursor`.

export function encodeToken(kind: string, fields: Record<string, string | number>): string {
  return 'v1:' + Buffer.from(JSON.stringify({ k: kind, ...fields })).toString('base64url');
}

/** The fields of a token of `kind`; a 400 `invalid-cursor` for anything else. */
export function decodeToken(token: string, kind: string): Record<string, unknown> {
  if (token.startsWith('v1:')) {
    try {
      const value: unknown = JSON.parse(Buffer.from(token.slice(3), 'base64url').toString('utf8'));
      if (typeof value === 'object' && value !== null && (value as { k?: unknown }).k === kind) {
        return value as Record<string, unknown>;
      }
    } catch {
      // not JSON: not ours
    }
  }
  throw invalidToken();
}

export function invalidToken(): Problem {
  return new Problem(
    'invalid-cursor',
    'invalid_cursor: cursor is not a valid pagination token; re-fetch the first page',
  );
}
