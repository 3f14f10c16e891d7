// Paged lists: every list route answers at most `limit` items (at most 1000) and a `next_cursor` for the rest.

/** Page sizes the list routes accept. */
export const PAGE_MAX = 1000;

/**
 * Up to `limit` items of a paged list (newest first), fetching pages of at most 1000 and following
 * `next_cursor`. Returns the list body the API would have returned for one page that large: the items, the
 * API's total, and `next_cursor` when more remain.
 */
export async function collectPages<T>(
  limit: number,
  page: (size: number, cursor: string | undefined) => Promise<{ items: T[]; total: number; next_cursor?: string }>,
): Promise<{ items: T[]; total: number; next_cursor?: string }> {
  const items: T[] = [];
  let total: number;
  let cursor: string | undefined;
  do {
    const body = await page(Math.min(PAGE_MAX, limit - items.length), cursor);
    items.push(...body.items.slice(0, limit - items.length));
    total = body.total;
    cursor = body.next_cursor;
  } while (cursor && items.length < limit);
  return cursor ? { items, total, next_cursor: cursor } : { items, total };
}

/**
 * Every item of a paged list, following `next_cursor` with pages of 1000: for what a command needs whole
 * (a thread, the registered cities, the events it prints).
 */
export async function allPages<T>(
  page: (size: number, cursor: string | undefined) => Promise<{ items: T[]; next_cursor?: string }>,
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const body = await page(PAGE_MAX, cursor);
    items.push(...body.items);
    cursor = body.next_cursor;
  } while (cursor);
  return items;
}
