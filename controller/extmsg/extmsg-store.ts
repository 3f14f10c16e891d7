import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type {
  AdapterCapabilities,
  ConversationGroupRecord,
  ConversationRef,
  ConversationTranscriptRecord,
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
}

/** A conversation's identity: what two references to one conversation share. */
export function conversationKey(c: ConversationRef): string {
  return [c.scope_id, c.provider, c.account_id, c.conversation_id].map((s) => s.replace(/\|/g, '||')).join('|');
}

/**
 * External messaging's durable state, in the city's `.ctl/extmsg/`: `state.json` (adapters, bindings, groups,
 * acks, deliveries still to make; small, replaced atomically on each change) and `transcript.jsonl` (every
 * message in and out, appended; read once at start into per-conversation lists). Consistent after a restart:
 * sequences continue, repeats are still recognised, deliveries still pending are retried.
 */
export class ExtmsgStore {
  private state: State = { adapters: [], bindings: [], groups: [], acks: {}, pending: [], outboundByKey: {} };
  private readonly byConversation = new Map<string, ConversationTranscriptRecord[]>();
  private readonly all: ConversationTranscriptRecord[] = [];
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
          this.index(JSON.parse(line) as ConversationTranscriptRecord);
        } catch {
          // A line torn by a crash mid-write: the messages around it still count.
        }
      }
    }
  }

  get adapters(): AdapterRecord[] {
    return this.state.adapters;
  }

  get bindings(): SessionBindingRecord[] {
    return this.state.bindings;
  }

  get groups(): ConversationGroupRecord[] {
    return this.state.groups;
  }

  get pending(): PendingDelivery[] {
    return this.state.pending;
  }

  get acks(): Record<string, Record<string, number>> {
    return this.state.acks;
  }

  outboundResult(key: string): OutboundResult | undefined {
    return this.state.outboundByKey[key];
  }

  rememberOutbound(key: string, result: OutboundResult): void {
    this.state.outboundByKey[key] = result;
    const keys = Object.keys(this.state.outboundByKey);
    for (const old of keys.slice(0, Math.max(0, keys.length - 1000))) delete this.state.outboundByKey[old];
  }

  /** Writes the state (after the caller changed it). */
  save(): void {
    writeFileAtomic(this.statePath, JSON.stringify(this.state));
  }

  /** Appends a message to its conversation's transcript, numbered next. */
  append(
    entry: Omit<ConversationTranscriptRecord, 'Sequence' | 'ID' | 'SchemaVersion'>,
    dedup?: string,
  ): ConversationTranscriptRecord {
    const list = this.byConversation.get(conversationKey(entry.Conversation));
    const sequence = (list?.at(-1)?.Sequence ?? 0) + 1;
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

  conversation(key: string): ConversationTranscriptRecord[] {
    return this.byConversation.get(key) ?? [];
  }

  /** Every message, in the order recorded. */
  transcript(): ConversationTranscriptRecord[] {
    return this.all;
  }

  private index(record: ConversationTranscriptRecord): void {
    this.all.push(record);
    const key = conversationKey(record.Conversation);
    let list = this.byConversation.get(key);
    if (!list) {
      list = [];
      this.byConversation.set(key, list);
    }
    list.push(record);
    const dedup = record.Metadata?.dedup_key;
    if (record.Kind === 'inbound' && dedup) this.seen.set(dedup, record);
  }
}
