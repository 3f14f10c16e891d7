import { Body, Controller, Path, Post, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { SessionWaitInputBody, WaitView } from '../../shared/dto/formulas.js';
import type { CityRuntime } from '../city-runtime.js';
import { sessionWaitView } from '../waits/session-waits.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Waits')
export class WaitsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Registers a dependency wait of an open session: when the beads in `on_beads` have closed (all of them, or
   * `any`), the session is nudged — sent a message naming them and the `note`, woken if it sleeps — and the wait
   * is closed (`wait.ready`). Beads closed already end it at once. A session closed before then fails it
   * (`wait.failed`). `GET /waits` lists it (kind `deps`).
   * @summary Make a session wait for beads to close
   * @param id The session's id, name or alias.
   */
  @Post('session/{id}/wait')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(404, 'No open session of that name, or no such bead')
  @Response<ErrorModel>(422, 'No beads (or more than 100) to wait for')
  public async createSessionWait(
    @Path() cityName: string,
    @Path() id: string,
    @Body() body: SessionWaitInputBody,
  ): Promise<WaitView> {
    const wait = await this.city.waits.register(id, body);
    this.setStatus(201);
    this.setHeader('Location', `/v0/city/${encodeURIComponent(this.city.name)}/wait/${wait.id}`);
    return sessionWaitView(wait);
  }

  /**
   * Cancels a pending session wait: it is closed (state `canceled`, `wait.canceled`) and never nudges.
   * @summary Cancel a session's wait
   * @param id The wait's id.
   */
  @Post('wait/{id}/cancel')
  @Response<ErrorModel>(404, 'No session wait of that id (a run’s gate is opened, not canceled)')
  @Response<ErrorModel>(409, 'The wait is no longer pending')
  public async cancelWait(@Path() cityName: string, @Path() id: string): Promise<WaitView> {
    return sessionWaitView(await this.city.waits.cancel(id));
  }

  /**
   * Ends a pending session wait now, whatever its beads: the session is nudged as if they had closed.
   * @summary Mark a session's wait ready
   * @param id The wait's id.
   */
  @Post('wait/{id}/ready')
  @Response<ErrorModel>(404, 'No session wait of that id')
  @Response<ErrorModel>(409, 'The wait is no longer pending')
  public async readyWait(@Path() cityName: string, @Path() id: string): Promise<WaitView> {
    return sessionWaitView(await this.city.waits.ready(id));
  }
}
