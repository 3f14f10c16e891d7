import { Controller, Get, Path, Post, Query, Response, Route, Tags } from '@tsoa/runtime';
import { pageOf } from './list-page.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { ListBodyServiceStatus, ServiceRestartOutputBody, ServiceStatus } from '../../shared/dto/services.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityRuntime } from '../city-runtime.js';

/**
 * @param cityName City name.
 * @param name Service name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Services')
export class ServicesRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's workspace services (`[[service]]` of city.toml and of imported packs), reached through
   * `/v0/city/{cityName}/svc/<name>/…`: a URL somebody else runs (`external`), or a program the controller runs,
   * with its state (`starting`, `running`, `unhealthy`, `backoff` with when it starts again, `stopped`), pid,
   * port or socket, restarts, and why it last ended.
   * @summary List services
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('services')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public listServices(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyServiceStatus {
    const page = pageOf(this.city.config.services, (s) => s.name, 'svc', limit, cursor);
    return { ...page, items: page.items.map((s) => this.city.services.status(s)) };
  }

  /**
   * @summary Get a service
   */
  @Get('service/{name}')
  @Response<ErrorModel>(404, 'No such service (`service-not-found`)')
  public getService(@Path('cityName') _cityName: string, @Path() name: string): ServiceStatus {
    return this.city.services.status(this.service(name));
  }

  /**
   * Restarts a program service: its process group is ended (SIGTERM, then SIGKILL after 3 s) and it starts again
   * at once, its back-off forgotten. Records `service.exited` then `service.started`; `service.ready` follows
   * once it answers its health check.
   * @summary Restart a service
   */
  @Post('service/{name}/restart')
  @Response<ErrorModel>(404, 'No such service (`service-not-found`)')
  @Response<ErrorModel>(409, 'A URL service: somebody else runs it')
  public restartService(@Path('cityName') _cityName: string, @Path() name: string): ServiceRestartOutputBody {
    const service = this.service(name);
    if (service.command === undefined) {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: service ${name} is a URL (${service.url}); ctl does not run it`,
      );
    }
    this.city.services.restart(name);
    return { service: name, action: 'restart', status: 'restarting' };
  }

  private service(name: string) {
    const service = this.city.config.services.find((s) => s.name === name);
    if (!service) throw new Problem('service-not-found', `not_found: service not found: ${name}`);
    return service;
  }
}
