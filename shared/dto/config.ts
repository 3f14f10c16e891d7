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
