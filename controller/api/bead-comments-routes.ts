import {
  Body,
  Controller,
  Delete,
  Get,
  Path,
  Post,
  Query,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { BeadComment, BeadCommentInputBody, ListBodyBeadComment } from '../../shared/dto/beads.js';
import type { OKResponseBody } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import { recordedActor } from '../../shared/events/request-actor.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import { openSessionOf } from '../agents/session-briefing.js';
import type { CityRuntime } from '../city-runtime.js';
import { blockUntilChanged } from './blocking.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}/bead/{id}/comments')
@Tags('Beads')
@Response<ErrorModel>(404, 'City not running, or no such bead (`bead-not-found`)')
export class BeadCommentsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * A bead's comments: the newest page first, each page oldest first (as a conversation reads); `next_cursor`
   * leads to earlier ones. With `index`, a blocking query: it answers once the city's event head passes `index`
   * (or after `wait`). `X-CTL-Index` carries the event head.
   * @summary List a bead's comments
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @param index Blocking query: wait until the event head passes this seq.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   * @isInt index
   * @minimum index 0
   */
  @Get()
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit, index or wait')
  public async listComments(
    @Path() cityName: string,
    @Path() id: string,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<ListBodyBeadComment> {
    const before = cursor === undefined ? undefined : decodeCommentCursor(cursor);
    this.city.beads.get(id);
    const head = await blockUntilChanged(this.city, index, wait);
    this.setHeader('X-CTL-Index', String(head));
    const page = this.city.beads.comments(id, { limit: limit || 100, before });
    const body: ListBodyBeadComment = { items: page.items, total: page.total };
    const first = page.items[0];
    if (page.more && first) body.next_cursor = encodeToken('cm', { before: first.id });
    return body;
  }

  /**
   * Comments on a bead. The author is the requester — or, with `session` (an agent's `ctl bead comment` sends its
   * own), that session's agent. Text is kept as written, without leading blank lines and trailing blanks; blank
   * text or more than 10,000 characters is a 422. Records `bead.commented`.
   * @summary Comment on a bead
   */
  @Post()
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(404, 'No such bead, or the session named is not open (`session-not-found`)')
  @Response<ErrorModel>(422, 'Blank or too long text')
  public async addComment(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: BeadCommentInputBody,
  ): Promise<BeadComment> {
    const author = this.authorOf(body.session);
    const comment = await this.city.beads.comment(id, body.text, author);
    this.setStatus(201);
    return comment;
  }

  /**
   * Deletes a comment. Only its author may (the same requester, or with `session` a session of the agent that
   * wrote it); anyone else gets a 403 — a comment is someone's word, and closing or deleting the bead is how
   * the work itself goes. Records `bead.comment_deleted`.
   * @summary Delete a comment
   * @param session The session deleting it, for an agent (`CTL_SESSION_ID`).
   * @isInt commentId
   */
  @Delete('{commentId}')
  @Response<ErrorModel>(403, 'Not the comment’s author')
  @Response<ErrorModel>(404, 'No such bead or comment, or the session named is not open')
  public async deleteComment(
    @Path() cityName: string,
    @Path() id: string,
    @Path() commentId: number,
    @Query() session?: string,
  ): Promise<OKResponseBody> {
    await this.city.beads.deleteComment(id, commentId, this.authorOf(session));
    return { status: 'ok' };
  }

  /** Who writes: the session's agent (its own name for a plain session), else the requester. */
  private authorOf(session: string | undefined): string {
    if (session === undefined || session.trim() === '') return recordedActor('api');
    const record = openSessionOf(this.city.sessions, session.trim()).record;
    return record.kind === 'agent' ? record.template : record.session_name;
  }
}

function decodeCommentCursor(token: string): number {
  const { before } = decodeToken(token, 'cm');
  if (typeof before !== 'number' || !Number.isInteger(before)) throw invalidToken();
  return before;
}
