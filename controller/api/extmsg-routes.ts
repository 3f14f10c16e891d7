import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  Path,
  Post,
  Query,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import { IdempotentReplies } from './idempotent-replies.js';
import type { OKResponseBody } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  ConversationGroupParticipant,
  ConversationGroupRecord,
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
  ExtMsgTranscriptAckOutputBody,
  ExtMsgUnbindInputBody,
  ExtMsgUnbindOutputBody,
  InboundResult,
  ListBodyConversationTranscriptRecord,
  ListBodyExtmsgAdapterInfo,
  ListBodySessionBindingRecord,
  OutboundResult,
  SessionBindingRecord,
} from '../../shared/dto/extmsg.js';
import type { CityRuntime } from '../city-runtime.js';
import { pageOf } from './list-page.js';

const adapterReplies = new IdempotentReplies<ExtMsgAdapterRegisterOutputBody>();

/**
 * External messaging: people in a chat system (IRC, Slack, Discord, …) talking to the city's sessions through
 * an adapter that registers here. Records use PascalCase keys, as the reference's do.
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('External messaging')
export class ExtmsgRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * @summary List adapters
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('extmsg/adapters')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public listAdapters(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyExtmsgAdapterInfo {
    return pageOf(this.city.extmsg.adapters.list(), (a) => `${a.provider}|${a.account_id}`, 'xa', limit, cursor);
  }

  /**
   * Registers an adapter (or updates one registering again: an adapter restarting registers anew). Outbound
   * messages to its conversations are POSTed to `callback_url` as JSON `{provider, account_id, message_id,
   * conversation, text, part, parts, session_id, reply_to_message_id}`, retried with back-off until it answers 2xx
   * (each attempt recorded as `extmsg.outbound`). The callback must be loopback or a host in `[extmsg]
   * allowed_callback_hosts` (422 otherwise). Records `extmsg.adapter_added` for a new one. With an
   * `Idempotency-Key`, a repeat answers as the first did.
   * @summary Register an adapter
   * @param idempotencyKey Makes a retried registration safe.
   */
  @Post('extmsg/adapters')
  @SuccessResponse(201, 'Registered')
  @Response<ErrorModel>(422, 'A bad body, or a callback_url that is not allowed')
  public async registerAdapter(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgAdapterRegisterInputBody,
    @Header('idempotency-key') idempotencyKey?: string,
  ): Promise<ExtMsgAdapterRegisterOutputBody> {
    const { reply } = await adapterReplies.run(idempotencyKey, body, async () => ({
      status: 201,
      reply: await this.city.extmsg.adapters.register(body),
    }));
    this.setStatus(201);
    return reply;
  }

  /**
   * Removes an adapter (the body names it). Records `extmsg.adapter_removed`.
   * @summary Remove an adapter
   */
  @Delete('extmsg/adapters')
  @Response<ErrorModel>(404, 'No such adapter (`adapter-not-found`)')
  public async unregisterAdapter(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgAdapterUnregisterInputBody,
  ): Promise<OKResponseBody> {
    await this.city.extmsg.adapters.unregister(body);
    return { status: 'ok' };
  }

  /**
   * Binds a conversation to a session, or to an agent (whose running session takes its messages; one is
   * started when none runs). A conversation has one active binding: binding it elsewhere is a 409 unless
   * `replace` (a handoff: the old binding ends, the new one is the next generation). Binding it again to the same
   * target answers the binding it has. A thread without a binding of its own goes where its room goes. With
   * `expires_at`, the binding stops routing then: it ends (`Metadata.ended_reason: expired`, `extmsg.unbound`
   * with `reason: expired`) and a message after that is `unbound`, its reason saying the binding expired.
   * @summary Bind a conversation
   */
  @Post('extmsg/bind')
  @Response<ErrorModel>(404, 'No such session or agent')
  @Response<ErrorModel>(409, 'The conversation is bound elsewhere (use replace)')
  public async bind(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgBindInputBody,
  ): Promise<SessionBindingRecord> {
    return this.city.extmsg.bindings.bind(body);
  }

  /**
   * Ends the active bindings of a conversation, a session or an agent. Records `extmsg.unbound`.
   * @summary Unbind
   */
  @Post('extmsg/unbind')
  public async unbind(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgUnbindInputBody,
  ): Promise<ExtMsgUnbindOutputBody> {
    return { unbound: await this.city.extmsg.bindings.unbind(body) };
  }

  /**
   * The active bindings (every one, ended too, with `all=true`): which session or agent each conversation goes to.
   * @summary List bindings
   * @param session_id Only this session's.
   * @param all Ended bindings too.
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('extmsg/bindings')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public async listBindings(
    @Path('cityName') _cityName: string,
    @Query() session_id?: string,
    @Query() all?: boolean,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): Promise<ListBodySessionBindingRecord> {
    await this.city.extmsg.bindings.expire();
    const items = this.city.extmsg.bindings.list({ ...(session_id ? { session_id } : {}), all: all === true });
    return pageOf(items, (b) => b.ID, 'xb', limit, cursor);
  }

  /**
   * The group of a room (by its conversation), with its participants.
   * @summary Get a group
   */
  @Get('extmsg/groups')
  @Response<ErrorModel>(404, 'No group for it (`extmsg-group-not-found`)')
  public getGroup(
    @Path('cityName') _cityName: string,
    @Query() scope_id?: string,
    @Query() provider?: string,
    @Query() account_id?: string,
    @Query() conversation_id?: string,
    @Query() kind?: 'dm' | 'room' | 'thread',
  ): ConversationGroupRecord {
    return this.city.extmsg.groups.find({ scope_id, provider, account_id, conversation_id, kind });
  }

  /**
   * Makes sure a room has a group (several sessions in it, each with a handle): creates it (recording
   * `extmsg.group_created`) or answers the one it has. A message addressed `@handle` (or with `explicit_target`)
   * goes to that participant, an untargeted one to the default handle; a session's reply that addresses a peer
   * reaches it within the group's fan-out limits, so sessions cannot loop on each other.
   * @summary Ensure a group
   */
  @Post('extmsg/groups')
  @SuccessResponse(201, 'The group')
  public async ensureGroup(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgGroupEnsureInputBody,
  ): Promise<ConversationGroupRecord> {
    const { group } = await this.city.extmsg.groups.ensure(body);
    this.setStatus(201);
    return group;
  }

  /**
   * Adds a session to a group under a handle (or moves the handle to another session). The first participant
   * is the default handle unless the group has one.
   * @summary Add a participant
   */
  @Post('extmsg/participants')
  @Response<ErrorModel>(404, 'No such group or session')
  public addParticipant(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgParticipantUpsertInputBody,
  ): ConversationGroupParticipant {
    return this.city.extmsg.groups.upsertParticipant(body);
  }

  /**
   * @summary Remove a participant
   */
  @Delete('extmsg/participants')
  @Response<ErrorModel>(404, 'No such group or handle')
  public removeParticipant(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgParticipantRemoveInputBody,
  ): OKResponseBody {
    this.city.extmsg.groups.removeParticipant(body);
    return { status: 'ok' };
  }

  /**
   * A message from the chat system: recorded in the conversation's transcript and delivered to the session it is
   * bound to (through the sessions runtime: an asleep session wakes), whose reply is published back to the
   * adapter. `Status` says what became of it: `delivered`, `unbound` (recorded; nothing is bound to the
   * conversation, or its session is not running), or `duplicate` (the same provider message id was recorded
   * before; nothing is delivered twice). Records `extmsg.inbound`.
   * @summary Receive a message
   */
  @Post('extmsg/inbound')
  @Response<ErrorModel>(404, 'The adapter is not registered (`adapter-not-found`)')
  @Response<ErrorModel>(422, 'A bad message (a missing part, a text over 32 KiB)')
  public async inbound(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgInboundInputBody,
  ): Promise<InboundResult> {
    return this.city.extmsg.inbound.receive(body);
  }

  /**
   * Publishes a session's message to a conversation (its one binding's when none is named) through the
   * conversation's adapter: split by the adapter's `MaxMessageLength` (never truncated), recorded in the
   * transcript, POSTed to the adapter; the receipt says whether the first attempt was taken (retries follow
   * otherwise). A repeat with the same `idempotency_key` answers the first result.
   * @summary Publish a message
   */
  @Post('extmsg/outbound')
  @Response<ErrorModel>(404, 'No such session, or no adapter for the conversation (`adapter-not-found`)')
  public async outbound(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgOutboundInputBody,
  ): Promise<OutboundResult> {
    return this.city.extmsg.outbound.publish(body);
  }

  /**
   * The messages of a conversation (or of every conversation matching the filters), in and out, each with its
   * sequence number in its conversation, in the order recorded; at most 500 a page. `next_cursor` goes on where the
   * page stopped, across every conversation listed; `after_sequence` starts within one conversation.
   * @summary Conversation transcript
   * @isInt after_sequence
   * @minimum after_sequence 0
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 500
   * @param cursor `next_cursor` of the previous page.
   */
  @Get('extmsg/transcript')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public transcript(
    @Path('cityName') _cityName: string,
    @Query() scope_id?: string,
    @Query() provider?: string,
    @Query() account_id?: string,
    @Query() conversation_id?: string,
    @Query() parent_conversation_id?: string,
    @Query() kind?: 'dm' | 'room' | 'thread',
    @Query() after_sequence?: number,
    @Query() limit?: number,
    @Query() order?: 'asc' | 'desc',
    @Query() cursor?: string,
  ): ListBodyConversationTranscriptRecord {
    return this.city.extmsg.transcripts.list({
      scope_id,
      provider,
      account_id,
      conversation_id,
      parent_conversation_id,
      kind,
      after_sequence,
      cursor,
      limit,
      order,
    });
  }

  /**
   * Records what a session has seen of a conversation (acks only move forward).
   * @summary Acknowledge messages
   */
  @Post('extmsg/transcript/ack')
  public ack(
    @Path('cityName') _cityName: string,
    @Body() body: ExtMsgTranscriptAckInputBody,
  ): ExtMsgTranscriptAckOutputBody {
    return { status: 'ok', session_id: body.session_id, acked_sequence: this.city.extmsg.transcripts.ack(body) };
  }
}
