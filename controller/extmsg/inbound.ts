import type {
  ConversationRef,
  ExternalAttachment,
  ExtMsgInboundInputBody,
  GroupRouteDecision,
  InboundResult,
  SessionBindingRecord,
} from '../../shared/dto/extmsg.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { Session } from '../sessions/session.js';
import type { SessionService } from '../sessions/session-service.js';
import type { Adapters } from './adapters.js';
import type { Bindings } from './bindings.js';
import { checkAttachments, checkConversation, invalid } from './extmsg-checks.js';
import type { ExtmsgStore } from './extmsg-store.js';
import { MENTION, type Groups } from './groups.js';
import type { Replies } from './replies.js';

/** Longest inbound text taken. */
const MAX_INBOUND_CHARS = 32 * 1024;

/**
 * A message from a conversation: recorded once (a repeat — the same provider message id or dedup key — is
 * answered as a duplicate), routed to a group's addressed (or default) participant, else to the session or
 * agent the conversation is bound to, and handed to that session, which wakes for it.
 */
export class Inbound {
  constructor(
    private readonly o: {
      store: ExtmsgStore;
      log: EventLog;
      sessions: SessionService;
      agent: (name: string) => AgentDefinition | undefined;
      adapters: Adapters;
      bindings: Bindings;
      groups: Groups;
      replies: Replies;
    },
  ) {}

  async receive(body: ExtMsgInboundInputBody): Promise<InboundResult> {
    const message = body.message;
    checkConversation(message.conversation, 'body.message.conversation');
    const provider = body.provider ?? message.conversation.provider;
    const accountId = body.account_id ?? message.conversation.account_id;
    if (provider !== message.conversation.provider || accountId !== message.conversation.account_id) {
      throw invalid(
        'body.message.conversation',
        'the conversation belongs to another provider or account than the message',
      );
    }
    if (message.text.length > MAX_INBOUND_CHARS) {
      throw invalid('body.message.text', `text is longer than ${MAX_INBOUND_CHARS} characters`);
    }
    const attachments = checkAttachments(message.attachments, 'body.message.attachments');
    const provenance = body.provenance ?? 'live';
    if (provenance !== 'live' && provenance !== 'hydrated') {
      throw invalid('body.provenance', 'provenance is live or hydrated');
    }
    this.o.adapters.require(provider, accountId);
    await this.o.bindings.expire();
    const dedup = `${provider}|${accountId}|${message.dedup_key ?? message.provider_message_id}`;
    const seen = this.o.store.seenInbound(dedup);
    if (seen) {
      return {
        Status: 'duplicate',
        Reason: `message ${message.provider_message_id} was recorded before (sequence ${seen.Sequence})`,
        Message: message,
        Binding: null,
        GroupRoute: null,
        TranscriptEntry: seen,
        TargetSessionID: seen.Metadata.target_session ?? '',
        TargetAgentName: seen.Metadata.target_agent ?? '',
      };
    }
    if (provenance === 'hydrated') return this.hydrate(body, dedup, attachments);
    // Where it goes: a group's addressed (or default) participant, else the conversation's binding (a thread
    // without one of its own goes where its room goes).
    let route: GroupRouteDecision | null = null;
    let text = message.text;
    let target: { session?: Session; agent?: AgentDefinition; binding?: SessionBindingRecord } = {};
    const group = this.o.groups.of(message.conversation);
    if (group && group.Participants.length > 0) {
      const mention = MENTION.exec(text);
      const wanted = message.explicit_target ?? mention?.[1];
      const addressed = wanted ? group.Participants.find((p) => p.Handle === wanted) : undefined;
      const chosen =
        addressed ??
        (group.FanoutPolicy.AllowUntargetedPublication
          ? group.Participants.find((p) => p.Handle === group.DefaultHandle)
          : undefined);
      if (addressed && mention && !message.explicit_target) text = text.slice(mention[0].length);
      if (chosen) {
        route = {
          Match: addressed ? (message.explicit_target ? 'explicit' : 'mention') : 'default',
          TargetSessionID: chosen.SessionID,
          UpdateCursor: !!addressed,
        };
        if (addressed) this.o.groups.addressed(group, addressed.Handle);
        target.session = this.o.sessions.openById(chosen.SessionID);
      } else {
        route = { Match: 'none', TargetSessionID: '', UpdateCursor: false };
      }
    } else {
      const binding = this.o.bindings.of(message.conversation);
      if (binding) {
        target.binding = binding;
        if (binding.SessionID) target.session = this.o.sessions.openById(binding.SessionID);
        else target = { ...target, ...this.agentTarget(binding.AgentName) };
      }
    }
    const session = target.session;
    const agentName =
      session?.record.kind === 'agent'
        ? session.record.template
        : (target.agent?.name ?? target.binding?.AgentName ?? '');
    const status = session ? 'delivered' : 'unbound';
    const reason = session
      ? `delivered to session ${session.id}`
      : route
        ? `the group has no participant for ${message.explicit_target ?? 'an untargeted message'}`
        : target.binding
          ? `the session bound to it (${target.binding.SessionID || target.binding.AgentName}) is not running`
          : this.unboundReason(message.conversation);
    const entry = this.o.store.append(
      {
        Conversation: message.conversation,
        Kind: 'inbound',
        Provenance: 'live',
        ProviderMessageID: message.provider_message_id,
        Actor: message.actor,
        Text: message.text,
        ExplicitTarget: message.explicit_target ?? '',
        ReplyToMessageID: message.reply_to_message_id ?? '',
        Attachments: attachments,
        SourceSessionID: '',
        CreatedAt: new Date().toISOString(),
        Metadata: {
          received_at: message.received_at,
          status,
          ...(session ? { target_session: session.id } : {}),
          ...(agentName ? { target_agent: agentName } : {}),
          ...(body.payload !== undefined ? { payload: body.payload } : {}),
        },
      },
      dedup,
    );
    if (session) {
      this.o.replies.submit(
        session,
        withAttachments(text, attachments),
        message.conversation,
        message.provider_message_id,
        {
          peer_deliveries: 0,
          publishes_by_session: {},
        },
      );
    }
    await this.o.log.append({
      type: 'extmsg.inbound',
      actor: message.actor.id,
      subject: message.conversation.conversation_id,
      payload: {
        provider,
        conversation_id: message.conversation.conversation_id,
        actor: message.actor.display_name || message.actor.id,
        target_session: session?.id ?? '',
        status,
        sequence: entry.Sequence,
        ...(agentName ? { target_agent: agentName } : {}),
      },
    });
    return {
      Status: status,
      Reason: reason,
      Message: message,
      Binding: target.binding ?? null,
      GroupRoute: route,
      TranscriptEntry: entry,
      TargetSessionID: session?.id ?? '',
      TargetAgentName: agentName,
    };
  }

  /** Why a message of a conversation without a binding goes nowhere: it never had one, or it expired. */
  private unboundReason(conversation: ConversationRef): string {
    const expired = this.o.bindings.lastExpired(conversation);
    if (expired) {
      return `the binding of ${conversation.conversation_id} to ${expired.SessionID || `agent ${expired.AgentName}`} expired at ${expired.ExpiresAt} (POST /extmsg/bind to bind it again)`;
    }
    return `${conversation.conversation_id} is bound to no session or agent (POST /extmsg/bind)`;
  }

  /** Backfilled history: recorded in the transcript as `hydrated`, delivered to no one. */
  private async hydrate(
    body: ExtMsgInboundInputBody,
    dedup: string,
    attachments: ExternalAttachment[],
  ): Promise<InboundResult> {
    const message = body.message;
    const entry = this.o.store.append(
      {
        Conversation: message.conversation,
        Kind: 'inbound',
        Provenance: 'hydrated',
        ProviderMessageID: message.provider_message_id,
        Actor: message.actor,
        Text: message.text,
        ExplicitTarget: message.explicit_target ?? '',
        ReplyToMessageID: message.reply_to_message_id ?? '',
        Attachments: attachments,
        SourceSessionID: '',
        // Its place in time is when it was written in the chat system, not when it reached the city.
        CreatedAt: message.received_at,
        Metadata: {
          received_at: message.received_at,
          status: 'hydrated',
          ...(body.payload !== undefined ? { payload: body.payload } : {}),
        },
      },
      dedup,
    );
    await this.o.log.append({
      type: 'extmsg.inbound',
      actor: message.actor.id,
      subject: message.conversation.conversation_id,
      payload: {
        provider: message.conversation.provider,
        conversation_id: message.conversation.conversation_id,
        actor: message.actor.display_name || message.actor.id,
        target_session: '',
        status: 'hydrated',
        sequence: entry.Sequence,
      },
    });
    return {
      Status: 'hydrated',
      Reason: 'backfilled history: recorded, not delivered',
      Message: message,
      Binding: null,
      GroupRoute: null,
      TranscriptEntry: entry,
      TargetSessionID: '',
      TargetAgentName: '',
    };
  }

  /** An agent binding's session: its first open one, else one started for it. */
  private agentTarget(name: string): { session?: Session; agent?: AgentDefinition } {
    const agent = this.o.agent(name);
    if (!agent) return {};
    const open = this.o.sessions.agentSessions(agent.name).find((s) => s.state !== 'closed');
    if (open) return { session: open, agent };
    if (!agent.available) return { agent };
    return { session: this.o.sessions.startAgentSession(agent, 'woken by an external message'), agent };
  }
}

/**
 * The text a session is given: the message, then its attachments (type and where to fetch each) on the same
 * line, so a line-based agent reads them as part of the one message.
 */
export function withAttachments(text: string, attachments: readonly ExternalAttachment[]): string {
  if (attachments.length === 0) return text;
  return `${text} [attached: ${attachments.map((a) => `${a.mime_type || 'file'} ${a.url}`).join(', ')}]`;
}
