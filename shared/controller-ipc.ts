// What a controller tells the supervisor that spawned it, over the Node IPC channel. A controller run by
// hand has no channel and sends nothing; everything here is also visible through its HTTP API.

export type ControllerMessage =
  /** Entered a startup phase; `completed` lists the phases before it. */
  | { kind: 'phase'; phase: string; completed: string[] }
  /** Serving the API: the city is running. */
  | { kind: 'ready'; pid: number }
  /** Startup failed; the controller exits right after. */
  | { kind: 'failed'; error: string }
  /**
   * How long its sessions' programs get to end when it stops (`[daemon] shutdown_timeout`), sent when it is ready
   * and whenever the configuration changes it: the supervisor waits that long, and a margin, before it kills it.
   */
  | { kind: 'stop-grace'; ms: number };

/** What a stopping controller needs besides its sessions' grace: to record its stop and let go of its files. */
export const CONTROLLER_STOP_MARGIN_MS = 3_000;

/** Exit status of a controller that found its city's lock held by another (EX_TEMPFAIL): not a crash. */
export const CITY_LOCKED_EXIT_CODE = 75;

/** The controller's startup phases, in order. */
export const CONTROLLER_PHASES = [
  'loading_config',
  'opening_event_log',
  'starting_bead_store',
  'starting_agents',
  'starting_api',
] as const;

/** Contents of `<city>/.ctl/controller.pid`, written by the controller for a later supervisor to find it. */
export interface ControllerPidFile {
  pid: number;
  name: string;
  socket: string;
  started_at: string;
}
