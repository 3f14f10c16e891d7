import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type {
  ConversationGroupParticipant,
  ConversationGroupRecord,
  ConversationRef,
  ConversationTranscriptRecord,
  ExtMsgAdapterRegisterInputBody,
  ExtMsgAdapterRegisterOutputBody,
  ExtMsgAdapterUnregisterInputBody,
  ExtMsgBindInputBody,
  ExtMsgGroupEnsureInputBody,
  ExtMsgInboundInputBody,
  ExtMsgOutboundInputBody,
  ExtMsgParticipantRemoveInputBody,
  ExtMsgParticipantUpsertInputBody,
  ExtMsgTranscriptAckInputBody,
  ExtMsgUnbindInputBody,
  ExtmsgAdapterInfo,
  GroupRouteDecision,
  InboundResult,
  OutboundResult,
  SessionBindingRecord,
} from '../../shared/dto/extmsg.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { AgentDefinition } from '../agents/agent-catalog.js';
import type { Session } from '../sessions/session.js';
import type { SessionService } from '../sessions/session-service.js';
import { wakesOnMessage } from '../sessions/session-states.js';
import type { EventRecord } from '../../shared/events/record.js';
import { ExtmsgStore, conversationKey, type AdapterRecord, type PendingDelivery } from './extmsg-store.js';
import { OutboundDelivery } from './outbound-delivery.js';
import { checkCallbackUrl, checkConversation, splitMessage } from './extmsg-checks.js';

/** Longest inbound text taken. */
const MAX_INBOUND_CHARS = 32 * 1024;
/** A group's fan-out limits unless it says otherwise. */
const DEFAULT_FANOUT = {
  Enabled: true,
  AllowUntargetedPublication: true,
  MaxPeerTriggeredPublishes: 2,
  MaxTotalPeerDeliveries: 4,
};
const MENTION = /^@([A-Za-z0-9][A-Za-z0-9_.-]*)[:,]?\s+/;

/** One message from a person and what it set off: how far sessions may answer each other because of it. */
interface Chain {
  peerDeliveries: number;
  publishesBySession: Map<string, number>;
}

/** A turn a session takes for a conversation: its reply goes back there. */
interface ReplyTurn {
  conversation: ConversationRef;
  chain: Chain;
  replyTo: string;
  text: string;
  lastChunk: boolean;
}

/**
 * External messaging in a city: adapters register, conversations are bound to sessions or agents (or shared by
 * a group of sessions, each with a handle), inbound messages are recorded and delivered through the sessions
 * runtime (which wakes a sleeping session), and what a session answers to such a message is published back to
 * the adapter. Every message in and out is in the conversation's transcript, numbered; a repeat of an inbound
 * message (same provider message id) is recorded once.
 */
export class ExtmsgService {
  readonly store: ExtmsgStore;
  private readonly delivery: OutboundDelivery;
  /** Messages handed to sessions, by message id, until the session's transcript shows the turn they began. */
  private readonly submitted = new Map<string, Omit<ReplyTurn, 'text' | 'lastChunk'>>();
  /** Turns answering a conversation, by `session:turn`. */
  private readonly turns = new Map<string, ReplyTurn>();
  private readonly watched = new Set<string>();
  private stopWatching: (() => void) | undefined;

  constructor(
    private readonly o: {
      dir: string;
      log: EventLog;
      sessions: SessionService;
      agent: (name: string) => AgentDefinition | undefined;
      callbackHosts: () => string[];
      logger?: Logger;
    },
  ) {
    this.store = new ExtmsgStore(o.dir);
    this.delivery = new OutboundDelivery({ store: this.store, log: o.log, logger: o.logger });
  }

  /** Follows every session's transcript for replies, and retries deliveries a previous controller left. */
  start(): void {
    for (const session of this.o.sessions.all()) this.watch(session);
    this.stopWatching = this.o.sessions.onOpened((session) => this.watch(session));
    this.delivery.resume();
  }

  stop(): void {
    this.stopWatching?.();
    this.delivery.stop();
  }

  // ---- adapters -------------------------------------------------------------------------------------------

  async registerAdapter(body: ExtMsgAdapterRegisterInputBody): Promise<ExtMsgAdapterRegisterOutputBody> {
    if (body.callback_url !== undefined) checkCallbackUrl(body.callback_url, this.o.callbackHosts());
    const existing = this.store.adapters.find((a) => a.provider === body.provider && a.account_id === body.account_id);
    const record: AdapterRecord = {
      provider: body.provider,
      account_id: body.account_id,
      name: body.name ?? existing?.name ?? `${body.provider}-${body.account_id}`,
      registered_at: existing?.registered_at ?? new Date().toISOString(),
      ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
      ...(body.capabilities !== undefined ? { capabilities: body.capabilities } : {}),
    };
    if (existing) this.store.adapters.splice(this.store.adapters.indexOf(existing), 1, record);
    else this.store.adapters.push(record);
    this.store.save();
    if (!existing) {
      await this.o.log.append({
        type: 'extmsg.adapter_added',
        actor: 'ctl',
        subject: record.name,
        payload: { provider: record.provider, account_id: record.account_id },
      });
    }
    // An adapter back after a restart takes what waited for it at once, not at the next back-off.
    this.delivery.resume();
    return {
      provider: record.provider,
      account_id: record.account_id,
      name: record.name,
      status: existing ? 'updated' : 'registered',
    };
  }

  async unregisterAdapter(body: ExtMsgAdapterUnregisterInputBody): Promise<void> {
    const adapter = this.adapter(body.provider, body.account_id);
    this.store.adapters.splice(this.store.adapters.indexOf(adapter), 1);
    this.store.save();
    await this.o.log.append({
      type: 'extmsg.adapter_removed',
      actor: 'ctl',
      subject: adapter.name,
      payload: { provider: adapter.provider, account_id: adapter.account_id },
    });
  }

  adapters(): ExtmsgAdapterInfo[] {
    return this.store.adapters.map((a) => ({
      ...a,
      pending_deliveries: this.store.pending.filter((p) => p.provider === a.provider && p.account_id === a.account_id)
        .length,
    }));
  }

  private adapter(provider: string, accountId: string): AdapterRecord {
    const adapter = this.store.adapters.find((a) => a.provider === provider && a.account_id === accountId);
    if (!adapter)
      throw new Problem('adapter-not-found', `not_found: no adapter registered for ${provider}/${accountId}`);
    return adapter;
  }

  // ---- bindings -------------------------------------------------------------------------------------------

  async bind(body: ExtMsgBindInputBody): Promise<SessionBindingRecord> {
    checkConversation(body.conversation, 'body.conversation');
    if ((body.session_id === undefined) === (body.agent_name === undefined)) {
      throw invalid('body.session_id', 'bind a session_id or an agent_name (one of them)');
    }
    let sessionId = '';
    let sessionName = '';
    let agentName: string;
    if (body.session_id !== undefined) {
      const session = this.o.sessions.find(body.session_id);
      if (session.state === 'closed')
        throw new Problem('conflict-wrong-state', `conflict: session ${session.id} is closed`);
      sessionId = session.id;
      sessionName = session.record.session_name;
      agentName = session.record.kind === 'agent' ? session.record.template : '';
    } else {
      const agent = this.o.agent(body.agent_name!);
      if (!agent) throw new Problem('agent-not-found', `not_found: agent not found: ${body.agent_name}`);
      agentName = agent.name;
    }
    const key = conversationKey(body.conversation);
    const history = this.store.bindings.filter((b) => conversationKey(b.Conversation) === key);
    const active = history.find((b) => b.Status === 'active');
    if (active) {
      const same =
        body.session_id !== undefined
          ? active.SessionID === sessionId
          : !active.SessionID && active.AgentName === agentName;
      if (same) return active;
      if (!body.replace) {
        throw new Problem(
          'conflict-wrong-state',
          `conflict: ${body.conversation.conversation_id} is bound to ${active.SessionID || `agent ${active.AgentName}`}; bind with replace: true to take it over`,
        );
      }
      active.Status = 'ended';
      active.EndedAt = new Date().toISOString();
    }
    const record: SessionBindingRecord = {
      ID: `bind-${randomBytes(6).toString('hex')}`,
      SchemaVersion: 1,
      Conversation: body.conversation,
      SessionID: sessionId,
      SessionName: sessionName,
      AgentName: agentName,
      BindingGeneration: Math.max(0, ...history.map((b) => b.BindingGeneration)) + 1,
      Status: 'active',
      BoundAt: new Date().toISOString(),
      ExpiresAt: null,
      Metadata: body.metadata ?? {},
    };
    this.store.bindings.push(record);
    this.store.save();
    await this.o.log.append({
      type: 'extmsg.bound',
      actor: 'ctl',
      subject: body.conversation.conversation_id,
      payload: {
        provider: body.conversation.provider,
        conversation_id: body.conversation.conversation_id,
        session_id: sessionId,
        generation: record.BindingGeneration,
        ...(agentName ? { agent_name: agentName } : {}),
      },
    });
    return record;
  }

  async unbind(body: ExtMsgUnbindInputBody): Promise<SessionBindingRecord[]> {
    if (!body.conversation && body.session_id === undefined && body.agent_name === undefined) {
      throw invalid('body', 'unbind a conversation, a session_id or an agent_name');
    }
    if (body.conversation) checkConversation(body.conversation, 'body.conversation');
    const key = body.conversation ? conversationKey(body.conversation) : undefined;
    const ended = this.store.bindings.filter(
      (b) =>
        b.Status === 'active' &&
        (key === undefined || conversationKey(b.Conversation) === key) &&
        (body.session_id === undefined || b.SessionID === body.session_id) &&
        (body.agent_name === undefined || b.AgentName === body.agent_name),
    );
    const now = new Date().toISOString();
    for (const b of ended) {
      b.Status = 'ended';
      b.EndedAt = now;
    }
    if (ended.length > 0) {
      this.store.save();
      await this.o.log.append({
        type: 'extmsg.unbound',
        actor: 'ctl',
        subject: body.session_id ?? body.agent_name ?? body.conversation?.conversation_id,
        payload: { session_id: body.session_id ?? ended[0].SessionID, count: ended.length },
      });
    }
    return ended;
  }

  bindings(query: { session_id?: string; all?: boolean }): SessionBindingRecord[] {
    return this.store.bindings.filter(
      (b) =>
        (query.all || b.Status === 'active') && (query.session_id === undefined || b.SessionID === query.session_id),
    );
  }

  // ---- groups ---------------------------------------------------------------------------------------------

  async ensureGroup(body: ExtMsgGroupEnsureInputBody): Promise<{ group: ConversationGroupRecord; created: boolean }> {
    checkConversation(body.root_conversation, 'body.root_conversation');
    const key = conversationKey(body.root_conversation);
    const existing = this.store.groups.find((g) => conversationKey(g.RootConversation) === key);
    if (existing) {
      let changed = false;
      if (body.default_handle !== undefined && body.default_handle !== existing.DefaultHandle) {
        existing.DefaultHandle = body.default_handle;
        changed = true;
      }
      if (body.metadata) {
        existing.Metadata = { ...existing.Metadata, ...body.metadata };
        changed = true;
      }
      if (changed) this.store.save();
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
    this.store.groups.push(group);
    this.store.save();
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

  group(query: Partial<ConversationRef>): ConversationGroupRecord {
    const group = this.store.groups.find((g) =>
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
    const group = this.groupById(body.group_id);
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
    const at = group.Participants.findIndex((p) => p.Handle === body.handle);
    if (at >= 0) group.Participants[at] = participant;
    else group.Participants.push(participant);
    if (!group.DefaultHandle) group.DefaultHandle = body.handle;
    this.store.save();
    return participant;
  }

  removeParticipant(body: ExtMsgParticipantRemoveInputBody): void {
    const group = this.groupById(body.group_id);
    const at = group.Participants.findIndex((p) => p.Handle === body.handle);
    if (at < 0)
      throw new Problem('extmsg-group-not-found', `not_found: group ${group.ID} has no participant ${body.handle}`);
    group.Participants.splice(at, 1);
    if (group.DefaultHandle === body.handle) group.DefaultHandle = group.Participants[0]?.Handle ?? '';
    this.store.save();
  }

  private groupById(id: string): ConversationGroupRecord {
    const group = this.store.groups.find((g) => g.ID === id);
    if (!group) throw new Problem('extmsg-group-not-found', `not_found: no group ${id}`);
    return group;
  }

  // ---- inbound --------------------------------------------------------------------------------------------

  async inbound(body: ExtMsgInboundInputBody): Promise<InboundResult> {
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
    this.adapter(provider, accountId);
    const dedup = `${provider}|${accountId}|${message.dedup_key ?? message.provider_message_id}`;
    const seen = this.store.seenInbound(dedup);
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
    // Where it goes: a group's addressed (or default) participant, else the conversation's binding (a thread
    // without one of its own goes where its room goes).
    let route: GroupRouteDecision | null = null;
    let text = message.text;
    let target: { session?: Session; agent?: AgentDefinition; binding?: SessionBindingRecord } = {};
    const group = this.groupFor(message.conversation);
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
        if (addressed) group.LastAddressedHandle = addressed.Handle;
        target.session = this.o.sessions.openById(chosen.SessionID);
      } else {
        route = { Match: 'none', TargetSessionID: '', UpdateCursor: false };
      }
    } else {
      const binding = this.bindingFor(message.conversation);
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
          : `${message.conversation.conversation_id} is bound to no session or agent (POST /extmsg/bind)`;
    const entry = this.store.append(
      {
        Conversation: message.conversation,
        Kind: 'inbound',
        Provenance: 'live',
        ProviderMessageID: message.provider_message_id,
        Actor: message.actor,
        Text: message.text,
        ExplicitTarget: message.explicit_target ?? '',
        ReplyToMessageID: message.reply_to_message_id ?? '',
        Attachments: message.attachments ?? [],
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
    if (group) this.store.save();
    if (session)
      this.submit(session, text, message.conversation, message.provider_message_id, {
        peerDeliveries: 0,
        publishesBySession: new Map(),
      });
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

  /** An agent binding's session: its first open one, else one started for it. */
  private agentTarget(name: string): { session?: Session; agent?: AgentDefinition } {
    const agent = this.o.agent(name);
    if (!agent) return {};
    const open = this.o.sessions.agentSessions(agent.name).find((s) => s.state !== 'closed');
    if (open) return { session: open, agent };
    if (!agent.available) return { agent };
    return { session: this.o.sessions.startAgentSession(agent, 'woken by an external message'), agent };
  }

  private bindingFor(conversation: ConversationRef): SessionBindingRecord | undefined {
    const key = conversationKey(conversation);
    const own = this.store.bindings.find((b) => b.Status === 'active' && conversationKey(b.Conversation) === key);
    if (own || conversation.kind !== 'thread' || !conversation.parent_conversation_id) return own;
    return this.bindingFor({
      ...conversation,
      kind: 'room',
      conversation_id: conversation.parent_conversation_id,
      parent_conversation_id: undefined,
    });
  }

  private groupFor(conversation: ConversationRef): ConversationGroupRecord | undefined {
    const key = conversationKey(conversation);
    const own = this.store.groups.find((g) => conversationKey(g.RootConversation) === key);
    if (own || !conversation.parent_conversation_id) return own;
    return this.groupFor({
      ...conversation,
      conversation_id: conversation.parent_conversation_id,
      parent_conversation_id: undefined,
    });
  }

  /** Hands text to a session (waking it), remembering that its reply goes back to the conversation. */
  private submit(session: Session, text: string, conversation: ConversationRef, replyTo: string, chain: Chain): void {
    this.watch(session);
    const messageId = session.accept(text, 'default');
    this.submitted.set(messageId, { conversation, chain, replyTo });
    if (wakesOnMessage(session.state)) void session.wake('wake', 'woken by an external message');
  }

  // ---- replies --------------------------------------------------------------------------------------------

  private watch(session: Session): void {
    if (this.watched.has(session.id)) return;
    this.watched.add(session.id);
    const listener = (record: EventRecord) => this.onEntry(session, record);
    const closed = (state: string) => {
      if (state !== 'closed') return;
      session.off('entry', listener);
      session.off('state', closed);
      this.watched.delete(session.id);
    };
    session.on('entry', listener);
    session.on('state', closed);
  }

  private onEntry(session: Session, record: EventRecord): void {
    const payload = (record.payload ?? {}) as { turn?: number; message_id?: string; text?: string; chunk?: boolean };
    const key = `${session.id}:${payload.turn}`;
    if (record.type === 'user' && payload.message_id) {
      const asked = this.submitted.get(payload.message_id);
      if (!asked) return;
      this.submitted.delete(payload.message_id);
      this.turns.set(key, { ...asked, text: '', lastChunk: false });
      return;
    }
    const turn = this.turns.get(key);
    if (!turn) return;
    if (record.type === 'assistant' && typeof payload.text === 'string') {
      const joiner = turn.text && !(payload.chunk === true && turn.lastChunk) ? '\n' : '';
      turn.text += joiner + payload.text;
      turn.lastChunk = payload.chunk === true;
    } else if (record.type === 'turn_end') {
      this.turns.delete(key);
      const reply = turn.text.trim();
      if (reply) void this.reply(session, turn, reply);
    }
  }

  /** Publishes a session's reply to the conversation it answers, and hands it to the peers it addresses. */
  private async reply(session: Session, turn: ReplyTurn, text: string): Promise<void> {
    try {
      await this.outbound({
        session_id: session.id,
        conversation: turn.conversation,
        text,
        reply_to_message_id: turn.replyTo,
      });
    } catch (err) {
      this.o.logger?.warn({ err, session: session.id }, 'a reply could not be published');
      return;
    }
    const group = this.groupFor(turn.conversation);
    const mention = MENTION.exec(text);
    if (!group?.FanoutPolicy.Enabled || !mention) return;
    const peer = group.Participants.find((p) => p.Handle === mention[1] && p.SessionID !== session.id);
    if (!peer) return;
    // The limits that keep sessions in one room from answering each other for ever.
    const published = (turn.chain.publishesBySession.get(session.id) ?? 0) + 1;
    turn.chain.publishesBySession.set(session.id, published);
    if (published > group.FanoutPolicy.MaxPeerTriggeredPublishes) return;
    if (turn.chain.peerDeliveries >= group.FanoutPolicy.MaxTotalPeerDeliveries) return;
    const target = this.o.sessions.openById(peer.SessionID);
    if (!target) return;
    turn.chain.peerDeliveries += 1;
    this.submit(target, text.slice(mention[0].length), turn.conversation, turn.replyTo, turn.chain);
  }

  // ---- outbound -------------------------------------------------------------------------------------------

  async outbound(body: ExtMsgOutboundInputBody): Promise<OutboundResult> {
    if (body.idempotency_key) {
      const earlier = this.store.outboundResult(body.idempotency_key);
      if (earlier) return earlier;
    }
    const session = this.o.sessions.find(body.session_id);
    let conversation = body.conversation;
    if (conversation) checkConversation(conversation, 'body.conversation');
    else {
      const mine = this.store.bindings.filter((b) => b.Status === 'active' && b.SessionID === session.id);
      if (mine.length !== 1) {
        throw invalid(
          'body.conversation',
          `session ${session.id} has ${mine.length} bound conversations: name the conversation`,
        );
      }
      conversation = mine[0].Conversation;
    }
    if (body.text.trim() === '') throw invalid('body.text', 'text is empty');
    const adapter = this.adapter(conversation.provider, conversation.account_id);
    const max = adapter.capabilities?.MaxMessageLength ?? 0;
    const parts = splitMessage(body.text, max);
    const messageId = `out-${randomBytes(8).toString('hex')}`;
    const binding = this.bindingFor(conversation);
    const entry = this.store.append({
      Conversation: conversation,
      Kind: 'outbound',
      Provenance: 'live',
      ProviderMessageID: messageId,
      Actor: { id: session.id, display_name: session.record.session_name, is_bot: true },
      Text: body.text,
      ExplicitTarget: '',
      ReplyToMessageID: body.reply_to_message_id ?? '',
      Attachments: [],
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
    };
    const first = await this.delivery.deliver(pending);
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
    if (body.idempotency_key) {
      this.store.rememberOutbound(body.idempotency_key, result);
      this.store.save();
    }
    return result;
  }

  // ---- transcript -----------------------------------------------------------------------------------------

  transcript(query: {
    scope_id?: string;
    provider?: string;
    account_id?: string;
    conversation_id?: string;
    parent_conversation_id?: string;
    kind?: string;
    after_sequence?: number;
    limit?: number;
    order?: 'asc' | 'desc';
  }): { items: ConversationTranscriptRecord[]; total: number; next_cursor?: string } {
    const matches = (r: ConversationTranscriptRecord) =>
      (['scope_id', 'provider', 'account_id', 'conversation_id', 'parent_conversation_id', 'kind'] as const).every(
        (k) => query[k] === undefined || r.Conversation[k] === query[k],
      );
    let records =
      query.scope_id !== undefined &&
      query.provider !== undefined &&
      query.account_id !== undefined &&
      query.conversation_id !== undefined
        ? this.store
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
        : this.store.transcript().filter(matches);
    const total = records.length;
    const after = query.after_sequence;
    const desc = query.order === 'desc';
    if (after !== undefined) records = records.filter((r) => (desc ? r.Sequence < after : r.Sequence > after));
    if (desc) records = [...records].reverse();
    const limit = Math.min(query.limit || 100, 500);
    const page = records.slice(0, limit);
    return { items: page, total, ...(records.length > limit ? { next_cursor: String(page.at(-1)!.Sequence) } : {}) };
  }

  ack(body: ExtMsgTranscriptAckInputBody): number {
    checkConversation(body.conversation, 'body.conversation');
    const session = this.o.sessions.find(body.session_id);
    const key = conversationKey(body.conversation);
    const last = this.store.conversation(key).at(-1)?.Sequence ?? 0;
    if (body.sequence > last)
      throw invalid('body.sequence', `the conversation has ${last} messages; ${body.sequence} is past its end`);
    const acks = (this.store.acks[session.id] ??= {});
    acks[key] = Math.max(acks[key] ?? 0, body.sequence);
    this.store.save();
    return acks[key];
  }
}

function invalid(location: string, message: string): Problem {
  return new Problem('validation-failed', `invalid: ${message}`, { errors: [{ location, message }] });
}
