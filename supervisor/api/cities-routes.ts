import { Body, Controller, Get, Path, Post, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type {
  CityCreateRequest,
  CityInfo,
  CityRegisterRequest,
  SupervisorCitiesOutputBody,
} from '../../shared/dto/cities.js';
import type { AsyncAcceptedResponse } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import type { SupervisorServices } from './ioc.js';

@Route('v0')
@Tags('Cities')
export class CitiesRoutes extends Controller {
  constructor(private readonly services: SupervisorServices) {
    super();
  }

  /**
   * The registered cities, sorted by name, in pages: running ones with `running=true`; others with the
   * controller's startup phase (`starting`, `loading_config`, …) or `stopped`, `restarting`, `init_failed` in
   * `status`.
   * @summary List cities
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('cities')
  @Response<ErrorModel>(400, 'Invalid `cursor`')
  @Response<ErrorModel>(422, 'Invalid `limit`')
  public listCities(@Query() limit?: number, @Query() cursor?: string): SupervisorCitiesOutputBody {
    const after = cursor !== undefined && cursor !== '' ? decodeCityCursor(cursor) : undefined;
    const all = this.services.cities.list();
    const rest = after === undefined ? all : all.filter((city) => city.name > after);
    const items = rest.slice(0, limit || DEFAULT_PAGE);
    const body: SupervisorCitiesOutputBody = { items, total: all.length };
    if (rest.length > items.length) body.next_cursor = encodeCityCursor(items.at(-1)!);
    return body;
  }

  /**
   * Scaffolds the city directory (`city.toml`, `.ctl/`, an empty `.ctl/events.jsonl`), registers it and records
   * `city.created` before answering 202; the reconciler then starts its controller and records exactly one
   * `request.result.city.create` or `request.failed` whose `payload.request_id` is the returned `request_id`.
   * The returned `event_cursor` includes the new city as `<name>:0`.
   * @summary Create a city (asynchronous)
   */
  @Post('city')
  @SuccessResponse(202, 'Accepted')
  @Response<ErrorModel>(409, 'The directory already holds a city, the name is taken, or a create is in progress')
  @Response<ErrorModel>(
    422,
    'Invalid body: unknown field, neither or both of provider and start_command, unknown provider, or a directory ' +
      'a city may not be in; the `detail` names the rule (`system_directory`, `ctl_home`, `inside_city`, ' +
      '`contains_city`, `not_a_directory`, `dangling_symlink`, `symlink_loop`, `not_accessible`, `not_writable`, ' +
      '`too_long`, `unresponsive`)',
  )
  @Response<ErrorModel>(503, "The provider's command-line tool is not installed or not signed in")
  public async createCity(@Body() body: CityCreateRequest): Promise<AsyncAcceptedResponse> {
    const accepted = await this.services.cities.create(body);
    this.setStatus(202);
    return accepted;
  }

  /**
   * Attaches an existing city directory (one holding `city.toml`) and starts its controller; `201` when newly
   * registered (or renamed), `200` when it was already registered under that name. Records `city.registered`.
   * The directory's contents are not changed, except that `.ctl/` is created when missing.
   * @summary Register an existing city
   */
  @Post('cities/register')
  @SuccessResponse(201, 'Registered')
  @Response<CityInfo>(200, 'Already registered under this name')
  @Response<ErrorModel>(409, 'The name is registered for another directory, or an operation is in progress')
  @Response<ErrorModel>(
    422,
    'Not an absolute path, no city.toml, invalid city.toml, an invalid name, or a directory a city may not be in',
  )
  public async registerCity(@Body() body: CityRegisterRequest): Promise<CityInfo> {
    const { created, city } = await this.services.cities.register(body);
    this.setStatus(created ? 201 : 200);
    return city;
  }

  /**
   * Records `city.unregister_requested`, removes the city from the registry and answers 202; the reconciler
   * stops its controller and records `request.result.city.unregister` (or `request.failed`). The directory is
   * left exactly as it was; `ctl register` attaches it again.
   * @summary Unregister a city (asynchronous)
   */
  @Post('city/{cityName}/unregister')
  @SuccessResponse(202, 'Accepted')
  @Response<ErrorModel>(404, 'The city is not registered')
  @Response<ErrorModel>(409, 'An operation is already in progress for this city')
  public async unregisterCity(@Path() cityName: string): Promise<AsyncAcceptedResponse> {
    const accepted = await this.services.cities.unregister(cityName);
    this.setStatus(202);
    return accepted;
  }

  /**
   * Stops the city's controller (and everything it started) and keeps the city registered with `running=false`,
   * `status=stopped`, across supervisor restarts, until `POST …/start`. Answers once the controller is gone.
   * @summary Stop a city
   */
  @Post('city/{cityName}/stop')
  @Response<ErrorModel>(404, 'The city is not registered')
  @Response<ErrorModel>(504, 'The controller did not stop in time')
  public async stopCity(@Path() cityName: string): Promise<CityInfo> {
    return this.services.cities.stop(cityName);
  }

  /**
   * Starts a stopped city (or one waiting out a crash back-off) and answers once it is running.
   * @summary Start a city
   */
  @Post('city/{cityName}/start')
  @Response<ErrorModel>(404, 'The city is not registered')
  @Response<ErrorModel>(503, 'The controller failed to start (`start_failed: …`)')
  @Response<ErrorModel>(504, 'The controller did not become ready in time')
  public async startCity(@Path() cityName: string): Promise<CityInfo> {
    return this.services.cities.start(cityName);
  }
}

const DEFAULT_PAGE = 100;

/** A city page token: `v1:` + base64url of {"k":"cn","n":<name>}, the last city of the page (names sort). */
function encodeCityCursor(city: CityInfo): string {
  return encodeToken('cn', { n: city.name });
}

function decodeCityCursor(token: string): string {
  const { n } = decodeToken(token, 'cn');
  if (typeof n !== 'string' || n === '') throw invalidToken();
  return n;
}
