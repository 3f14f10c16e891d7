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
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  MailCountOutputBody,
  MailListBody,
  MailReplyInputBody,
  MailSendInputBody,
  MailStatusResponse,
  Message,
} from '../../shared/dto/mail.js';
import { decodeBeadCursor, encodeBeadCursor } from '../beads/page-token.js';
import type { CityRuntime } from '../city-runtime.js';
import { blockUntilChanged } from './blocking.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}/mail')
@Tags('Mail')
@Response<ErrorModel>(404, 'City not running, or no such message (`mail-not-found`)')
export class MailRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * An inbox, newest first: open (not archived) messages, unread only unless `status=all`; of one recipient
   * with `agent`. A blocking query with `index`.
   * @summary List mail
   * @param agent Recipient.
   * @param status `unread` (default) or `all`.
   * @param rig Messages of this rig.
   * @param limit Page size, 1–1000 (default 100).
   * @param cursor `next_cursor` of the previous page.
   * @param index Blocking query: wait until the event head passes this seq.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   * @isInt index
   * @minimum index 0
   */
  @Get('')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid status, limit, index or wait')
  public async listMail(
    @Path() cityName: string,
    @Query() agent?: string,
    @Query() status?: string,
    @Query() rig?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<MailListBody> {
    const before = cursor ? decodeBeadCursor(cursor) : undefined;
    const head = await blockUntilChanged(this.city, index, wait);
    this.setHeader('X-CTL-Index', String(head));
    const page = this.city.mail.list({ agent, status, rig, limit: limit || 100, before });
    const body: MailListBody = { items: page.items, total: page.total };
    const last = page.items.at(-1);
    if (page.more && last) body.next_cursor = encodeBeadCursor(last);
    return body;
  }

  /**
   * Sends a message (a new thread). Records `mail.sent`. With an `Idempotency-Key`, a repeat answers with the
   * message the first request sent.
   * @summary Send mail
   * @param idempotencyKey Makes a retried send safe.
   */
  @Post('')
  @SuccessResponse(201, 'Sent')
  @Response<ErrorModel>(422, 'Invalid body, or an Idempotency-Key reused with another body')
  public async sendMail(
    @Path() cityName: string,
    @Body() body: MailSendInputBody,
    @Header('idempotency-key') idempotencyKey?: string,
  ): Promise<Message> {
    const { message } = await this.city.mail.send(
      body,
      idempotencyKey ? { key: idempotencyKey, endpoint: '/mail', body } : undefined,
    );
    this.setStatus(201);
    return message;
  }

  /**
   * Open messages and unread ones, of one recipient with `agent`.
   * @summary Count mail
   */
  @Get('count')
  public countMail(@Path() cityName: string, @Query() agent?: string, @Query() rig?: string): MailCountOutputBody {
    return this.city.mail.count({ agent, rig });
  }

  /**
   * The messages of a thread, archived ones too, in pages: the newest `limit`, oldest first, and a
   * `next_cursor` for the older ones; `id` is a thread id or the id of any of its messages.
   * @summary Mail thread
   * @param rig The rig the message belongs to: a message of another rig (or of none) is a 404.
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('thread/{id}')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit')
  public mailThread(
    @Path() cityName: string,
    @Path() id: string,
    @Query() rig?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): MailListBody {
    const before = cursor ? decodeBeadCursor(cursor) : undefined;
    const page = this.city.mail.thread(id, rig, { limit: limit || 100, before });
    const body: MailListBody = { items: page.items, total: page.total };
    const oldest = page.items[0];
    if (page.more && oldest) body.next_cursor = encodeBeadCursor(oldest);
    return body;
  }

  /**
   * @summary Get a message
   * @param rig The rig the message belongs to: a message of another rig (or of none) is a 404.
   */
  @Get('{id}')
  public getMail(@Path() cityName: string, @Path() id: string, @Query() rig?: string): Message {
    return this.city.mail.get(id, rig);
  }

  /**
   * Deletes a message the way archiving does: it is closed, stays in its thread, and leaves the inbox.
   * Records `mail.deleted` (deleting a closed message changes nothing).
   * @summary Delete (archive) a message
   * @param rig The rig the message belongs to: a message of another rig (or of none) is a 404.
   */
  @Delete('{id}')
  public async deleteMail(
    @Path() cityName: string,
    @Path() id: string,
    @Query() rig?: string,
  ): Promise<MailStatusResponse> {
    await this.city.mail.delete(id, rig);
    return { status: 'deleted' };
  }

  /**
   * Marks a message read (it stays in `status=all` lists). Records `mail.read`.
   * @summary Mark read
   * @param rig The rig the message belongs to: a message of another rig (or of none) is a 404.
   */
  @Post('{id}/read')
  public async readMail(
    @Path() cityName: string,
    @Path() id: string,
    @Query() rig?: string,
  ): Promise<MailStatusResponse> {
    await this.city.mail.markRead(id, rig);
    return { status: 'read' };
  }

  /**
   * Marks a message unread. Records `mail.marked_unread`.
   * @summary Mark unread
   * @param rig The rig the message belongs to: a message of another rig (or of none) is a 404.
   */
  @Post('{id}/mark-unread')
  public async markMailUnread(
    @Path() cityName: string,
    @Path() id: string,
    @Query() rig?: string,
  ): Promise<MailStatusResponse> {
    await this.city.mail.markUnread(id, rig);
    return { status: 'unread' };
  }

  /**
   * Archives a message (it leaves the inbox; its thread keeps it). Idempotent. Records `mail.archived`.
   * @summary Archive a message
   * @param rig The rig the message belongs to: a message of another rig (or of none) is a 404.
   */
  @Post('{id}/archive')
  public async archiveMail(
    @Path() cityName: string,
    @Path() id: string,
    @Query() rig?: string,
  ): Promise<MailStatusResponse> {
    await this.city.mail.archive(id, rig);
    return { status: 'archived' };
  }

  /**
   * Replies in the same thread, to the original's sender; the subject defaults to `Re: <subject>`. Records
   * `mail.replied`.
   * @summary Reply
   * @param rig The rig the message belongs to: a message of another rig (or of none) is a 404.
   * @param idempotencyKey Makes a retried reply safe.
   */
  @Post('{id}/reply')
  @SuccessResponse(201, 'Sent')
  @Response<ErrorModel>(422, 'Invalid body, or an Idempotency-Key reused with another body')
  public async replyMail(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: MailReplyInputBody,
    @Header('idempotency-key') idempotencyKey?: string,
    @Query() rig?: string,
  ): Promise<Message> {
    const { message } = await this.city.mail.reply(
      id,
      body,
      idempotencyKey ? { key: idempotencyKey, endpoint: `/mail/${id}/reply`, body } : undefined,
      rig,
    );
    this.setStatus(201);
    return message;
  }
}
