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
   * Every registered city's events and the supervisor's own, merged oldest first (by time, then city, then seq),
   * each tagged with `city`. `event_cursor` is captured before listing: pass it as `after_cursor` to the stream
   * to continue without a gap.
   * @summary List supervisor events
   * @param type Only events of this type.
   * @param actor Only events by this actor.
   * @param since Only events at most this old (a duration such as `5m`, `1h30m`).
   * @param limit Keep the newest `limit` matches; 0 (the default) keeps all.
   * @isInt limit
   * @minimum limit 0
   */
  @Get('events')
  @Response<ErrorModel>(400, 'Invalid `since`')
  public listEvents(
    @Query() type?: string,
    @Query() actor?: string,
    @Query() since?: string,
    @Query() limit?: number,
  ): SupervisorEventListOutputBody {
    return this.services.events.list(eventQuery({ type, actor, since }), limit ?? 0);
  }
}
