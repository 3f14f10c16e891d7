import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type {
  AdapterCapabilities,
  ConversationGroupRecord,
  ConversationRef,
  ConversationTranscriptRecord,
  ExternalAttachment,
  OutboundResult,
  SessionBindingRecord,
} from '../../shared/dto/extmsg.js';

/** A registered adapter. */
export interface AdapterRecord {
  provider: string;
  account_id: string;
  name: string;
  callback_url?: string;
  capabilities?: AdapterCapabilities;
  registered_at: string;
  /** How the last delivery attempt to its callback went: when, and why it failed if it did. */
  last_delivery?: { at: string; error?: string };
}

/** An outbound message not yet taken by its adapter: retried with back-off, across controller restarts. */
export interface PendingDelivery {
  message_id: string;
  provider: string;
  account_id: string;
  conversation: ConversationRef;
  session_id: string;
  parts: string[];
  /** Parts already taken. */
  sent: number;
  attempts: number;
  next_at: number;
  reply_to_message_id?: string;
  /** Sent with the last part. */
  attachments?: ExternalAttachment[];
}

/** One message from a person and what it set off: how far sessions may answer each other because of it. */
export interface ReplyChain {
  peer_deliveries: number;
  publishes_by_session: Record<string, number>;
}

/**
 * A message handed to a session whose answer goes back to a conversation, until the session's transcript shows
 * the turn it began. Kept on disk: the message may wait in the session's queue across a controller restart.
 */
export interface AwaitedReply {
  message_id: string;
  session_id: string;
  conversation: ConversationRef;
  reply_to: string;
  /** The session's transcript head when the message was handed over: its turn begins after it. */
  from_seq: number;
  chain: ReplyChain;
}

/** A transcript record and its place in the whole listing (every conversation, in the order recorded, from 1). */
export interface ListedRecord {
  record: ConversationTranscriptRecord;
  position: number;
}

interface State {
  adapters: AdapterRecord[];
  bindings: SessionBindingRecord[];
  groups: ConversationGroupRecord[];
  /** What each session has seen of each conversation: session id → conversation key → sequence. */
  acks: Record<string, Record<string, number>>;
  pending: PendingDelivery[];
  /** Outbound results by idempotency key (the newest 1,000). */
  outboundByKey: Record<string, OutboundResult>;
  /** Messages whose answers go back to their conversations, by message id (the newest 1,000). */
  awaited: Record<string, AwaitedReply>;
}

const KEPT = 1000;

/** A conversation's identity: what two references to one conversation share. */
export function conversationKey(c: ConversationRef): string {
  return [c.scope_id, c.provider, c.account_id, c.conversation_id].map((s) => s.replace(/\|/g, '||')).join('|');
}

/**
 * External messaging's durable state, in the city's `.ctl/extmsg/`: `state.json` (adapters, bindings, groups,
 * acks, deliveries still to make, messages whose answers are awaited; small, replaced atomically on each change)
 * and `transcript.jsonl` (every message in and out, appended; read once at start into per-conversation lists).
 * Consistent after a restart: sequences continue, repeats are still recognised, deliveries still pending are
 * retried, answers to messages still queued go back where they belong.
 */
export class ExtmsgStore {
  private state: State = {
    adapters: [],
    bindings: [],
    groups: [],
    acks: {},
    pending: [],
    outboundByKey: {},
    awaited: {},
  };
  private readonly byConversation = new Map<string, ListedRecord[]>();
  private readonly all: ListedRecord[] = [];
  /** Inbound messages seen, by `provider|account|dedup key` → their transcript record. */
  private readonly seen = new Map<string, ConversationTranscriptRecord>();
  private readonly statePath: string;
  private readonly transcriptPath: string;

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    this.statePath = join(dir, 'state.json');
    this.transcriptPath = join(dir, 'transcript.jsonl');
    if (existsSync(this.statePath)) {
      this.state = { ...this.state, ...(JSON.parse(readFileSync(this.statePath, 'utf8')) as Partial<State>) };
    }
    if (existsSync(this.transcriptPath)) {
      for (const line of readFileSync(this.transcriptPath, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        try {
          this.index(upgraded(JSON.parse(line) as ConversationTranscriptRecord));
        } catch {
          // A line torn by a crash mid-write: the messages around it still count.
        }
      }
    }
  }

  // ---- adapters

  adapters(): readonly AdapterRecord[] {
    return this.state.adapters;
  }

  adapter(provider: string, accountId: string): AdapterRecord | undefined {
    return this.state.adapters.find((a) => a.provider === provider && a.account_id === accountId);
  }

  /** Adds an adapter, or replaces the one registered for its provider and account. */
  putAdapter(record: AdapterRecord): void {
    const at = this.state.adapters.findIndex(
      (a) => a.provider === record.provider && a.account_id === record.account_id,
    );
    if (at >= 0) this.state.adapters[at] = record;
    else this.state.adapters.push(record);
    this.save();
  }

  /**
   * Notes how a delivery to the adapter went (`error` when it failed), for the adapters list to say whether it
   * is alive; written with the delivery's own progress (`updatePending`), which always follows.
   */
  noteDelivery(record: AdapterRecord, error: string | undefined): void {
    record.last_delivery = { at: new Date().toISOString(), ...(error ? { error } : {}) };
  }

  removeAdapter(record: AdapterRecord): void {
    this.state.adapters = this.state.adapters.filter((a) => a !== record);
    this.save();
  }

  // ---- bindings

  bindings(): readonly SessionBindingRecord[] {
    return this.state.bindings;
  }

  /** Ends `ending` (at `at`) and adds `record`, in one write: a takeover never leaves the conversation unbound. */
  addBinding(record: SessionBindingRecord, ending: readonly SessionBindingRecord[] = [], at = record.BoundAt): void {
    for (const b of ending) this.end(b, at);
    this.state.bindings.push(record);
    this.save();
  }

  endBindings(ending: readonly SessionBindingRecord[], at: string): void {
    for (const b of ending) this.end(b, at);
    if (ending.length > 0) this.save();
  }

  // ---- groups

  groups(): readonly ConversationGroupRecord[] {
    return this.state.groups;
  }

  addGroup(group: ConversationGroupRecord): void {
    this.state.groups.push(group);
    this.save();
  }

  /** Changes a group (the caller's `change` edits it) and writes it. */
  changeGroup(group: ConversationGroupRecord, change: (group: ConversationGroupRecord) => void): void {
    change(group);
    this.save();
  }

  // ---- deliveries

  pending(): readonly PendingDelivery[] {
    return this.state.pending;
  }

  addPending(delivery: PendingDelivery): void {
    this.state.pending.push(delivery);
    this.save();
  }

  /** Writes a delivery's progress (its parts sent, attempts, next try), or drops it once `done`. */
  updatePending(delivery: PendingDelivery, done: boolean): void {
    if (done) this.state.pending = this.state.pending.filter((p) => p !== delivery);
    this.save();
  }

  outboundResult(key: string): OutboundResult | undefined {
    return this.state.outboundByKey[key];
  }

  rememberOutbound(key: string, result: OutboundResult): void {
    this.state.outboundByKey[key] = result;
    dropOldest(this.state.outboundByKey);
    this.save();
  }

  // ---- answers awaited

  awaited(): AwaitedReply[] {
    return Object.values(this.state.awaited);
  }

  awaitReply(entry: AwaitedReply): void {
    this.state.awaited[entry.message_id] = entry;
    dropOldest(this.state.awaited);
    this.save();
  }

  /** The awaited answer to `messageId`, taken out (its turn has begun). */
  takeAwaited(messageId: string): AwaitedReply | undefined {
    const entry = this.state.awaited[messageId];
    if (!entry) return undefined;
    delete this.state.awaited[messageId];
    this.save();
    return entry;
  }

  /** Forgets what a session was to answer (it is closed, or gone). */
  dropAwaited(sessionId: string): void {
    const before = Object.keys(this.state.awaited).length;
    for (const [id, entry] of Object.entries(this.state.awaited)) {
      if (entry.session_id === sessionId) delete this.state.awaited[id];
    }
    if (Object.keys(this.state.awaited).length !== before) this.save();
  }

  // ---- acks

  /** Moves a session's ack of a conversation forward (never back); the ack now. */
  ack(sessionId: string, key: string, sequence: number): number {
    const acks = (this.state.acks[sessionId] ??= {});
    acks[key] = Math.max(acks[key] ?? 0, sequence);
    this.save();
    return acks[key];
  }

  // ---- transcript

  /** Appends a message to its conversation's transcript, numbered next. */
  append(
    entry: Omit<ConversationTranscriptRecord, 'Sequence' | 'ID' | 'SchemaVersion'>,
    dedup?: string,
  ): ConversationTranscriptRecord {
    const list = this.byConversation.get(conversationKey(entry.Conversation));
    const sequence = (list?.at(-1)?.record.Sequence ?? 0) + 1;
    const record: ConversationTranscriptRecord = {
      ID: `xm-${this.all.length + 1}`,
      SchemaVersion: 1,
      Sequence: sequence,
      ...entry,
      ...(dedup ? { Metadata: { ...entry.Metadata, dedup_key: dedup } } : {}),
    };
    appendFileSync(this.transcriptPath, `${JSON.stringify(record)}\n`);
    this.index(record);
    return record;
  }

  /** The inbound message recorded under this dedup key, if any. */
  seenInbound(key: string): ConversationTranscriptRecord | undefined {
    return this.seen.get(key);
  }

  /** A conversation's messages, in sequence, each with its place in the whole listing. */
  conversation(key: string): readonly ListedRecord[] {
    return this.byConversation.get(key) ?? [];
  }

  /** Every message, in the order recorded. */
  transcript(): readonly ListedRecord[] {
    return this.all;
  }

  private index(record: ConversationTranscriptRecord): void {
    const listed = { record, position: this.all.length + 1 };
    this.all.push(listed);
    const key = conversationKey(record.Conversation);
    let list = this.byConversation.get(key);
    if (!list) {
      list = [];
      this.byConversation.set(key, list);
    }
    list.push(listed);
    const dedup = record.Metadata?.dedup_key;
    if (record.Kind === 'inbound' && dedup) this.seen.set(dedup, record);
  }

  private end(binding: SessionBindingRecord, at: string): void {
    binding.Status = 'ended';
    binding.EndedAt = at;
  }

  private save(): void {
    writeFileAtomic(this.statePath, JSON.stringify(this.state));
  }
}

/** Keeps a record keyed by insertion order to its newest KEPT entries. */
function dropOldest(byKey: Record<string, unknown>): void {
  const keys = Object.keys(byKey);
  for (const old of keys.slice(0, Math.max(0, keys.length - KEPT))) delete byKey[old];
}

/** A record written before attachments were objects (a bare URL each) reads as the objects they are now. */
function upgraded(record: ConversationTranscriptRecord): ConversationTranscriptRecord {
  const list = (record.Attachments ?? []) as (ExternalAttachment | string)[];
  if (!list.some((a) => typeof a === 'string')) return record;
  return {
    ...record,
    Attachments: list.map((a) => (typeof a === 'string' ? { provider_id: '', url: a, mime_type: '' } : a)),
  };
}
