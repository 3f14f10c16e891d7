import type { ConversationTranscriptRecord, ExtMsgTranscriptAckInputBody } from '../../shared/dto/extmsg.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import type { SessionService } from '../sessions/session-service.js';
import { checkConversation, invalid } from './extmsg-checks.js';
import { conversationKey, type ExtmsgStore, type ListedRecord } from './extmsg-store.js';

export interface TranscriptQuery {
  scope_id?: string;
  provider?: string;
  account_id?: string;
  conversation_id?: string;
  parent_conversation_id?: string;
  kind?: string;
  /** Within one conversation: its messages after (or, in `desc` order, before) this sequence. */
  after_sequence?: number;
  /** `next_cursor` of the page before. */
  cursor?: string;
  limit?: number;
  order?: 'asc' | 'desc';
}

const CURSOR_KIND = 'xt';

/**
 * The conversations' transcripts: every message in and out, listed by any part of their conversations, in the
 * order recorded (or newest first), in pages. A page's cursor is its last message's place in the whole listing,
 * so a listing of several conversations goes on where it stopped (a sequence is only one conversation's).
 * Acks record what a session has seen of a conversation.
 */
export class ConversationTranscripts {
  constructor(
    private readonly o: {
      store: ExtmsgStore;
      sessions: SessionService;
    },
  ) {}

  list(query: TranscriptQuery): { items: ConversationTranscriptRecord[]; total: number; next_cursor?: string } {
    const matches = ({ record: r }: ListedRecord) =>
      (['scope_id', 'provider', 'account_id', 'conversation_id', 'parent_conversation_id', 'kind'] as const).every(
        (k) => query[k] === undefined || r.Conversation[k] === query[k],
      );
    let listed =
      query.scope_id !== undefined &&
      query.provider !== undefined &&
      query.account_id !== undefined &&
      query.conversation_id !== undefined
        ? this.o.store
            .conversation(
              conversationKey({
                scope_id: query.scope_id,
                provider: query.provider,
                account_id: query.account_id,
                conversation_id: query.conversation_id,
                kind: 'room',
              }),
            )
            .filter(matches)
        : this.o.store.transcript().filter(matches);
    const total = listed.length;
    const desc = query.order === 'desc';
    const after = query.after_sequence;
    if (after !== undefined)
      listed = listed.filter((l) => (desc ? l.record.Sequence < after : l.record.Sequence > after));
    if (query.cursor !== undefined) {
      const { p } = decodeToken(query.cursor, CURSOR_KIND);
      if (typeof p !== 'number' || !Number.isInteger(p) || p < 0) throw invalidToken();
      listed = listed.filter((l) => (desc ? l.position < p : l.position > p));
    }
    if (desc) listed = [...listed].reverse();
    const limit = Math.min(query.limit || 100, 500);
    const page = listed.slice(0, limit);
    return {
      items: page.map((l) => l.record),
      total,
      ...(listed.length > limit ? { next_cursor: encodeToken(CURSOR_KIND, { p: page.at(-1)!.position }) } : {}),
    };
  }

  ack(body: ExtMsgTranscriptAckInputBody): number {
    checkConversation(body.conversation, 'body.conversation');
    const session = this.o.sessions.find(body.session_id);
    const key = conversationKey(body.conversation);
    const last = this.o.store.conversation(key).at(-1)?.record.Sequence ?? 0;
    if (body.sequence > last)
      throw invalid('body.sequence', `the conversation has ${last} messages; ${body.sequence} is past its end`);
    return this.o.store.ack(session.id, key, body.sequence);
  }
}
