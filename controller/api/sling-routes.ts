import { Body, Controller, Path, Post, Response, Route, Tags } from '@tsoa/runtime';
import type { SlingInputBody, SlingResponse } from '../../shared/dto/agents.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { CityRuntime } from '../city-runtime.js';
import { sling } from '../agents/sling.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Sling')
export class SlingRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Routes a bead — or each open member of a convoy — to an agent (`target`): stamps `ctl.routed_to` on it,
   * creates a convoy tracking a single bead unless `no_convoy`, and wakes the agent: the tick starts or wakes a
   * session and hands it the bead (assigned to the session, `in_progress`). Everything is checked before
   * anything changes: an unknown agent or bead is a 404, and nothing is written.
   * @summary Sling work to an agent
   */
  @Post('sling')
  @Response<ErrorModel>(404, 'City not running, or no such agent, bead or formula')
  @Response<ErrorModel>(409, 'The bead is closed (pass `force` to reopen and route it)')
  @Response<ErrorModel>(422, 'Invalid body: no bead, or a bead that is not work (a session, a message)')
  public async sling(@Path() cityName: string, @Body() body: SlingInputBody): Promise<SlingResponse> {
    return sling(this.city, body);
  }
}
