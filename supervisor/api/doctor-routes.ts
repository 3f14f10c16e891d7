import { Controller, Get, Route, Tags } from '@tsoa/runtime';
import type { DoctorReport } from '../../shared/dto/doctor.js';
import { machineChecks } from '../../shared/machine-doctor.js';
import { report, runChecks } from '../../shared/doctor.js';
import type { SupervisorServices } from './ioc.js';

@Route('v0')
@Tags('Doctor')
export class DoctorRoutes extends Controller {
  constructor(private readonly services: SupervisorServices) {
    super();
  }

  /**
   * Checks what breaks ctl on this machine, each with a stable id, `ok`/`warn`/`fail`, what it found and how to fix
   * it: the supervisor's Node version, `$CTL_HOME` writable and its disk space, the supervisor's event log size,
   * and each registered city — its directory there and its controller running (unless it was stopped). A city's
   * own checks are `GET /v0/city/{cityName}/doctor`. Changes nothing.
   * @summary Check the machine
   */
  @Get('doctor')
  public async check(): Promise<DoctorReport> {
    const checks = machineChecks(this.services.paths, this.services.cities.list());
    return report('machine', await runChecks(checks, false));
  }
}
