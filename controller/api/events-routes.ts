import { Body, Controller, Get, Path, Post, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  EventEmitRequest,
  EventEmitResponse,
  EventRotateResponse,
  ListBodyWireEvent,
} from '../../shared/dto/events.js';
import { decodePageToken, encodePageToken } from '../../shared/events/cursor.js';
import { isKnownEventType } from '../../shared/events/event-types.js';
import { eventQuery } from '../../shared/events/event-query.js';
import { toWireEvent } from '../../shared/events/wire.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityRuntime } from '../city-runtime.js';
import { DEFAULT_MAX_ARCHIVES } from '../auto-rotate.js';
import { blockUntilChanged } from './blocking.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}/events')
@Tags('City events')
@Response<ErrorModel>(404, 'City not found or not running (`not_found: city not found or not running: <name>`)')
export class CityEventsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's events, newest first, in pages. `X-CTL-Index` carries the log's head seq (0 when empty).
   * Reading a page costs the same however long the log is.
   * @summary List city events
   * @param type Only events of this type.
   * @param actor Only events by this actor.
   * @param since Only events at most this old (a duration such as `5m`, `1h30m`).
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @param index Blocking query: when the head is at most this seq, wait for a newer event (or `wait`) first.
   * @param wait How long a blocking query may wait (a duration, default `30s`, at most `2m`).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   * @isInt index
   * @minimum index 0
   */
  @Get('')
  @SuccessResponse<{ 'X-CTL-Index': string }>(200, 'OK')
  @Response<ErrorModel>(400, 'Invalid `since` or `cursor`')
  @Response<ErrorModel>(422, 'Invalid `limit`, `index` or `wait`')
  public async listCityEvents(
    @Path() cityName: string,
    @Query() type?: string,
    @Query() actor?: string,
    @Query() since?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
    @Query() index?: number,
    @Query() wait?: string,
  ): Promise<ListBodyWireEvent> {
    const query = eventQuery({ type, actor, since });
    const beforeSeq = cursor !== undefined && cursor !== '' ? decodePageToken(cursor) : undefined;
    const head = await blockUntilChanged(this.city, index, wait);
    const page = this.city.log.newest({ limit: limit || 100, beforeSeq, filter: query.filter, sinceMs: query.sinceMs });
    this.setHeader('X-CTL-Index', String(head));
    const body: ListBodyWireEvent = {
      items: page.records.map(toWireEvent),
      total: query.filtered ? page.records.length : head,
    };
    const oldest = page.records.at(-1);
    if (page.more && oldest) body.next_cursor = encodePageToken(oldest.seq);
    return body;
  }

  /**
   * Rotates the city's event log: the active file becomes a compressed archive and a new one starts with an
   * `events.rotated` anchor event (its seq continues the numbering). Lists, streams and resumes read across
   * archives. A log with nothing new since the last rotation (empty, or only that rotation's anchor) is not
   * rotated, and says so in `reason`. Archives beyond `[events] max_archives` (default 30) are removed, oldest
   * first (`removed_archives`). `wait=true` waits (up to 30 s) for the compression.
   * @summary Rotate the city event log
   * @param wait Wait for the archive to be compressed.
   */
  @Post('rotate')
  public async rotateCityEvents(@Path() cityName: string, @Query() wait?: boolean): Promise<EventRotateResponse> {
    const result = await this.city.log.rotate({
      keepArchives: this.city.config.eventsMaxArchives ?? DEFAULT_MAX_ARCHIVES,
    });
    const removed = result.removed ? { removed_archives: result.removed } : {};
    if (!result.rotated || !result.archive || !result.anchor) {
      return { rotated: false, reason: result.reason ?? 'not rotated', ...removed };
    }
    let status: 'pending' | 'complete' = 'pending';
    if (wait === true && result.compressed) {
      const done = await Promise.race([
        result.compressed.then(() => true).catch(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ROTATE_WAIT_MS).unref()),
      ]);
      if (done) status = 'complete';
    }
    return {
      rotated: true,
      archive: {
        path: result.archive.path,
        first_seq: result.archive.firstSeq,
        last_seq: result.archive.lastSeq,
        compression_status: status,
      },
      anchor_event: { seq: result.anchor.seq, type: result.anchor.type, ts: result.anchor.ts },
      ...removed,
    };
  }

  /**
   * Records an event of a custom type (any type ctl does not record itself) in the city's log (201 with its seq): the way for scripts, tools and tests to
   * put events on the bus.
   * @summary Record an event
   */
  @Post('')
  @SuccessResponse(201, 'Recorded')
  @Response<ErrorModel>(422, 'Invalid body, or a type ctl records itself (`bead.created`, …)')
  public async emitCityEvent(@Path() cityName: string, @Body() body: EventEmitRequest): Promise<EventEmitResponse> {
    if (isKnownEventType(body.type)) {
      // Every event of one of our types carries the payload its schema declares: only we record them.
      const message = `${body.type} is recorded by ctl itself; a custom event needs a type of its own`;
      throw new Problem('validation-failed', `invalid: body.type: ${message}`, {
        errors: [{ location: 'body.type', message, value: body.type }],
      });
    }
    const record = await this.city.log.appendCustom({
      type: body.type,
      actor: body.actor,
      subject: body.subject,
      message: body.message,
      payload: body.payload,
    });
    this.setStatus(201);
    return { status: 'recorded', seq: record.seq };
  }
}

const ROTATE_WAIT_MS = 30_000;
