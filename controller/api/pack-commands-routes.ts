import { Body, Controller, Get, Path, Post, Query, Response, Route, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  PackCommandListBody,
  PackCommandRunInputBody,
  PackCommandRunResponse,
} from '../../shared/dto/pack-commands.js';
import type { CityRuntime } from '../city-runtime.js';
import { PackCommands } from '../packs/pack-command-runner.js';
import { pageOf } from './list-page.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Packs')
export class PackCommandsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The commands the city's packs offer (`[[commands]]` of a pack.toml, and its `commands/<words>/run.sh`
   * directories), each under the binding its pack's agents are named under: what `ctl <binding> <command>` runs.
   * @summary List pack commands
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('commands')
  @Response<ErrorModel>(400, 'Invalid cursor')
  @Response<ErrorModel>(422, 'Invalid limit')
  public listPackCommands(
    @Path('cityName') _cityName: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): PackCommandListBody {
    return pageOf(new PackCommands(this.city).list(), (c) => `${c.binding} ${c.command}`, 'pc', limit, cursor);
  }

  /**
   * Runs a pack command: its script, with the rest of `argv` as its arguments, in the city's directory, as the
   * controller's child in its own process group (`CTL_CITY`, `CTL_CITY_PATH` and `CTL_PACK_DIR` in its
   * environment, and the reference's `GC_CITY`, `GC_CITY_PATH`, `GC_PACK_DIR`), killed with everything it started
   * at its time-out or when the city stops. Answers when it ends, with its exit status and its output (stdout and
   * stderr as they came); a command that fails is still a 200 — its `exit_code` says so.
   * @summary Run a pack command
   */
  @Post('commands/run')
  @Response<ErrorModel>(404, 'No pack offers that command under that binding (`command-not-found`)')
  @Response<ErrorModel>(422, 'A bad time-out')
  public async runPackCommand(
    @Path('cityName') _cityName: string,
    @Body() body: PackCommandRunInputBody,
  ): Promise<PackCommandRunResponse> {
    return new PackCommands(this.city).run(body);
  }
}
