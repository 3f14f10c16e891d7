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

export interface PageNotice {
  /** The same kinds as `[notify]`: `permission`, `question`, `run_failed`, `quarantined`. */
  kind: 'permission' | 'question' | 'run_failed' | 'quarantined';
  title: string;
  body: string;
  /** The dashboard page it is about. */
  path: string;
}

function text(payload: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = payload?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The notice an event makes, if it is one of the four kinds (the supervisor's `[notify]` makes the same). */
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
  return undefined;
}
