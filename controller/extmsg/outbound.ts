import { randomBytes } from 'node:crypto';
import type { ExtMsgOutboundInputBody, OutboundResult } from '../../shared/dto/extmsg.js';
import type { SessionService } from '../sessions/session-service.js';
import type { Adapters } from './adapters.js';
import type { Bindings } from './bindings.js';
import { checkAttachments, checkConversation, invalid, splitMessage } from './extmsg-checks.js';
import { conversationKey, type ExtmsgStore, type PendingDelivery } from './extmsg-store.js';
import type { OutboundDelivery } from './outbound-delivery.js';

/**
 * What a session publishes to a conversation (asked for, or a reply): recorded in the transcript, cut to the
 * adapter's longest message, handed to the delivery (which retries until the adapter takes it); idempotent by
 * key.
 */
export class Outbound {
  constructor(
    private readonly o: {
      store: ExtmsgStore;
      sessions: SessionService;
      adapters: Adapters;
      bindings: Bindings;
      delivery: OutboundDelivery;
    },
  ) {}

  async publish(body: ExtMsgOutboundInputBody): Promise<OutboundResult> {
    if (body.idempotency_key) {
      const earlier = this.o.store.outboundResult(body.idempotency_key);
      if (earlier) return earlier;
    }
    const attachments = checkAttachments(body.attachments, 'body.attachments');
    await this.o.bindings.expire();
    const session = this.o.sessions.find(body.session_id);
    let conversation = body.conversation;
    if (conversation) checkConversation(conversation, 'body.conversation');
    else {
      const mine = this.o.bindings.ofSession(session.id);
      if (mine.length !== 1) {
        throw invalid(
          'body.conversation',
          `session ${session.id} has ${mine.length} bound conversations: name the conversation`,
        );
      }
      conversation = mine[0]!.Conversation;
    }
    if (body.text.trim() === '') throw invalid('body.text', 'text is empty');
    const adapter = this.o.adapters.require(conversation.provider, conversation.account_id);
    if (attachments.length > 0 && !adapter.capabilities?.SupportsAttachments) {
      throw invalid(
        'body.attachments',
        `the ${adapter.provider} adapter does not take attachments (its capabilities say SupportsAttachments: false)`,
      );
    }
    const max = adapter.capabilities?.MaxMessageLength ?? 0;
    const parts = splitMessage(body.text, max);
    const messageId = `out-${randomBytes(8).toString('hex')}`;
    const binding = this.o.bindings.of(conversation);
    const entry = this.o.store.append({
      Conversation: conversation,
      Kind: 'outbound',
      Provenance: 'live',
      ProviderMessageID: messageId,
      Actor: { id: session.id, display_name: session.record.session_name, is_bot: true },
      Text: body.text,
      ExplicitTarget: '',
      ReplyToMessageID: body.reply_to_message_id ?? '',
      Attachments: attachments,
      SourceSessionID: session.id,
      CreatedAt: new Date().toISOString(),
      Metadata: { parts: String(parts.length) },
    });
    const pending: PendingDelivery = {
      message_id: messageId,
      provider: adapter.provider,
      account_id: adapter.account_id,
      conversation,
      session_id: session.id,
      parts,
      sent: 0,
      attempts: 0,
      next_at: Date.now(),
      ...(body.reply_to_message_id ? { reply_to_message_id: body.reply_to_message_id } : {}),
      ...(attachments.length > 0 ? { attachments } : {}),
    };
    const first = await this.o.delivery.deliver(pending);
    const result: OutboundResult = {
      Receipt: {
        MessageID: messageId,
        Conversation: conversation,
        Delivered: first.delivered,
        FailureKind: first.failure,
        RetryAfter: first.retryAfterMs,
        Metadata: { parts: String(parts.length) },
      },
      DeliveryContext: {
        ID: `dc-${conversationKey(conversation)}`,
        SchemaVersion: 1,
        SessionID: session.id,
        Conversation: conversation,
        BindingGeneration: binding?.BindingGeneration ?? 0,
        LastPublishedAt: entry.CreatedAt,
        LastMessageID: messageId,
        SourceSessionID: session.id,
        Metadata:
          binding && binding.SessionID && binding.SessionID !== session.id ? { bound_session: binding.SessionID } : {},
      },
      TranscriptEntry: entry,
    };
    if (body.idempotency_key) this.o.store.rememberOutbound(body.idempotency_key, result);
    return result;
  }
}
