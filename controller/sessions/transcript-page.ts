import type { SessionTranscriptResponse } from '../../shared/dto/sessions.js';
import type { Session } from './session.js';
import { structuredHistory, structuredMessages } from './structured-transcript.js';
import { conversation, toEntry } from './transcript.js';

const TRANSCRIPT_DEFAULT = 100;
const TRANSCRIPT_MAX = 1000;

export interface TranscriptQuery {
  format?: 'conversation' | 'raw' | 'structured';
  tail?: number;
  before?: number;
  after?: number;
  /** `structured` only: keep thinking blocks' text and signature. */
  includeThinking?: boolean;
}

/**
 * A page of a session's transcript: the newest `tail` entries, those before a seq, or those after one; read as
 * the conversation (turns), as stored (`raw`), or as the reference's structured messages.
 */
export function transcriptPage(session: Session, query: TranscriptQuery): SessionTranscriptResponse {
  const limit = Math.min(query.tail || TRANSCRIPT_DEFAULT, TRANSCRIPT_MAX);
  const head = session.transcript.head();
  let records;
  let hasOlder: boolean;
  if (query.after !== undefined) {
    records = session.transcript.after(query.after, limit);
    hasOlder = (records[0]?.seq ?? query.after + 1) > 1;
  } else {
    const page = session.transcript.tail(limit, query.before);
    records = page.entries;
    hasOlder = page.more;
  }
  const format = query.format ?? 'conversation';
  const body: SessionTranscriptResponse = {
    id: session.id,
    template: session.record.template,
    provider: session.record.provider,
    format,
    pagination: {
      first_seq: records[0]?.seq ?? 0,
      last_seq: records.at(-1)?.seq ?? 0,
      has_older: hasOlder,
      head,
    },
  };
  if (format === 'raw') body.messages = records.map(toEntry);
  else if (format === 'structured') {
    body.schema_version = 'session.structured.v1';
    body.operation = 'snapshot';
    body.history = structuredHistory(session.id, records, {
      activity: session.view().activity ?? 'idle',
      ...(session.pending ? { pendingRequestId: session.pending.request_id } : {}),
    });
    body.structured_messages = structuredMessages(records, query.includeThinking === true);
  } else body.turns = conversation(records);
  return body;
}
