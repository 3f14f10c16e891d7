// Bead store maintenance: giving back the space deleted and superseded data holds (SQLite: VACUUM and a WAL
// checkpoint; the journal store: folding its journal into a snapshot).

/** One maintenance run. */
export interface MaintenanceRunBody {
  /** RFC 3339; also the run's identifier. */
  started_at: string;
  finished_at?: string;
  /** @isInt */
  duration_ms?: number;
  /** `manual` (the API) or `scheduled` (`[maintenance] interval`). */
  trigger: string;
  /** `succeeded` or `failed`. */
  outcome: string;
  /** What it ran, in order. */
  operations?: string[];
  /**
   * The store's files before and after, in bytes.
   * @isInt
   */
  before_bytes?: number;
  /** @isInt */
  after_bytes?: number;
  /** @isInt */
  reclaimed_bytes?: number;
  error?: string;
}

/** One file of the bead store. */
export interface StoreFileBody {
  path: string;
  /** @isInt */
  bytes: number;
}

/** Body of `GET /v0/city/{cityName}/maintenance/status`. */
export interface MaintenanceStatusBody {
  /** A schedule is configured (`[maintenance] interval` in city.toml). */
  enabled: boolean;
  /**
   * The schedule's interval in seconds (0: none).
   * @isInt
   */
  interval_seconds: number;
  in_flight: boolean;
  in_flight_start?: string;
  /** Recent runs, oldest first (at most 20). */
  history: MaintenanceRunBody[];
  last_run?: MaintenanceRunBody;
  next_scheduled?: string;
  /** `sqlite` or `journal`. */
  backend: string;
  files: StoreFileBody[];
  /** @isInt */
  total_bytes: number;
  /** @isInt */
  beads: number;
}

/** Body of `POST /v0/city/{cityName}/maintenance/compact`. */
export interface MaintenanceTriggerBody {
  /** It started (202), or ran (200 with `wait=true`). */
  accepted: boolean;
  started_at?: string;
  /** The run, with `wait=true`. */
  run?: MaintenanceRunBody;
}

/** Payload of `ctl.store.maintenance.done` and `ctl.store.maintenance.failed`. */
export interface StoreMaintenancePayload {
  run: MaintenanceRunBody;
}
