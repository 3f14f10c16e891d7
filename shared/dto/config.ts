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
  /** `city.toml`, `agents/<name>/agent.toml`, or `pack:<binding>/…` for an agent an imported pack brings. */
  source: string;
  /** `inline` (the city's own) or `pack-derived`. */
  origin: 'inline' | 'pack-derived';
  /** The import binding of a pack-derived agent. */
  pack?: string;
}

/** One problem `GET /config/validate` found. */
export interface ConfigIssue {
  /** The file at fault, relative to the city. */
  file: string;
  /** What is at fault (`agent.worker`, `providers.x`), when one thing is. */
  key?: string;
  message: string;
  /**
   * The line of a syntax error (1-based).
   * @isInt
   */
  line?: number;
  /**
   * Its column (1-based).
   * @isInt
   */
  column?: number;
  /** That line of the file, and a caret under the column on the next. */
  excerpt?: string;
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
  path?: string;
  suspended: boolean;
  prefix?: string;
  default_branch?: string;
}

export interface ConfigService {
  name: string;
  /** `url`: somebody else runs it; `program`: the controller runs `command`. */
  kind: 'url' | 'program';
  /** Upstream the raw proxy `svc/<name>/…` forwards to (a `url` service). */
  url?: string;
  /** What the controller runs (a `program` service). */
  command?: string;
  /** The import binding of a service a pack brings. */
  pack?: string;
}

export interface ConfigPatchCounts {
  /** @isInt */
  agent_count: number;
  /** @isInt */
  provider_count: number;
  /** @isInt */
  rig_count: number;
}

/** One import of the composed configuration (direct, nested, or a rig's). */
export interface ConfigPack {
  /** `review`; `review.lint` for a pack a pack imports; `web/review` for a rig's import. */
  binding: string;
  source: string;
  version?: string;
  git_backed: boolean;
  /** The commit `packs.lock` pins (git-backed packs). */
  commit?: string;
  /** Why it is left out (not fetched, missing, broken), when it is. */
  error?: string;
}

/** Body of `GET /v0/city/{cityName}/config`: the city's configuration as composed and in use. */
export interface ConfigResponse {
  workspace: ConfigWorkspace;
  agents: ConfigAgent[];
  rigs: ConfigRig[];
  /** `[providers.<name>]` tables, as written. */
  providers: { [name: string]: { [key: string]: unknown } };
  services: ConfigService[];
  patches: ConfigPatchCounts;
  /** Every import the configuration is composed from. */
  packs: ConfigPack[];
}

/** An agent with where it came from, as `GET /config/explain` lists it. */
export interface AnnotatedAgentResponse {
  /** Its qualified name (`base`, `binding.base`, `rig/base`). */
  name: string;
  dir?: string;
  provider?: string;
  scope?: string;
  is_pool: boolean;
  suspended: boolean;
  origin: 'inline' | 'pack-derived';
  /** The file it is declared in. */
  source: string;
  pack?: string;
  /** A `[[patches.agent]]` changed it. */
  patched: boolean;
  /** Declared `fallback = true`: used because no definition of its name that is not a fallback is composed. */
  fallback?: boolean;
  /** The definitions of its name that compose left out for this one (each a fallback), and why. */
  replaced?: ReplacedAgentDefinition[];
}

/** A definition of an agent left out of the composed configuration for another of the same name. */
export interface ReplacedAgentDefinition {
  /** The file it is declared in. */
  source: string;
  /** The import binding it came through. */
  pack?: string;
  reason: string;
}

/** A provider with where it came from. */
export interface AnnotatedProviderResponse {
  /** `builtin` (a preset), `city` (the city's own), `builtin+city` (a preset the city's table changes), `pack-derived`. */
  origin: 'builtin' | 'city' | 'builtin+city' | 'pack-derived';
  display_name?: string;
  command?: string;
  args?: string[];
  env?: { [key: string]: string };
  prompt_mode?: string;
  prompt_flag?: string;
  /** @isInt */
  ready_delay_ms?: number;
  protocol?: string;
  /** A `[[patches.provider]]` changed it. */
  patched: boolean;
}

export interface ConfigExplainPatches {
  /** @isInt */
  agents: number;
  /** @isInt */
  providers: number;
  /** @isInt */
  rigs: number;
}

/** Body of `GET /v0/city/{cityName}/config/explain`. */
export interface ConfigExplainResponse {
  agents: AnnotatedAgentResponse[];
  providers: { [name: string]: AnnotatedProviderResponse };
  patches: ConfigExplainPatches;
  packs: ConfigPack[];
}
