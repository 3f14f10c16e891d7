// External messaging: people in a chat system talk to a city's sessions through an adapter. Request bodies are
// snake_case; the records use the reference's PascalCase keys (part of its contract, kept as they are).

/** A conversation in the chat system: a direct message, a room, or a thread in a room. */
export interface ConversationRef {
  /** The chat system's workspace, server or team. */
  scope_id: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  kind: 'dm' | 'room' | 'thread';
  /** A thread's room. */
  parent_conversation_id?: string;
}

/** What an adapter can carry. */
export interface AdapterCapabilities {
  /** Longest message the chat system takes (characters); longer ones are split. 0: no limit. @isInt */
  MaxMessageLength: number;
  SupportsAttachments: boolean;
  SupportsChildConversations: boolean;
}

/** Body of `POST /extmsg/adapters`. */
export interface ExtMsgAdapterRegisterInputBody {
  /** @minLength 1 */
  provider: string;
  /** @minLength 1 */
  account_id: string;
  name?: string;
  /** Where the city POSTs outbound messages: a loopback URL, or a host `[extmsg] allowed_callback_hosts` names. */
  callback_url?: string;
  capabilities?: AdapterCapabilities;
}

export interface ExtMsgAdapterRegisterOutputBody {
  provider: string;
  account_id: string;
  name: string;
  /** `registered`, or `updated` for an adapter registering again. */
  status: 'registered' | 'updated';
}

export interface ExtMsgAdapterUnregisterInputBody {
  /** @minLength 1 */
  provider: string;
  /** @minLength 1 */
  account_id: string;
}

export interface ExtmsgAdapterInfo {
  provider: string;
  account_id: string;
  name: string;
  callback_url?: string;
  capabilities?: AdapterCapabilities;
  registered_at: string;
  /** Outbound deliveries to it that are still being retried. @isInt */
  pending_deliveries: number;
  /**
   * Whether it takes deliveries, by the last attempt: `reachable`, `unreachable` (its callback refused or did not
   * answer: the adapter is down), `unknown` (nothing delivered to it yet) or `no_callback` (it polls; none sent).
   */
  state: 'reachable' | 'unreachable' | 'unknown' | 'no_callback';
  /** When the last delivery was attempted (RFC 3339). */
  last_delivery_at?: string;
  /** Why the last delivery failed, when it did. */
  last_error?: string;
}

export interface ListBodyExtmsgAdapterInfo {
  items: ExtmsgAdapterInfo[];
  /** @isInt */
  total: number;
  /** The cursor of the next page, when there is one. */
  next_cursor?: string;
}

/** A conversation bound to a session (or to an agent, whose live session takes its messages). */
export interface SessionBindingRecord {
  ID: string;
  /** @isInt */
  SchemaVersion: number;
  Conversation: ConversationRef;
  SessionID: string;
  SessionName: string;
  AgentName: string;
  /** Counts the conversation's bindings: a rebind (`replace`) makes the next one. @isInt */
  BindingGeneration: number;
  /** `ended` once unbound, taken over, or past `ExpiresAt`. */
  Status: 'active' | 'ended';
  BoundAt: string;
  /** When it stops routing (it is then ended, and `Metadata.ended_reason` is `expired`); null: it does not. */
  ExpiresAt: string | null;
  EndedAt?: string;
  Metadata: { [key: string]: string };
}

/** Body of `POST /extmsg/bind`: a session or an agent, not both. */
export interface ExtMsgBindInputBody {
  conversation: ConversationRef;
  session_id?: string;
  agent_name?: string;
  /** Take the conversation over from the binding it has (a new generation) instead of a 409. */
  replace?: boolean;
  /** When the binding stops routing: an RFC 3339 time in the future. It never expires without one. */
  expires_at?: string;
  metadata?: { [key: string]: string };
}

/** Body of `POST /extmsg/unbind`: what to unbind — a conversation, a session's or an agent's bindings. */
export interface ExtMsgUnbindInputBody {
  conversation?: ConversationRef;
  session_id?: string;
  agent_name?: string;
}

export interface ExtMsgUnbindOutputBody {
  unbound: SessionBindingRecord[];
}

export interface ListBodySessionBindingRecord {
  items: SessionBindingRecord[];
  /** @isInt */
  total: number;
  /** The cursor of the next page, when there is one. */
  next_cursor?: string;
}

/** How far sessions in one room may trigger each other (so they cannot loop). */
export interface FanoutPolicy {
  Enabled: boolean;
  /** An untargeted message goes to the default handle. */
  AllowUntargetedPublication: boolean;
  /** Replies one session may make to its peers for one message from a person. @isInt */
  MaxPeerTriggeredPublishes: number;
  /** Deliveries between sessions for one message from a person. @isInt */
  MaxTotalPeerDeliveries: number;
}

/** Several sessions in one room, each answering to a handle. */
export interface ConversationGroupRecord {
  ID: string;
  /** @isInt */
  SchemaVersion: number;
  RootConversation: ConversationRef;
  Mode: string;
  DefaultHandle: string;
  LastAddressedHandle: string;
  FanoutPolicy: FanoutPolicy;
  Metadata: { [key: string]: string };
  Participants: ConversationGroupParticipant[];
}

export interface ExtMsgGroupEnsureInputBody {
  root_conversation: ConversationRef;
  /** `launcher` (the default): messages go to the addressed handle, else the default one. */
  mode?: string;
  default_handle?: string;
  metadata?: { [key: string]: string };
}

export interface ConversationGroupParticipant {
  ID: string;
  GroupID: string;
  Handle: string;
  SessionID: string;
  SessionName: string;
  Public: boolean;
  Metadata: { [key: string]: string };
}

export interface ExtMsgParticipantUpsertInputBody {
  /** @minLength 1 */
  group_id: string;
  /** @minLength 1 @pattern ^[A-Za-z0-9][A-Za-z0-9_.-]*$ */
  handle: string;
  /** @minLength 1 */
  session_id: string;
  public?: boolean;
  metadata?: { [key: string]: string };
}

export interface ExtMsgParticipantRemoveInputBody {
  /** @minLength 1 */
  group_id: string;
  /** @minLength 1 */
  handle: string;
}

/** A file attached to a message, as the chat system holds it (the city keeps the reference, not the bytes). */
export interface ExternalAttachment {
  /** The chat system's id of the file. */
  provider_id: string;
  /** Where the file can be fetched. @minLength 1 */
  url: string;
  /** Its media type (`image/png`, …); empty when the chat system did not say. */
  mime_type: string;
}

/** Who wrote a message. */
export interface ExternalActor {
  id: string;
  display_name: string;
  is_bot: boolean;
}

/** A message from the chat system, as its adapter hands it over. */
export interface ExternalInboundMessage {
  /** The chat system's id of the message: a second message with it is recorded once. @minLength 1 */
  provider_message_id: string;
  conversation: ConversationRef;
  actor: ExternalActor;
  text: string;
  received_at: string;
  /** A handle it is addressed to (else one named `@handle` at its start, else the default). */
  explicit_target?: string;
  reply_to_message_id?: string;
  /** Files attached to it: kept in the transcript, and listed (type and URL) in what the session is given. */
  attachments?: ExternalAttachment[];
  /** Used instead of provider_message_id to spot a repeat, when given. */
  dedup_key?: string;
}

export interface ExtMsgInboundInputBody {
  provider?: string;
  account_id?: string;
  message: ExternalInboundMessage;
  /** The chat system's raw payload, kept in the transcript entry's metadata. */
  payload?: string;
  /**
   * `live` (the default): a message as it arrives, routed to a session. `hydrated`: history the adapter
   * backfills (messages from before it was connected): recorded in the transcript in order, never delivered.
   */
  provenance?: 'live' | 'hydrated';
}

export interface ConversationTranscriptRecord {
  ID: string;
  /** @isInt */
  SchemaVersion: number;
  Conversation: ConversationRef;
  /** Its place in the conversation, from 1, gap-free. @isInt */
  Sequence: number;
  Kind: 'inbound' | 'outbound';
  /** `live` (captured as it happened) or `hydrated` (history an adapter backfilled; never delivered). */
  Provenance: 'live' | 'hydrated';
  ProviderMessageID: string;
  Actor: ExternalActor;
  Text: string;
  ExplicitTarget: string;
  ReplyToMessageID: string;
  Attachments: ExternalAttachment[];
  SourceSessionID: string;
  CreatedAt: string;
  Metadata: { [key: string]: string };
}

/** Which session of a group a message went to, and why. */
export interface GroupRouteDecision {
  /** `explicit`, `mention`, `default`, or `none`. */
  Match: string;
  TargetSessionID: string;
  UpdateCursor: boolean;
}

export interface InboundResult {
  /**
   * `delivered` (to a session), `unbound` (recorded; no session takes it — the reason says why, an expired
   * binding included), `duplicate` (recorded before), or `hydrated` (backfilled history, recorded only).
   */
  Status: 'delivered' | 'unbound' | 'duplicate' | 'hydrated';
  Reason: string;
  Message: ExternalInboundMessage;
  Binding: SessionBindingRecord | null;
  GroupRoute: GroupRouteDecision | null;
  TranscriptEntry: ConversationTranscriptRecord;
  TargetSessionID: string;
  TargetAgentName: string;
}

export interface ExtMsgOutboundInputBody {
  /** @minLength 1 */
  session_id: string;
  /** Where to post; the session's one active binding when omitted. */
  conversation?: ConversationRef;
  text: string;
  reply_to_message_id?: string;
  /** Files to post with it (the adapter must declare `SupportsAttachments`); sent with the message's last part. */
  attachments?: ExternalAttachment[];
  /** A repeat with the same key answers the first result and posts nothing. */
  idempotency_key?: string;
}

/** What became of posting a message to the adapter. */
export interface PublishReceipt {
  MessageID: string;
  Conversation: ConversationRef;
  Delivered: boolean;
  /** `''`, `retrying` (the adapter did not take it yet; retried with back-off), or `failed`. */
  FailureKind: string;
  /** Milliseconds until the next attempt, while retrying. @isInt */
  RetryAfter: number;
  Metadata: { [key: string]: string };
}

export interface DeliveryContextRecord {
  ID: string;
  /** @isInt */
  SchemaVersion: number;
  SessionID: string;
  Conversation: ConversationRef;
  /** @isInt */
  BindingGeneration: number;
  LastPublishedAt: string;
  LastMessageID: string;
  SourceSessionID: string;
  Metadata: { [key: string]: string };
}

export interface OutboundResult {
  Receipt: PublishReceipt;
  DeliveryContext: DeliveryContextRecord;
  TranscriptEntry: ConversationTranscriptRecord;
}

export interface ListBodyConversationTranscriptRecord {
  items: ConversationTranscriptRecord[];
  /** @isInt */
  total: number;
  /** `after_sequence` for the next page. */
  next_cursor?: string;
}

export interface ExtMsgTranscriptAckInputBody {
  /** @minLength 1 */
  session_id: string;
  conversation: ConversationRef;
  /** @isInt @minimum 0 */
  sequence: number;
}

export interface ExtMsgTranscriptAckOutputBody {
  status: 'ok';
  session_id: string;
  /** What the session has seen of the conversation now (acks never move back). @isInt */
  acked_sequence: number;
}

/** Payload of `extmsg.adapter_added` and `extmsg.adapter_removed`. */
export interface AdapterEventPayload {
  provider: string;
  account_id: string;
}

/** Payload of `extmsg.bound`. */
export interface BoundEventPayload {
  provider: string;
  conversation_id: string;
  session_id: string;
  agent_name?: string;
  /** @isInt */
  generation: number;
}

/** Payload of `extmsg.unbound`. */
export interface UnboundEventPayload {
  session_id: string;
  /** @isInt */
  count: number;
  /** `expired` when its `ExpiresAt` passed (no one unbound it). */
  reason?: string;
}

/** Payload of `extmsg.group_created`. */
export interface GroupCreatedEventPayload {
  provider: string;
  conversation_id: string;
  mode: string;
}

/** Payload of `extmsg.inbound`. */
export interface InboundEventPayload {
  provider: string;
  conversation_id: string;
  actor: string;
  target_session: string;
  target_agent?: string;
  status: 'delivered' | 'unbound' | 'duplicate' | 'hydrated';
  /** @isInt */
  sequence: number;
}

/** Payload of `extmsg.outbound`: one message's delivery to its adapter, as it went. */
export interface OutboundEventPayload {
  provider: string;
  conversation_id: string;
  session: string;
  message_id: string;
  /** `delivered`, `retrying` (an attempt failed; another follows), or `failed` (it gave up). */
  status: 'delivered' | 'retrying' | 'failed';
  /** @isInt */
  attempts: number;
  error?: string;
  /** @isInt */
  parts: number;
}
