/** What a check found: `ok`, `warn` (runs, but worth a look) or `fail` (breaks the city or the machine's ctl). */
export type DoctorStatus = 'ok' | 'warn' | 'fail';

/** One check of `ctl doctor`. */
export interface DoctorCheck {
  /**
   * Stable: scripts may match on it. `node.version`, `home.disk`, `city.events.size`, `provider.claude`,
   * `program.tmux`, `city.orphans`, `pack.<binding>.<check>` …
   */
  id: string;
  status: DoctorStatus;
  /** What it found, in a line. */
  message: string;
  /** How to fix it, when it is not ok. */
  fix?: string;
  /** Whether `ctl doctor --fix` (`POST …/doctor/fix`) can fix it safely by itself. */
  fixable: boolean;
  /** What the fix did, when one ran (the check then ran again: `status` is after the fix). */
  fixed?: string;
  /** More lines (a pack check's output after its first line). */
  details?: string[];
}

/** The checks of one scope: the machine (`GET /v0/doctor`) or one city (`GET /v0/city/{cityName}/doctor`). */
export interface DoctorReport {
  /** `machine` or `city`. */
  scope: 'machine' | 'city';
  /** The city's name, for a city's checks. */
  city?: string;
  /** True when no check fails (warnings allowed). */
  ok: boolean;
  checks: DoctorCheck[];
}
