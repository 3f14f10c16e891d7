/** `[workspace]` of a city's config. */
export interface ConfigWorkspace {
  /** Effective city name (the registered one). */
  name: string;
  /** `[workspace] name` as written in `city.toml`, when it is written there. */
  declared_name?: string;
  suspended: boolean;
  prefix?: string;
  provider?: string;
  start_command?: string;
}

export interface ConfigAgent {
  name: string;
  suspended: boolean;
  dir?: string;
  provider?: string;
  scope?: string;
  /** More than one session, or a `scale_check`. */
  is_pool: boolean;
  /** `city.toml`, or `agents/<name>/agent.toml`. */
  source: string;
}

/** One problem `GET /config/validate` found. */
export interface ConfigIssue {
  /** The file at fault, relative to the city. */
  file: string;
  /** What is at fault (`agent.worker`, `providers.x`), when one thing is. */
  key?: string;
  message: string;
}

/** Body of `GET /v0/city/{cityName}/config/validate`. */
export interface ConfigValidateOutputBody {
  /** The files on disk load, and every agent can run. */
  valid: boolean;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

export interface ConfigRig {
  name: string;
  suspended: boolean;
  prefix?: string;
}

export interface ConfigService {
  name: string;
  /** Upstream the raw proxy `svc/<name>/…` forwards to. */
  url: string;
}

export interface ConfigPatchCounts {
  /** @isInt */
  agent_count: number;
  /** @isInt */
  provider_count: number;
  /** @isInt */
  rig_count: number;
}

/** Body of `GET /v0/city/{cityName}/config`: the city's `city.toml`, as the controller read it. */
export interface ConfigResponse {
  workspace: ConfigWorkspace;
  agents: ConfigAgent[];
  rigs: ConfigRig[];
  /** `[providers.<name>]` tables, as written. */
  providers: { [name: string]: { [key: string]: unknown } };
  services: ConfigService[];
  patches: ConfigPatchCounts;
}
