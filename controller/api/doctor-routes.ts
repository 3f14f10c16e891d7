import { Controller, Get, Path, Post, Route, Tags } from '@tsoa/runtime';
import type { DoctorReport } from '../../shared/dto/doctor.js';
import type { CityRuntime } from '../city-runtime.js';
import { cityDoctor } from '../doctor/city-doctor.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Doctor')
export class DoctorRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * Checks what breaks this city in practice, each with a stable id, `ok`/`warn`/`fail`, what it found and how to
   * fix it: its directories writable, disk space, the event log's size, each provider its agents use installed and
   * signed in (where a credentials file or the program says so offline), tmux and git where the configuration
   * needs them, programs a controller left running (`.ctl/groups`), imports against `packs.lock`, program
   * services' ports, the Node version — and each pack's own `[[doctor]]` checks (run in their own process group,
   * bounded in time; exit 0 ok, 1 warn, else fail, the first line of output the message). Changes nothing.
   * @summary Check the city
   */
  @Get('doctor')
  public async check(@Path('cityName') _cityName: string): Promise<DoctorReport> {
    return cityDoctor(this.city, false);
  }

  /**
   * Runs the checks, then the safe fixes of those that offer one (`fixable`: ending programs a controller left
   * running, removing stale `.ctl/groups` records, dropping `packs.lock` entries no import names), then those checks
   * again: each fixed check says what its fix did in `fixed`.
   * @summary Check the city and fix what is safe to fix
   */
  @Post('doctor/fix')
  public async fix(@Path('cityName') _cityName: string): Promise<DoctorReport> {
    return cityDoctor(this.city, true);
  }
}
