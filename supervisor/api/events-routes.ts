import { Controller, Get, Query, Response, Route, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { SupervisorEventListOutputBody } from '../../shared/dto/events.js';
import { eventQuery } from '../../shared/events/event-query.js';
import type { SupervisorServices } from './ioc.js';

@Route('v0')
@Tags('Events')
export class EventsRoutes extends Controller {
  constructor(private readonly services: SupervisorServices) {
    super();
  }

  /**
   * Every registered city's events and the supervisor's own, merged, in pages: the newest `limit` matches,
   * oldest first (by time, then city, then seq), each tagged with `city`, and a `next_cursor` for the older
   * ones. The pages list the logs as they were when the first was read. `event_cursor` is captured before
   * listing: pass it as `after_cursor` to the stream to continue without a gap.
   * @summary List supervisor events
   * @param type Only events of this type.
   * @param actor Only events by this actor.
   * @param since Only events at most this old (a duration such as `5m`, `1h30m`).
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('events')
  @Response<ErrorModel>(400, 'Invalid `since` or `cursor`')
  @Response<ErrorModel>(422, 'Invalid `limit`')
  public listEvents(
    @Query() type?: string,
    @Query() actor?: string,
    @Query() since?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): SupervisorEventListOutputBody {
    const query = eventQuery({ type, actor, since });
    return this.services.events.list(
      query,
      limit || DEFAULT_PAGE,
      cursor !== undefined && cursor !== '' ? cursor : undefined,
    );
  }
}

const DEFAULT_PAGE = 100;
