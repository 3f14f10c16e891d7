import { existsSync } from 'node:fs';
import type { CityInfo } from './dto/cities.js';
import { bytes, diskCheck, logSizeCheck, nodeCheck, writableCheck, type Check } from './doctor.js';
import type { HomePaths } from './paths.js';

/** Where the supervisor's own event log is worth a look: it is not rotated. */
const SUPERVISOR_LOG_WARN_BYTES = 512 * 1024 * 1024;

/** The supervisor's checks of the machine: what every city on it depends on. */
export function machineChecks(paths: HomePaths, cities: CityInfo[]): Check[] {
  return [
    nodeCheck(),
    writableCheck('home.dir', paths.home, '$CTL_HOME'),
    diskCheck('home.disk', paths.home, '$CTL_HOME'),
    logSizeCheck(
      'home.events.size',
      paths.events,
      SUPERVISOR_LOG_WARN_BYTES,
      `it is not rotated; worth a look past ${bytes(SUPERVISOR_LOG_WARN_BYTES)}`,
      'it is never rotated: ctl supervisor stop, move $CTL_HOME/events.jsonl aside, ctl supervisor start',
    ),
    ...cities.map((city) => cityCheck(city)),
  ];
}

/** A registered city: its directory there, its controller running unless it was stopped. */
function cityCheck(city: CityInfo): Check {
  return {
    id: `city.${city.name}`,
    run: () => {
      if (city.status === 'directory_missing' || !existsSync(city.path)) {
        return {
          status: 'fail',
          message: `city ${city.name}: its directory ${city.path} is gone`,
          fix: `put it back, or ctl city unregister ${city.name}`,
        };
      }
      if (city.running) return { status: 'ok', message: `city ${city.name} runs (pid ${city.pid ?? '?'})` };
      if (city.status === 'stopped' || city.status === 'stopping') {
        return { status: 'ok', message: `city ${city.name} is stopped` };
      }
      return {
        status: city.status === 'init_failed' || city.status === 'locked' ? 'fail' : 'warn',
        message: `city ${city.name} is ${city.status ?? 'not running'}${city.error ? `: ${city.error}` : ''}`,
        fix: `see ${city.path}/.ctl/controller.log; ctl city start ${city.name} once it is fixed`,
      };
    },
  };
}
