import { api, cityPath, must, type Schemas } from './api.js';

// What the first view needs is asked for while its code is still on the way: the entry starts the requests the
// view opened by the URL makes first, and the view takes their answers instead of asking again. Requests in
// series (page, entry, view's code, then its data) become requests side by side.

type BeadPage = Schemas['ListBodyBead'];

export interface BeadQuery {
  city: string;
  type: string;
  label: string;
  assignee: string;
  rig: string;
  /** One status (a board column), or '' for every bead. */
  status: string;
  limit: number;
  cursor?: string;
}

/** One page of beads: the request the beads view makes (and the entry starts early for it). */
export function fetchBeads(q: BeadQuery): Promise<BeadPage> {
  const key = keyOf(q);
  const early = started.get(key);
  started.delete(key);
  // Only an answer to a request of the page's first moments: a later view asks afresh.
  if (early && performance.now() - early.at < FRESH_MS) return early.request;
  return must(
    api.GET('/v0/city/{cityName}/beads', {
      params: {
        path: cityPath(q.city),
        query: {
          limit: q.limit,
          ...(q.cursor ? { cursor: q.cursor } : {}),
          ...(q.type ? { type: q.type } : {}),
          ...(q.label ? { label: q.label } : {}),
          ...(q.assignee ? { assignee: q.assignee } : {}),
          ...(q.rig ? { rig: q.rig } : {}),
          ...(q.status ? { status: q.status } : { all: true }),
        },
      },
    }),
  );
}

const started = new Map<string, { at: number; request: Promise<BeadPage> }>();
const FRESH_MS = 5_000;
const keyOf = (q: BeadQuery) =>
  JSON.stringify([q.city, q.type, q.label, q.assignee, q.rig, q.status, q.limit, q.cursor ?? '']);

/** The statuses a bead has: the board's columns. */
export const BEAD_COLUMNS = ['open', 'in_progress', 'closed'] as const;
/** The first page of each list of beads. */
export const BEAD_PAGE = 200;

/** Starts the first requests of the view at `location`, when it is one whose data is worth starting early. */
export function prefetchFor(location: Location): void {
  const beads = /^\/ui\/city\/([^/]+)\/beads$/.exec(location.pathname);
  if (!beads) return;
  const params = new URLSearchParams(location.search);
  const base = {
    city: decodeURIComponent(beads[1]!),
    type: params.get('type') ?? '',
    label: params.get('label') ?? '',
    assignee: params.get('assignee') ?? '',
    rig: params.get('rig') ?? '',
    limit: BEAD_PAGE,
  };
  const status = params.get('status') ?? '';
  const statuses = params.get('view') === 'table' ? [status] : BEAD_COLUMNS.filter((c) => !status || c === status);
  for (const s of statuses) {
    const q: BeadQuery = { ...base, status: s };
    const request = fetchBeads(q);
    // Taken by the view within a moment; should it never come (an error drew another page), nothing waits on it.
    request.catch((err: Error) => console.warn(`prefetching beads failed: ${err.message}`));
    started.set(keyOf(q), { at: performance.now(), request });
  }
}
