import type { NoticeKind } from '../shared/config/notify-config.js';
import type { WireTaggedEvent } from '../shared/dto/events.js';
import type { EventRecord } from '../shared/events/record.js';
import { toWireEvent } from '../shared/events/wire.js';

/**
 * What a person is told (the JSON a webhook gets and a command reads on stdin): the kind, one line to show, a
 * second with the detail, the dashboard page to open, and the event itself as the supervisor stream carries it.
 */
export interface Notice {
  kind: NoticeKind;
  city: string;
  title: string;
  text: string;
  /** The dashboard page about it (`/ui/city/…` on this supervisor). */
  url: string;
  event: WireTaggedEvent;
}

function field(payload: unknown, name: string): string | undefined {
  const value = (payload as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The notice an event of a city's log makes, if any: read from its type and the fields its payload declares
 * (session.pending — a question or a permission by its `kind` —, molecule.resolved with the outcome `fail`, session.quarantined,
 * review.requested and review.conflicted) — the supervisor knows no more
 * of a city than its events say.
 */
export function noticeOf(city: string, record: EventRecord, base: string): Notice | undefined {
  const event: WireTaggedEvent = { ...toWireEvent(record), city };
  const page = (path: string) => `${base}/ui/city/${encodeURIComponent(city)}/${path}`;
  const session = field(record.payload, 'session_id') ?? record.subject ?? '';
  switch (record.type) {
    case 'session.pending': {
      // A question wants a text answer from the person; anything else (a tool approval) allow or deny.
      const kind = field(record.payload, 'kind') ?? 'tool-approval';
      const question = kind === 'question';
      return {
        kind: question ? 'question' : 'permission',
        city,
        title: `${city}: ${session} is waiting for you (${question ? 'a question' : 'a permission'})`,
        text: field(record.payload, 'prompt') ?? kind,
        url: page(`session/${encodeURIComponent(session)}`),
        event,
      };
    }
    case 'molecule.resolved': {
      if (field(record.payload, 'outcome') !== 'fail') return undefined;
      const run = field(record.payload, 'run_id') ?? record.subject ?? '';
      const formula = field(record.payload, 'formula');
      return {
        kind: 'run_failed',
        city,
        title: `${city}: run ${run}${formula ? ` of ${formula}` : ''} failed`,
        text: field(record.payload, 'reason') ?? record.message ?? 'a step failed',
        url: page(`runs/${encodeURIComponent(run)}`),
        event,
      };
    }
    case 'session.quarantined': {
      const agent = field(record.payload, 'template') ?? session;
      return {
        kind: 'quarantined',
        city,
        title: `${city}: ${agent} is quarantined (session ${session})`,
        text: record.message ?? 'it kept failing; wake it to try again',
        url: page(`session/${encodeURIComponent(session)}`),
        event,
      };
    }
    case 'review.requested':
    case 'review.conflicted': {
      // A review waits on a person: to decide it, or (conflicted) to send it back so its agent mends it.
      const bead = field(record.payload, 'bead') ?? record.subject ?? '';
      const base = field(record.payload, 'base') ?? 'its base';
      const conflicted = record.type === 'review.conflicted';
      return {
        kind: 'review',
        city,
        title: conflicted
          ? `${city}: the review of ${bead} conflicts with ${base}`
          : `${city}: ${field(record.payload, 'agent') ?? 'an agent'} asks for a review of ${bead}`,
        text: record.message ?? field(record.payload, 'branch') ?? bead,
        url: page(`reviews/${encodeURIComponent(bead)}`),
        event,
      };
    }
    default:
      return undefined;
  }
}
