import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';

/** A bead page token: `v1:` + base64url of {"k":"cb","ca":<created_at>,"id":<id>} of the page's last bead. */
export function encodeBeadCursor(bead: { id: string; created_at: string }): string {
  return encodeToken('cb', { ca: bead.created_at, id: bead.id });
}

/** The id a page token points below; a 400 `invalid-cursor` for anything we did not issue. */
export function decodeBeadCursor(token: string): string {
  const { id } = decodeToken(token, 'cb');
  if (typeof id !== 'string' || id === '') throw invalidToken();
  return id;
}

/** A ready-queue page token: `v1:` + base64url of {"k":"rb","id":<id>} of the page's last bead (oldest first). */
export function encodeReadyCursor(bead: { id: string }): string {
  return encodeToken('rb', { id: bead.id });
}

/** The id a ready page token continues after; a 400 `invalid-cursor` for anything we did not issue. */
export function decodeReadyCursor(token: string): string {
  const { id } = decodeToken(token, 'rb');
  if (typeof id !== 'string' || id === '') throw invalidToken();
  return id;
}
