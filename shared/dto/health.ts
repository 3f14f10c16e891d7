/** Reconciler liveness, so that a wedged reconciler shows in `/health`. */
export interface ReconcilerHealth {
  /**
   * Milliseconds since the reconciler last finished a pass.
   * @isInt
   */
  last_tick_age_ms: number;
  /**
   * Passes completed since the supervisor started.
   * @isInt
   */
  ticks: number;
  /**
   * Configured period of the periodic pass.
   * @isInt
   */
  interval_ms: number;
  /** False when the last pass is older than three periods. */
  healthy: boolean;
}

/** Body of `GET /health` (supervisor). */
export interface SupervisorHealthOutputBody {
  /** `ok`, or `degraded` when the reconciler is not keeping up. */
  status: string;
  /** Supervisor version. */
  version: string;
  /**
   * Supervisor uptime in seconds.
   * @isInt
   */
  uptime_sec: number;
  /**
   * Registered cities.
   * @isInt
   */
  cities_total: number;
  /**
   * Cities whose controller is ready.
   * @isInt
   */
  cities_running: number;
  /**
   * Supervisor process id.
   * @isInt
   */
  pid: number;
  /** The supervisor's home directory (`$CTL_HOME`). */
  home: string;
  reconciler: ReconcilerHealth;
}

/** Body of `GET /v0/city/{cityName}/health` (controller). */
export interface HealthOutputBody {
  /** `ok`. */
  status: string;
  /**
   * Controller uptime in seconds.
   * @isInt
   */
  uptime_sec: number;
  /** Controller version. */
  version?: string;
  /** City name. */
  city?: string;
  /** Absolute city directory. */
  path?: string;
  /**
   * Controller process id.
   * @isInt
   */
  pid?: number;
}

/** Agent counts of a city. */
export interface StatusAgentCounts {
  /** @isInt */
  total: number;
  /** @isInt */
  running: number;
  /** @isInt */
  suspended: number;
  /** @isInt */
  quarantined: number;
}

export interface StatusRigCounts {
  /** @isInt */
  total: number;
  /** @isInt */
  suspended: number;
}

/** Work beads (not mail, convoys, other containers or bookkeeping) by state. */
export interface StatusWorkCounts {
  /**
   * Work in progress.
   * @isInt
   */
  in_progress: number;
  /**
   * Open work with nothing blocking it and not deferred: what `GET …/beads/ready` lists.
   * @isInt
   */
  ready: number;
  /**
   * Open work, ready or not.
   * @isInt
   */
  open: number;
}

/** Mail in the city, every recipient and rig. */
export interface StatusMailCounts {
  /**
   * Messages not yet read (nor archived).
   * @isInt
   */
  unread: number;
  /**
   * Messages not archived.
   * @isInt
   */
  total: number;
}

/** Body of `GET /v0/city/{cityName}/status`. */
export interface StatusBody {
  name: string;
  path: string;
  /**
   * Controller uptime in seconds.
   * @isInt
   */
  uptime_sec: number;
  suspended: boolean;
  /**
   * Agents configured (deprecated; use `agents.total`).
   * @isInt
   */
  agent_count: number;
  /**
   * Rigs configured (deprecated; use `rigs.total`).
   * @isInt
   */
  rig_count: number;
  /**
   * Number of running agent processes.
   * @isInt
   */
  running: number;
  agents: StatusAgentCounts;
  rigs: StatusRigCounts;
  /** The city's work by status (absent with `lite`). */
  work?: StatusWorkCounts;
  /** The city's mail (absent with `lite`). */
  mail?: StatusMailCounts;
  /** Controller version. */
  version?: string;
  /**
   * The city event log's head seq.
   * @isInt
   */
  event_head?: number;
  /** The controller's tick: how often it ran and how long it takes. */
  tick?: StatusTick;
  /** The order scheduler's evaluations (which orders are due): how often they ran and how long they take. */
  orders?: StatusTick;
  /**
   * Why the configuration files on disk are not what the city uses, when the last edit could not be taken (a
   * syntax error, an unknown provider): the last good configuration stays in use until the files are fixed.
   */
  config_reload_error?: string;
}

/** Runs of something periodic (the tick, the order scheduler), over its last 256 runs. */
export interface StatusTick {
  /** @isInt */
  runs: number;
  last_ms: number;
  p50_ms: number;
  p99_ms: number;
  /**
   * How long ago the last tick ran.
   * @isInt
   */
  last_run_age_ms: number;
}
