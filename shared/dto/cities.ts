/** Accepted bootstrap profiles; `kubernetes` and `kubernetes-cell` are aliases of `k8s-cell`. */
export type BootstrapProfile = 'k8s-cell' | 'kubernetes' | 'kubernetes-cell' | 'single-host-compat';

/** Body of `POST /v0/city`. Exactly one of `provider` and `start_command` is required. */
export interface CityCreateRequest {
  /**
   * Directory to create the city in: absolute, or relative to the supervisor user's home.
   * @minLength 1
   */
  dir: string;
  /**
   * Provider preset for the city's default session template (`claude`, `codex`, `gemini`, …). Its command-line tool
   * must be installed. Mutually exclusive with `start_command`.
   * @minLength 1
   */
  provider?: string;
  /**
   * Custom workspace start command for the city's default session template. Mutually exclusive with `provider`.
   * @minLength 1
   */
  start_command?: string;
  /** Optional bootstrap profile; changes only the city's `[api]` defaults. */
  bootstrap_profile?: BootstrapProfile;
}

/** Body of `POST /v0/cities/register`: attach an existing city directory to the supervisor. */
export interface CityRegisterRequest {
  /**
   * Absolute path of a directory holding `city.toml`.
   * @minLength 1
   */
  path: string;
  /**
   * Name to register the city under; defaults to `[workspace] name` in `city.toml`, else the directory name.
   * @pattern ^[a-zA-Z0-9][a-zA-Z0-9._-]*$
   */
  name?: string;
}

/** A managed city as the supervisor sees it. */
export interface CityInfo {
  /** Registered city name. */
  name: string;
  /** Absolute city directory. */
  path: string;
  /** True once the city's controller is ready; per-city routes answer only then. */
  running: boolean;
  /**
   * Absent while running. Otherwise the controller's startup phase (`starting`, `loading_config`,
   * `opening_event_log`, `starting_bead_store`, `starting_agents`, `starting_api`), or `stopped`, `stopping`,
   * `restarting` (after a crash), `init_failed` (it has never started), `locked` (another process holds the
   * city's lock), `directory_missing` (its directory is gone: the controller is stopped until it is back;
   * unregister still works).
   */
  status?: string;
  /** The last start-up or crash error, when there was one. */
  error?: string;
  /** Startup phases completed before the current `status`, in order. */
  phases_completed?: string[];
  /**
   * Process id of the city's controller, when one runs.
   * @isInt
   */
  pid?: number;
}

/** Body of `GET /v0/cities`. */
export interface SupervisorCitiesOutputBody {
  /** The page's cities, sorted by name. */
  items: CityInfo[];
  /**
   * Number of registered cities.
   * @isInt
   */
  total: number;
  /** Present when more cities follow; pass it back as `cursor`. */
  next_cursor?: string;
}

/** Body of `GET /v0/city/{cityName}`. */
export interface CityGetResponse {
  name: string;
  path: string;
  /** Whether the city is suspended. */
  suspended: boolean;
  /**
   * Seconds since the city's controller started.
   * @isInt
   */
  uptime_sec: number;
  /**
   * Agents configured in `city.toml`.
   * @isInt
   */
  agent_count: number;
  /**
   * Rigs configured in `city.toml`.
   * @isInt
   */
  rig_count: number;
  /** `[workspace] provider`. */
  provider?: string;
  /** `[workspace] start_command`. */
  start_command?: string;
  /** Server version. */
  version?: string;
}
