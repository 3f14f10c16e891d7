import type {
  CityPendingEntry,
  CityPendingListBody,
  ListBodySessionResponse,
  SessionResponse,
} from '../../shared/dto/sessions.js';
import { decodeToken, encodeToken } from '../../shared/http/page-token.js';
import { Problem } from '../../shared/http/problem.js';
import type { SessionRecord, SessionStore } from './session-store.js';
import type { Session } from './session.js';

/** What `GET …/sessions` filters and pages by. */
export interface SessionListQuery {
  state?: string;
  template?: string;
  limit: number;
  cursor?: string;
}

/** A page of the city's sessions from its bead store, newest first; closed ones only when asked for. */
export function sessionsPage(
  store: SessionStore,
  query: SessionListQuery,
  viewOf: (record: SessionRecord) => SessionResponse,
): ListBodySessionResponse {
  const before = query.cursor === undefined ? undefined : pageAfter(query.cursor);
  const metadata: Record<string, string> = {};
  if (query.state !== undefined && query.state !== 'all' && query.state !== 'closed') metadata.state = query.state;
  if (query.template !== undefined) metadata.template = query.template;
  const includeClosed = query.state === 'closed' || query.state === 'all';
  const page = store.page({ includeClosed, limit: query.limit, before, metadata });
  let items = page.items;
  if (query.state === 'closed') items = items.filter((r) => r.state === 'closed');
  const body: ListBodySessionResponse = { items: items.map((r) => viewOf(r)), total: page.total };
  if (page.more && page.items.length) body.next_cursor = encodeToken('ss', { b: page.items.at(-1)!.id });
  return body;
}

/** The open sessions' pending interactions, oldest first, in pages. */
export function pendingPage(sessions: Iterable<Session>, limit: number, cursor?: string): CityPendingListBody {
  const items: (CityPendingEntry & { at: string })[] = [];
  for (const session of sessions) {
    const pending = session.pending;
    if (!pending) continue;
    items.push({
      session_id: session.id,
      request_id: pending.request_id,
      kind: pending.kind,
      ...(pending.prompt ? { prompt: pending.prompt } : {}),
      at: pending.created_at ?? '',
    });
  }
  items.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.request_id < b.request_id ? -1 : 1));
  // Keyset pages by (time asked, request id): an interaction answered meanwhile shifts nothing.
  const key = (i: { at: string; request_id: string }) => `${i.at}\u0000${i.request_id}`;
  let start = 0;
  if (cursor !== undefined) {
    const { k } = decodeToken(cursor, 'pd');
    if (typeof k !== 'string')
      throw new Problem('invalid-cursor', 'invalid_cursor: cursor is not a valid pagination token');
    start = items.findIndex((i) => key(i) > k);
    if (start < 0) start = items.length;
  }
  const taken = items.slice(start, start + limit);
  const body: CityPendingListBody = { items: taken.map(({ at: _at, ...entry }) => entry), total: items.length };
  if (start + limit < items.length) body.next_cursor = encodeToken('pd', { k: key(taken.at(-1)!) });
  return body;
}

function pageAfter(cursor: string): string {
  const { b } = decodeToken(cursor, 'ss');
  if (typeof b !== 'string')
    throw new Problem('invalid-cursor', 'invalid_cursor: cursor is not a valid pagination token');
  return b;
}
