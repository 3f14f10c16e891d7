import { Controller, Get, Path, Post, Query, Response, Route, Tags } from '@tsoa/runtime';
import { pageOf } from './list-page.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type { HostResponse, ListBodyHostResponse } from '../../shared/dto/hosts.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityRuntime } from '../city-runtime.js';

/**
 * @param cityName City name.
 * @param name Host name (`local`, or a `[[host]]` table's name).
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Hosts')
export class HostsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The machines the city's sessions run on: `local` (this machine: always `up`, no slot limit of its own) first,
   * then each `[[host]]` of city.toml and of the packs loaded at the city, in the configuration's order, with its
   * state as last checked (`up`, `down` with `last_error`, `unknown` before its first check), its slots and how
   * many of them its sessions use, its round trip and versions. Hosts are checked every 30 s.
   * @summary List hosts
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('hosts')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public listHosts(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyHostResponse {
    return pageOf(this.city.hosts.list(), (h) => h.name, 'host', limit, cursor);
  }

  /**
   * @summary Get a host
   */
  @Get('hosts/{name}')
  @Response<ErrorModel>(404, 'No such host (`host-not-found`)')
  public getHost(@Path('cityName') _cityName: string, @Path() name: string): HostResponse {
    const host = this.city.hosts.status(name);
    if (!host) throw notFound(name);
    return host;
  }

  /**
   * Checks the host now (joining a check under way) and answers what it found: `up`, or `down` with why in
   * `last_error` (an address that does not answer, a host key that does not match, a key refused, git missing).
   * Bounded in time: a host that does not answer is `down`, never a request that hangs. Records `host.up` or
   * `host.down` when its state changed.
   * @summary Check a host
   */
  @Post('hosts/{name}/check')
  @Response<ErrorModel>(404, 'No such host (`host-not-found`)')
  public async checkHost(@Path('cityName') _cityName: string, @Path() name: string): Promise<HostResponse> {
    const host = await this.city.hosts.check(name);
    if (!host) throw notFound(name);
    return host;
  }
}

function notFound(name: string): Problem {
  return new Problem('host-not-found', `not_found: host not found: ${name} (ctl host list names the city's hosts)`);
}
