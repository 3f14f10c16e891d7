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
   * Routes work to a target: a bead, several at once (`beads`), each open member of a convoy, or free `text` made
   * a task bead. To an agent (`target`, in `rig` when given) it stamps `ctl.routed_to` and wakes the agent: the
   * tick starts or wakes a session and hands it the bead (assigned to the session, `in_progress`). To an open
   * session (its id, name or alias) it hands the bead over at once and tells the session. A convoy tracks the
   * work unless `no_convoy` (`owned`: it does not close by itself); `merge` is stamped on each bead as
   * `merge_strategy` and told to the session. Everything is checked before anything changes: fields that do not
   * go together are a 422, an unknown target, rig or bead a 404, and nothing is written.
   * @summary Sling work to an agent or a session
   */
  @Post('sling')
  @Response<ErrorModel>(404, 'City not running, or no such agent, session, rig, bead or formula')
  @Response<ErrorModel>(409, 'The bead is closed (pass `force` to reopen and route it)')
  @Response<ErrorModel>(
    422,
    'Invalid body: no work, fields that do not go together, a bead that is not work, or a formula that does not validate with its vars (among them, texts filled past the limit of characters)',
  )
  public async sling(@Path() cityName: string, @Body() body: SlingInputBody): Promise<SlingResponse> {
    return sling(this.city, body);
  }
}
