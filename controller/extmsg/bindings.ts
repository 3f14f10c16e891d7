import { randomBytes } from 'node:crypto';
import type {
  ConversationRef,
  ExtMsgBindInputBody,
  ExtMsgUnbindInputBody,
  SessionBindingRecord,
} from '../../shared/dto/extmsg.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { SessionService } from '../sessions/session-service.js';
import { checkConversation, invalid } from './extmsg-checks.js';
import { conversationKey, type ExtmsgStore } from './extmsg-store.js';

/**
 * Which session (or agent) answers a conversation. A conversation has at most one active binding; taking it over
 * needs `replace` and makes a new generation; a thread without a binding of its own goes where its room goes.
 */
export class Bindings {
  constructor(
    private readonly o: {
      store: ExtmsgStore;
      log: EventLog;
      sessions: SessionService;
      agent: (name: string) => AgentDefinition | undefined;
    },
  ) {}

  async bind(body: ExtMsgBindInputBody): Promise<SessionBindingRecord> {
    checkConversation(body.conversation, 'body.conversation');
    const expiresAt = body.expires_at === undefined ? null : futureTime(body.expires_at, 'body.expires_at');
    await this.expire();
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
    const history = this.o.store.bindings().filter((b) => conversationKey(b.Conversation) === key);
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
      ExpiresAt: expiresAt,
      Metadata: body.metadata ?? {},
    };
    this.o.store.addBinding(record, active ? [active] : []);
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

  /**
   * Ends the active bindings whose `ExpiresAt` has passed (at that time, `ended_reason: expired`), recording
   * `extmsg.unbound` for each, and answers them. Run before anything reads bindings, so an expired binding
   * never routes a message and the bindings list never shows it active.
   */
  async expire(now = Date.now()): Promise<SessionBindingRecord[]> {
    const expired = this.o.store
      .bindings()
      .filter((b) => b.Status === 'active' && b.ExpiresAt !== null && Date.parse(b.ExpiresAt) <= now);
    for (const binding of expired) {
      binding.Metadata = { ...binding.Metadata, ended_reason: 'expired' };
      this.o.store.endBindings([binding], binding.ExpiresAt!);
      await this.o.log.append({
        type: 'extmsg.unbound',
        actor: 'ctl',
        subject: binding.Conversation.conversation_id,
        message: `the binding of ${binding.Conversation.conversation_id} to ${binding.SessionID || `agent ${binding.AgentName}`} expired at ${binding.ExpiresAt}`,
        payload: { session_id: binding.SessionID, count: 1, reason: 'expired' },
      });
    }
    return expired;
  }

  /** The binding of a conversation that expired most recently, if its last binding ended so. */
  lastExpired(conversation: ConversationRef): SessionBindingRecord | undefined {
    const key = conversationKey(conversation);
    const history = this.o.store.bindings().filter((b) => conversationKey(b.Conversation) === key);
    const last = history.at(-1);
    return last?.Status === 'ended' && last.Metadata.ended_reason === 'expired' ? last : undefined;
  }

  async unbind(body: ExtMsgUnbindInputBody): Promise<SessionBindingRecord[]> {
    if (!body.conversation && body.session_id === undefined && body.agent_name === undefined) {
      throw invalid('body', 'unbind a conversation, a session_id or an agent_name');
    }
    if (body.conversation) checkConversation(body.conversation, 'body.conversation');
    await this.expire();
    const key = body.conversation ? conversationKey(body.conversation) : undefined;
    const ended = this.o.store
      .bindings()
      .filter(
        (b) =>
          b.Status === 'active' &&
          (key === undefined || conversationKey(b.Conversation) === key) &&
          (body.session_id === undefined || b.SessionID === body.session_id) &&
          (body.agent_name === undefined || b.AgentName === body.agent_name),
      );
    this.o.store.endBindings(ended, new Date().toISOString());
    if (ended.length > 0) {
      await this.o.log.append({
        type: 'extmsg.unbound',
        actor: 'ctl',
        subject: body.session_id ?? body.agent_name ?? body.conversation?.conversation_id,
        payload: { session_id: body.session_id ?? ended[0]!.SessionID, count: ended.length },
      });
    }
    return ended;
  }

  list(query: { session_id?: string; all?: boolean }): SessionBindingRecord[] {
    return this.o.store
      .bindings()
      .filter(
        (b) =>
          (query.all || b.Status === 'active') && (query.session_id === undefined || b.SessionID === query.session_id),
      );
  }

  /** The active binding of a conversation (a thread without one of its own: its room's). */
  of(conversation: ConversationRef): SessionBindingRecord | undefined {
    const key = conversationKey(conversation);
    const own = this.o.store.bindings().find((b) => live(b) && conversationKey(b.Conversation) === key);
    if (own || conversation.kind !== 'thread' || !conversation.parent_conversation_id) return own;
    return this.of({
      ...conversation,
      kind: 'room',
      conversation_id: conversation.parent_conversation_id,
      parent_conversation_id: undefined,
    });
  }

  /** The conversations a session is bound to now. */
  ofSession(sessionId: string): SessionBindingRecord[] {
    return this.o.store.bindings().filter((b) => live(b) && b.SessionID === sessionId);
  }
}

/** Active and not past its expiry (which `expire` has not ended yet). */
function live(b: SessionBindingRecord): boolean {
  return b.Status === 'active' && (b.ExpiresAt === null || Date.parse(b.ExpiresAt) > Date.now());
}

/** An RFC 3339 time after now, as an ISO string; a 422 naming `at` otherwise. */
function futureTime(value: string, at: string): string {
  const ms = typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw invalid(at, `${JSON.stringify(value)} is not an RFC 3339 time`);
  if (ms <= Date.now()) throw invalid(at, `${value} has passed: a binding must expire in the future`);
  return new Date(ms).toISOString();
}
