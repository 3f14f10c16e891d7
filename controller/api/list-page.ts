import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';

/**
 * One page of a short list kept in memory (services, patches, adapters, bindings): the items after the cursor's
 * key, in the list's order, at most `limit` (default 100), with a `next_cursor` naming the last one's key when
 * more follow. Keys must be unique in the list.
 */
export function pageOf<T>(
  all: T[],
  key: (item: T) => string,
  kind: string,
  limit: number | undefined,
  cursor: string | undefined,
): { items: T[]; total: number; next_cursor?: string } {
  let start = 0;
  if (cursor !== undefined) {
    const { after } = decodeToken(cursor, kind);
    if (typeof after !== 'string') throw invalidToken();
    const at = all.findIndex((item) => key(item) === after);
    // The item the page ended on is gone: carry on from where it would sort.
    start = at >= 0 ? at + 1 : all.filter((item) => key(item) <= after).length;
  }
  const size = limit || 100;
  const items = all.slice(start, start + size);
  const more = start + size < all.length;
  return {
    items,
    total: all.length,
    ...(more ? { next_cursor: encodeToken(kind, { after: key(items.at(-1)!) }) } : {}),
  };
}
