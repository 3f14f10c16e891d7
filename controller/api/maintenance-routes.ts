import { Controller, Get, Path, Post, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { MaintenanceStatusBody, MaintenanceTriggerBody } from '../../shared/dto/maintenance.js';
import type { CityRuntime } from '../city-runtime.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Maintenance')
export class MaintenanceRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Compacts the city's bead store: gives back the space deleted and superseded data holds. SQLite: expired
   * idempotency keys deleted, a WAL checkpoint, VACUUM, `PRAGMA optimize`; the journal store: its journal folded
   * into a new snapshot. The store is held while it runs (VACUUM's time grows with the store's size). Answers 202
   * at once (`started_at` names the run), or 200 with the run once it is done with `wait=true`;
   * `ctl.store.maintenance.done` (or `.failed`) records the outcome. One run at a time: 409 while one runs.
   * (The reference's `POST /maintenance/dolt-gc` is its own store's collector; this is ours.)
   * @summary Compact the bead store
   * @param wait Answer once the run is done, with it.
   */
  @Post('maintenance/compact')
  @SuccessResponse(202, 'Accepted')
  @Response<MaintenanceTriggerBody>(200, 'Done (wait=true)')
  @Response<ErrorModel>(409, 'A run is in progress (`operation-in-progress`)')
  public async compact(@Path() cityName: string, @Query() wait?: boolean): Promise<MaintenanceTriggerBody> {
    const { startedAt, done } = this.city.maintenance.start('manual');
    if (wait) {
      const run = await done;
      this.setStatus(200);
      return { accepted: true, started_at: startedAt, run };
    }
    this.setStatus(202);
    return { accepted: true, started_at: startedAt };
  }

  /**
   * The bead store's files and their sizes, whether a run is in progress, the schedule, and the last runs.
   * @summary Bead store maintenance status
   */
  @Get('maintenance/status')
  public async status(@Path('cityName') _cityName: string): Promise<MaintenanceStatusBody> {
    return this.city.maintenance.status();
  }
}
