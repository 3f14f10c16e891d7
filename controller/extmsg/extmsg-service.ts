import type { Logger } from 'pino';
import type { EventLog } from '../../shared/events/event-log.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { SessionService } from '../sessions/session-service.js';
import { Adapters } from './adapters.js';
import { Bindings } from './bindings.js';
import { ExtmsgStore } from './extmsg-store.js';
import { Groups } from './groups.js';
import { Inbound } from './inbound.js';
import { Outbound } from './outbound.js';
import { OutboundDelivery } from './outbound-delivery.js';
import { Replies } from './replies.js';
import { ConversationTranscripts } from './transcript.js';

/**
 * External messaging in a city, put together: adapters register (adapters.ts), conversations are bound to
 * sessions or agents (bindings.ts) or shared by a group of sessions (groups.ts), inbound messages are recorded
 * and handed to sessions (inbound.ts), what a session answers goes back (replies.ts, outbound.ts,
 * outbound-delivery.ts), and every message in and out is in the transcript (transcript.ts), all kept in
 * `.ctl/extmsg` (extmsg-store.ts).
 */
export class ExtmsgService {
  readonly store: ExtmsgStore;
  readonly adapters: Adapters;
  readonly bindings: Bindings;
  readonly groups: Groups;
  readonly inbound: Inbound;
  readonly outbound: Outbound;
  readonly transcripts: ConversationTranscripts;
  private readonly replies: Replies;
  private readonly delivery: OutboundDelivery;

  constructor(o: {
    dir: string;
    log: EventLog;
    sessions: SessionService;
    agent: (name: string) => AgentDefinition | undefined;
    callbackHosts: () => string[];
    logger?: Logger;
  }) {
    const store = new ExtmsgStore(o.dir);
    const { log, sessions } = o;
    this.store = store;
    this.delivery = new OutboundDelivery({ store, log, logger: o.logger });
    this.adapters = new Adapters({
      store,
      log,
      callbackHosts: o.callbackHosts,
      registered: () => this.delivery.resume(),
    });
    this.bindings = new Bindings({ store, log, sessions, agent: o.agent });
    this.groups = new Groups({ store, log, sessions });
    this.outbound = new Outbound({
      store,
      sessions,
      adapters: this.adapters,
      bindings: this.bindings,
      delivery: this.delivery,
    });
    this.replies = new Replies({ store, sessions, groups: this.groups, outbound: this.outbound, logger: o.logger });
    this.inbound = new Inbound({
      store,
      log,
      sessions,
      agent: o.agent,
      adapters: this.adapters,
      bindings: this.bindings,
      groups: this.groups,
      replies: this.replies,
    });
    this.transcripts = new ConversationTranscripts({ store, sessions });
  }

  /** Follows every session's transcript for replies, and retries deliveries a previous controller left. */
  start(): void {
    this.replies.start();
    this.delivery.resume();
  }

  stop(): void {
    this.replies.stop();
    this.delivery.stop();
  }
}
