import type { Logger } from 'pino';
import type { ConversationRef } from '../../shared/dto/extmsg.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { Session } from '../sessions/session.js';
import type { SessionService } from '../sessions/session-service.js';
import type { AwaitedReply, ExtmsgStore, ReplyChain } from './extmsg-store.js';
import { MENTION, type Groups } from './groups.js';
import type { Outbound } from './outbound.js';

/** A turn a session takes for a conversation, its answer gathered as it comes. */
interface ReplyTurn {
  awaited: AwaitedReply;
  text: string;
  lastChunk: boolean;
}

/** Transcript entries read back at once when a controller takes over a session's awaited answers. */
const REPLAY_MAX = 10_000;

/**
 * Replies: a message handed to a session for a conversation is remembered on disk until the session's
 * transcript shows the turn it began (it may wait in the session's queue across a controller restart); what the
 * session says in that turn is published back to the conversation when the turn ends, and handed on to a peer
 * it addresses in a group, within the group's fan-out limits.
 */
export class Replies {
  /** Turns answering a conversation, by `session:turn`. */
  private readonly turns = new Map<string, ReplyTurn>();
  /**
   * By session, the conversation its last turn answered: a turn the program then begins on its own (Claude Code,
   * once a background subagent is done) answers it too.
   */
  private readonly answering = new Map<string, AwaitedReply>();
  /** Sessions followed, and the last transcript entry read of each (an entry is read once). */
  private readonly watched = new Map<string, number>();
  private stopWatching: (() => void) | undefined;

  constructor(
    private readonly o: {
      store: ExtmsgStore;
      sessions: SessionService;
      groups: Groups;
      outbound: Outbound;
      logger?: Logger;
    },
  ) {}

  /**
   * Follows every session's transcript, reading back what a session wrote for an awaited answer while nobody
   * followed it (a controller starts its sessions before external messaging).
   */
  start(): void {
    const replayFrom = new Map<string, number>();
    for (const awaited of this.o.store.awaited()) {
      const session = this.o.sessions.openById(awaited.session_id);
      if (!session || session.state === 'closed') {
        this.o.store.dropAwaited(awaited.session_id);
        continue;
      }
      replayFrom.set(session.id, Math.min(replayFrom.get(session.id) ?? Infinity, awaited.from_seq));
    }
    for (const session of this.o.sessions.all()) {
      this.watch(session);
      const from = replayFrom.get(session.id);
      if (from === undefined) continue;
      for (const record of session.transcript.after(from, REPLAY_MAX)) this.onEntry(session, record);
    }
    this.stopWatching = this.o.sessions.onOpened((session) => this.watch(session));
  }

  stop(): void {
    this.stopWatching?.();
  }

  /** Hands text to a session (waking it), remembering that its reply goes back to the conversation. */
  submit(session: Session, text: string, conversation: ConversationRef, replyTo: string, chain: ReplyChain): void {
    this.watch(session);
    const from = session.transcript.head();
    const messageId = session.enqueue(text, 'default', { wake: 'woken by an external message' });
    this.o.store.awaitReply({
      message_id: messageId,
      session_id: session.id,
      conversation,
      reply_to: replyTo,
      from_seq: from,
      chain,
    });
  }

  private watch(session: Session): void {
    if (this.watched.has(session.id)) return;
    this.watched.set(session.id, 0);
    const listener = (record: EventRecord) => this.onEntry(session, record);
    const closed = (state: string) => {
      if (state !== 'closed') return;
      session.off('entry', listener);
      session.off('state', closed);
      this.watched.delete(session.id);
      this.answering.delete(session.id);
      this.o.store.dropAwaited(session.id);
    };
    session.on('entry', listener);
    session.on('state', closed);
  }

  private onEntry(session: Session, record: EventRecord): void {
    const last = this.watched.get(session.id) ?? 0;
    if (record.seq <= last) return;
    if (this.watched.has(session.id)) this.watched.set(session.id, record.seq);
    const payload = (record.payload ?? {}) as {
      turn?: number;
      message_id?: string;
      text?: string;
      chunk?: boolean;
      program_turn?: boolean;
    };
    const key = `${session.id}:${payload.turn}`;
    if (record.type === 'user' && payload.message_id) {
      const awaited = this.o.store.takeAwaited(payload.message_id);
      if (awaited) this.turns.set(key, { awaited, text: '', lastChunk: false });
      else this.answering.delete(session.id);
      return;
    }
    if (record.type === 'notice' && payload.program_turn === true) {
      const awaited = this.answering.get(session.id);
      if (awaited) this.turns.set(key, { awaited, text: '', lastChunk: false });
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
      this.answering.set(session.id, turn.awaited);
      const reply = turn.text.trim();
      if (reply) void this.reply(session, turn.awaited, reply);
    }
  }

  /** Publishes a session's reply to the conversation it answers, and hands it to the peers it addresses. */
  private async reply(session: Session, awaited: AwaitedReply, text: string): Promise<void> {
    try {
      await this.o.outbound.publish({
        session_id: session.id,
        conversation: awaited.conversation,
        text,
        reply_to_message_id: awaited.reply_to,
      });
    } catch (err) {
      this.o.logger?.warn({ err, session: session.id }, 'a reply could not be published');
      return;
    }
    const group = this.o.groups.of(awaited.conversation);
    const mention = MENTION.exec(text);
    if (!group?.FanoutPolicy.Enabled || !mention) return;
    const peer = group.Participants.find((p) => p.Handle === mention[1] && p.SessionID !== session.id);
    if (!peer) return;
    // The limits that keep sessions in one room from answering each other for ever.
    const chain = awaited.chain;
    const published = (chain.publishes_by_session[session.id] ?? 0) + 1;
    chain.publishes_by_session[session.id] = published;
    if (published > group.FanoutPolicy.MaxPeerTriggeredPublishes) return;
    if (chain.peer_deliveries >= group.FanoutPolicy.MaxTotalPeerDeliveries) return;
    const target = this.o.sessions.openById(peer.SessionID);
    if (!target) return;
    chain.peer_deliveries += 1;
    this.submit(target, text.slice(mention[0].length), awaited.conversation, awaited.reply_to, chain);
  }
}
