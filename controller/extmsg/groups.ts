import { randomBytes } from 'node:crypto';
import type {
  ConversationGroupParticipant,
  ConversationGroupRecord,
  ConversationRef,
  ExtMsgGroupEnsureInputBody,
  ExtMsgParticipantRemoveInputBody,
  ExtMsgParticipantUpsertInputBody,
} from '../../shared/dto/extmsg.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { SessionService } from '../sessions/session-service.js';
import { checkConversation } from './extmsg-checks.js';
import { conversationKey, type ExtmsgStore } from './extmsg-store.js';

/** A group's fan-out limits unless it says otherwise. */
const DEFAULT_FANOUT = {
  Enabled: true,
  AllowUntargetedPublication: true,
  MaxPeerTriggeredPublishes: 2,
  MaxTotalPeerDeliveries: 4,
};

/** `@handle` (with an optional `:` or `,`) at the start of a message: whom it addresses. */
export const MENTION = /^@([A-Za-z0-9][A-Za-z0-9_.-]*)[:,]?\s+/;

/**
 * Conversations shared by several sessions: a group has a root conversation (its threads belong to it too) and
 * participants, each a session under a handle; one is the default for messages that address nobody.
 */
export class Groups {
  constructor(
    private readonly o: {
      store: ExtmsgStore;
      log: EventLog;
      sessions: SessionService;
    },
  ) {}

  async ensure(body: ExtMsgGroupEnsureInputBody): Promise<{ group: ConversationGroupRecord; created: boolean }> {
    checkConversation(body.root_conversation, 'body.root_conversation');
    const key = conversationKey(body.root_conversation);
    const existing = this.o.store.groups().find((g) => conversationKey(g.RootConversation) === key);
    if (existing) {
      const handle = body.default_handle !== undefined && body.default_handle !== existing.DefaultHandle;
      if (handle || body.metadata) {
        this.o.store.changeGroup(existing, (g) => {
          if (handle) g.DefaultHandle = body.default_handle!;
          if (body.metadata) g.Metadata = { ...g.Metadata, ...body.metadata };
        });
      }
      return { group: existing, created: false };
    }
    const group: ConversationGroupRecord = {
      ID: `grp-${randomBytes(6).toString('hex')}`,
      SchemaVersion: 1,
      RootConversation: body.root_conversation,
      Mode: body.mode ?? 'launcher',
      DefaultHandle: body.default_handle ?? '',
      LastAddressedHandle: '',
      FanoutPolicy: { ...DEFAULT_FANOUT },
      Metadata: body.metadata ?? {},
      Participants: [],
    };
    this.o.store.addGroup(group);
    await this.o.log.append({
      type: 'extmsg.group_created',
      actor: 'ctl',
      subject: body.root_conversation.conversation_id,
      payload: {
        provider: body.root_conversation.provider,
        conversation_id: body.root_conversation.conversation_id,
        mode: group.Mode,
      },
    });
    return { group, created: true };
  }

  /** The group whose root matches every part of `query` given; a 404 otherwise. */
  find(query: Partial<ConversationRef>): ConversationGroupRecord {
    const group = this.o.store
      .groups()
      .find((g) =>
        (['scope_id', 'provider', 'account_id', 'conversation_id', 'kind'] as const).every(
          (k) => query[k] === undefined || g.RootConversation[k] === query[k],
        ),
      );
    if (!group)
      throw new Problem(
        'extmsg-group-not-found',
        `not_found: no group for ${query.conversation_id ?? 'that conversation'}`,
      );
    return group;
  }

  upsertParticipant(body: ExtMsgParticipantUpsertInputBody): ConversationGroupParticipant {
    const group = this.byId(body.group_id);
    const session = this.o.sessions.find(body.session_id);
    const participant: ConversationGroupParticipant = {
      ID: `${group.ID}:${body.handle}`,
      GroupID: group.ID,
      Handle: body.handle,
      SessionID: session.id,
      SessionName: session.record.session_name,
      Public: body.public ?? true,
      Metadata: body.metadata ?? {},
    };
    this.o.store.changeGroup(group, (g) => {
      const at = g.Participants.findIndex((p) => p.Handle === body.handle);
      if (at >= 0) g.Participants[at] = participant;
      else g.Participants.push(participant);
      if (!g.DefaultHandle) g.DefaultHandle = body.handle;
    });
    return participant;
  }

  removeParticipant(body: ExtMsgParticipantRemoveInputBody): void {
    const group = this.byId(body.group_id);
    const at = group.Participants.findIndex((p) => p.Handle === body.handle);
    if (at < 0)
      throw new Problem('extmsg-group-not-found', `not_found: group ${group.ID} has no participant ${body.handle}`);
    this.o.store.changeGroup(group, (g) => {
      g.Participants.splice(at, 1);
      if (g.DefaultHandle === body.handle) g.DefaultHandle = g.Participants[0]?.Handle ?? '';
    });
  }

  /** The group a conversation belongs to: its own, else its parent's. */
  of(conversation: ConversationRef): ConversationGroupRecord | undefined {
    const key = conversationKey(conversation);
    const own = this.o.store.groups().find((g) => conversationKey(g.RootConversation) === key);
    if (own || !conversation.parent_conversation_id) return own;
    return this.of({
      ...conversation,
      conversation_id: conversation.parent_conversation_id,
      parent_conversation_id: undefined,
    });
  }

  /** Notes the handle a message addressed last. */
  addressed(group: ConversationGroupRecord, handle: string): void {
    this.o.store.changeGroup(group, (g) => {
      g.LastAddressedHandle = handle;
    });
  }

  private byId(id: string): ConversationGroupRecord {
    const group = this.o.store.groups().find((g) => g.ID === id);
    if (!group) throw new Problem('extmsg-group-not-found', `not_found: no group ${id}`);
    return group;
  }
}
