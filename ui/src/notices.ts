import { cityUrl } from './urls.js';

// What the page's browser notifications say: the notice each event of the supervisor stream makes, the same kinds
// `[notify]` of supervisor.toml sends (supervisor/notices.ts; test/unit/notify.test.ts holds them together).

export interface TaggedEvent {
  seq: number;
  type: string;
  city: string;
  subject?: string;
  message?: string;
  payload?: Record<string, unknown>;
}

/** The same kinds as `[notify]` of supervisor.toml (shared/config/notify-config.ts; test/unit/notify.test.ts). */
export const NOTICE_KINDS = ['permission', 'question', 'run_failed', 'quarantined', 'review'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

/** Each kind as the page's checkboxes name it: what happened, in a person's words. */
export const KIND_LABELS: Record<NoticeKind, string> = {
  permission: 'A session asks for a permission',
  question: 'A session asks a question',
  run_failed: 'A run fails',
  quarantined: 'An agent is quarantined',
  review: 'A review waits for you (requested, or conflicted)',
};

/**
 * The kinds a person turned off, as the browser keeps them (a JSON array of names). What is kept is what was
 * turned off, not on: a kind added later is on, as `[notify]` without `on` sends every kind. Anything unreadable,
 * or a name the page no longer knows, is ignored.
 */
export function kindsOff(stored: string | null): Set<NoticeKind> {
  if (stored === null) return new Set();
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return new Set();
  }
  if (!Array.isArray(parsed)) return new Set();
  return new Set(NOTICE_KINDS.filter((kind) => parsed.includes(kind)));
}

/** What `kindsOff` reads back: the kinds turned off, in their usual order; null when none is (nothing to keep). */
export function storedKindsOff(off: ReadonlySet<NoticeKind>): string | null {
  const names = NOTICE_KINDS.filter((kind) => off.has(kind));
  return names.length ? JSON.stringify(names) : null;
}

export interface PageNotice {
  /** The same kinds as `[notify]`: `permission`, `question`, `run_failed`, `quarantined`, `review`. */
  kind: NoticeKind;
  title: string;
  body: string;
  /** The dashboard page it is about. */
  path: string;
}

function text(payload: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = payload?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The notice an event makes, if it is one of the kinds (the supervisor's `[notify]` makes the same). */
export function noticeOf(e: TaggedEvent): PageNotice | undefined {
  const session = text(e.payload, 'session_id') ?? e.subject ?? '';
  const sessionPage = cityUrl(e.city, `/session/${encodeURIComponent(session)}`);
  if (e.type === 'session.pending') {
    const question = text(e.payload, 'kind') === 'question';
    return {
      kind: question ? 'question' : 'permission',
      title: `${e.city}: ${session} is waiting for you (${question ? 'a question' : 'a permission'})`,
      body: text(e.payload, 'prompt') ?? '',
      path: sessionPage,
    };
  }
  if (e.type === 'molecule.resolved' && text(e.payload, 'outcome') === 'fail') {
    const run = text(e.payload, 'run_id') ?? e.subject ?? '';
    const formula = text(e.payload, 'formula');
    return {
      kind: 'run_failed',
      title: `${e.city}: run ${run}${formula ? ` of ${formula}` : ''} failed`,
      body: text(e.payload, 'reason') ?? e.message ?? '',
      path: cityUrl(e.city, `/runs/${encodeURIComponent(run)}`),
    };
  }
  if (e.type === 'session.quarantined') {
    const agent = text(e.payload, 'template') ?? session;
    return {
      kind: 'quarantined',
      title: `${e.city}: ${agent} is quarantined`,
      body: e.message ?? '',
      path: sessionPage,
    };
  }
  if (e.type === 'review.requested' || e.type === 'review.conflicted') {
    const bead = text(e.payload, 'bead') ?? e.subject ?? '';
    const agent = text(e.payload, 'agent') ?? '';
    const conflicted = e.type === 'review.conflicted';
    return {
      kind: 'review',
      title: conflicted
        ? `${e.city}: the review of ${bead} conflicts with ${text(e.payload, 'base') ?? 'its base'}`
        : `${e.city}: ${agent || 'an agent'} asks for a review of ${bead}`,
      body: e.message ?? text(e.payload, 'branch') ?? '',
      path: cityUrl(e.city, `/reviews/${encodeURIComponent(bead)}`),
    };
  }
  return undefined;
}
