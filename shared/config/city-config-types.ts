// The shapes of a city's configuration as `city.toml` declares them; city-config.ts reads them from TOML.

import type { ReviewConfig } from './review-config.js';

/**
 * One agent as `[[agent]]` in `city.toml` or `agents/<name>/agent.toml` declares it: a template the controller
 * keeps sessions of (between `min_active_sessions` and `max_active_sessions`) and routes work to.
 */
export interface CityAgentConfig {
  name: string;
  provider?: string;
  /** A rig (or directory under the city) the agent belongs to: it is then addressed `dir/name`. */
  dir?: string;
  /** Its sessions' working directory (relative to the city), when not `dir`. */
  work_dir?: string;
  scope?: string;
  suspended: boolean;
  description?: string;
  /** The text its sessions start with (from `prompt`, or the agent directory's `prompt.md` / `prompt.template.md`). */
  prompt?: string;
  /** The prompt is a template: `{{agent}}`, `{{city}}`, `{{rig}}`, `{{work_dir}}`, `{{session}}` are filled in. */
  prompt_is_template?: boolean;
  env: Record<string, string>;
  /**
   * Options its sessions start with over its provider's `option_defaults` (`model`, `effort`, …): each one its
   * provider offers, else the agent is unavailable saying which.
   */
  option_defaults?: Record<string, string>;
  min_active_sessions?: number;
  max_active_sessions?: number;
  /** A command printing how many sessions the agent needs now (an integer). */
  scale_check?: string;
  /** A command printing the agent's work, one item per line: each line is work that wakes or scales it. */
  work_query?: string;
  /** A session idle (no turn, no work) this long goes to sleep until work or mail wakes it. */
  idle_timeout_ms?: number;
  /** The reference's name for `idle_timeout` (used when that is unset); 0 (`off`): never. */
  sleep_after_idle_ms?: number;
  /** Shell commands run before each start of a session (in order; one failing: the session does not start). */
  pre_start?: string[];
  /** Shell commands run once a session's program is ready (a failure is reported; the session runs on). */
  session_setup?: string[];
  /** A script run after `session_setup` (relative to the file declaring the agent; `//` for the city's root). */
  session_setup_script?: string;
  /** Text given to a session when it starts and with each bead or mail it is told of. */
  nudge?: string;
  /** `resume` (the default): a wake resumes the provider's conversation; `fresh`: every start begins a new one. */
  wake_mode?: 'resume' | 'fresh';
  /** A session whose program has run this long restarts once idle (drained first). */
  max_session_age_ms?: number;
  /** Up to this much more, a different amount per session, so that a pool does not restart all at once. */
  max_session_age_jitter_ms?: number;
  /** How long a drain waits for a turn to finish before the session is stopped anyway (default 5 minutes). */
  drain_timeout_ms?: number;
  /** A directory whose files are copied into the work directory before each start, never over existing ones. */
  overlay_dir?: string;
  /**
   * The `overlay/` directories of the packs loaded at the city and in the agent's rig (absolute, lowest
   * precedence first), laid into the work directory like `overlay_dir`, which wins over them; set by compose.
   */
  pack_overlays?: string[];
  /**
   * What its pack's `[agent_defaults]` gives it (the nearest pack's value of each key, set by compose), and whether
   * it came under an import binding (`bound`: the pack's defaults then win over the city's, as in the reference).
   */
  pack_defaults?: { provider?: string; default_sling_formula?: string; append_fragments?: string[]; bound: boolean };
  /** Agents whose sessions must be running before this one's start. */
  depends_on: string[];
  default_sling_formula?: string;
  /**
   * `worktree`: each of its sessions works in its own git worktree of the agent's repository, on branch
   * `ctl/<agent>/<session name>` (the agent's directory must be in a git repository); `none` (the default): in
   * the directory itself.
   */
  isolation?: 'none' | 'worktree';
  /**
   * `direct`: when a bead finished in a session's worktree closes, its branch is fast-forwarded into the base
   * (never forced: a conflict reopens the bead); `review`: it is held for a person's review, and approving it
   * merges it as `direct` does (controller/reviews/); `push`: it is pushed to its rig's remote (`origin`, or the
   * rig's `remote`), each commit carrying the bead's `Ctl-Bead` trailer; `none` (the default): the branch is left
   * for a person.
   */
  merge?: 'none' | 'direct' | 'review' | 'push';
  /**
   * Where its sessions may run: `[[host]]` names or labels, `local` for this machine (the default). Each new
   * session is placed on the least used of them with a free slot (controller/hosts/placement.ts).
   */
  hosts?: string[];
  /** The branch its worktrees start from and merge into (default: the rig's `default_branch`, else the repository's). */
  base_branch?: string;
  /** The file it was declared in (`city.toml`, or `agents/<name>/agent.toml`), relative to the city. */
  source: string;
  /**
   * `fallback = true`: a definition for when nothing else defines its name. Compose drops it when a definition
   * of the same name that is not a fallback comes from another pack or the city (`fallback-agents.ts`).
   */
  fallback?: boolean;
  /** `pack-derived` for an agent an imported pack brings (named `binding.agent`); else the city's own. */
  origin?: 'inline' | 'pack-derived';
  /** The import binding it came through (`review`, or `outer.inner` for a pack a pack imports). */
  pack?: string;
  /** The pack directory its prompt and files live in (a pack-derived agent). */
  pack_dir?: string;
  /**
   * Prompt template fragments (`{{ define "name" }}` blocks of a `template-fragments/` directory) appended to its
   * prompt, after the city's `global_fragments`: `inject_fragments`, then `append_fragments`.
   */
  inject_fragments?: string[];
  append_fragments?: string[];
  /** The directory of its `agents/<name>/` (an agent declared by a directory). */
  home_dir?: string;
  /** What its prompt template is rendered with (set by the loader for a templated prompt). */
  prompt_parts?: PromptParts;
  /**
   * Why its prompt template is never rendered (set by the loader): a `define` that calls itself, or a render
   * past a bound (its size, its work, its nesting). Its sessions are refused (a 422) and the agent unavailable.
   */
  prompt_problem?: string;
}

/** What an agent's prompt template draws on, gathered when the configuration is composed. */
export interface PromptParts {
  /** The texts of the template fragment files it may call (`{{ template "name" . }}`), lowest priority first. */
  library: string[];
  /** The fragments appended to it: the city's `global_fragments`, then its `inject_fragments` and `append_fragments`. */
  append: string[];
  /** The values it reads that the configuration fixes (`.CityRoot`, `.RigRoot`, `.BindingPrefix`, …). */
  values: Record<string, string>;
}

/** `[imports.<binding>]`: a pack the city (or a rig) brings in. */
export interface PackImport {
  binding: string;
  /** A directory (used in place), or a git URL (`https://…`, `file://…`, `ssh://…`, `user@host:path`), with an optional `//subdir`. */
  source: string;
  /** A branch, a tag, `sha:<commit>`, or a semver range over the repository's tags (git sources). */
  version?: string;
  /** The file that declares it, relative to the city (`city.toml` or `pack.toml`). */
  file: string;
  /**
   * `export = true` in a pack's import: what it brings is the importing pack's own, named under the importer's
   * binding (`bd.dog`, not `bd.dolt.dog`) — a pack re-exporting a pack it is built on.
   */
  export?: boolean;
  /**
   * `transitive = false`: only the pack's own agents, formulas, orders, commands and overlay, none of the packs it
   * imports or includes (the reference's knob; the default loads them).
   */
  transitive?: boolean;
}

/** `[[patches.agent|provider|rig]]`: a change laid over what the city and its packs declare. */
export interface ConfigPatch {
  /** The agent (`base`, `binding.base`), provider or rig it changes. */
  name: string;
  /** An agent patch's rig (`dir`): it then changes `dir/name`. */
  dir?: string;
  /** The keys it sets, as written (`env` is merged). */
  fields: Record<string, unknown>;
  /** Where it is written, for a rig's (`overrides[0]`, `patches[1]`). */
  key?: string;
}

export interface CityPatches {
  agents: ConfigPatch[];
  providers: ConfigPatch[];
  rigs: ConfigPatch[];
}

export interface CityRigConfig {
  name: string;
  /** Its directory (relative to the city, or absolute). */
  path?: string;
  prefix?: string;
  default_branch?: string;
  /** The remote of its repository its sessions' branches are pushed to (`merge = "push"`); default `origin`. */
  remote?: string;
  suspended: boolean;
  /** `[rigs.imports.<binding>]`: packs whose rig-scoped agents run in this rig (`rig/binding.agent`). */
  imports?: PackImport[];
  /** `[rigs.formula_vars]`: values for the vars of formulas run for the rig's agents (a launch's own win). */
  formula_vars?: Record<string, string>;
  /** `includes`: pack directories taken in whole into the rig (the older form of its imports; bare agent names). */
  includes?: string[];
  /** `[[rigs.overrides]]` and `[[rigs.patches]]`: patches of the agents its packs bring (`name` is their `agent`). */
  overrides?: ConfigPatch[];
}

/** `[daemon]`: how the controller's tick runs. */
export interface CityDaemonConfig {
  /** A tick runs at least this often (besides every change that asks for one). */
  patrolIntervalMs: number;
  /** Session starts at most per tick. */
  maxWakesPerTick: number;
  /** Fast failures in a row after which a session is quarantined. */
  maxRestarts: number;
  /** A session that ran at least this long before it ended was not failing fast. */
  restartWindowMs: number;
  /** The first restart after a fast failure waits this long, doubling up to `restartBackoffMaxMs`. */
  restartBackoffMs: number;
  restartBackoffMaxMs: number;
  /** A `scale_check` or `work_query` command is stopped after this long. */
  checkTimeoutMs: number;
  /** A session quarantined for failing is let start again after this long (`[daemon] quarantine_duration`). */
  quarantineMs: number;
  /** An agent's `pre_start` or `session_setup` command is stopped after this long (`[session] setup_timeout`). */
  setupTimeoutMs: number;
  /**
   * `shutdown_timeout`: when the city stops, each session's program has this long after it is asked to end before
   * it is killed (0: killed at once). Absent: the controller's usual grace.
   */
  shutdownTimeoutMs?: number;
}

export const DEFAULT_DAEMON: CityDaemonConfig = {
  // The reference's default. The tick runs on every change anyway, and time-outs and back-offs set their own
  // timers; the patrol is a backstop, and each wake-up of an idle controller costs more than the tick itself.
  patrolIntervalMs: 30_000,
  maxWakesPerTick: 5,
  maxRestarts: 5,
  restartWindowMs: 60_000,
  restartBackoffMs: 1000,
  restartBackoffMaxMs: 60_000,
  checkTimeoutMs: 10_000,
  // The reference's defaults.
  quarantineMs: 5 * 60_000,
  setupTimeoutMs: 10_000,
};

/** A workspace service reachable through the raw `svc/<name>/…` proxy: a URL, or a program the controller runs. */
export interface CityServiceConfig {
  name: string;
  /** `http://127.0.0.1:<port>` (loopback only): a service somebody else runs. */
  url?: string;
  /** A program the controller runs (`sh -c`), in its own process group, stopped with the city. */
  command?: string;
  /** The TCP port it listens on (127.0.0.1); 0 or absent with no `socket`: a free one, given as `$PORT`. */
  port?: number;
  /** A Unix socket it listens on instead (relative to the city's `.ctl/services/`), given as `$CTL_SERVICE_SOCKET`. */
  socket?: string;
  /** A path answered with 2xx once it is up (and while it stays healthy). */
  health?: string;
  /** How often a running service is probed (default 5 s); three failures in a row restart it. */
  healthIntervalMs?: number;
  /** Its working directory (relative to the city). */
  dir?: string;
  env: Record<string, string>;
  /** `[[service]]` from `pack.toml` of an imported pack, else the city's. */
  pack?: string;
}

/** `[[orders.overrides]]`: a change to one order (`enable`/`disable` write `enabled`). */
export interface CityOrderOverride {
  name: string;
  /** A rig's instance of it; `*` for every rig. */
  rig?: string;
  enabled?: boolean;
  /** Any other key the order file has (`interval`, `schedule`, `timeout`, `pool`, …), as written. */
  fields: Record<string, unknown>;
}

/** `[orders]`. */
export interface CityOrdersConfig {
  overrides: CityOrderOverride[];
  /** Orders left out altogether. */
  skip: string[];
  /** No order's `timeout` is longer. */
  maxTimeoutMs?: number;
  /** The time zone of cron schedules without their own `tz` (default: the machine's). */
  timezone?: string;
}

/** What this product reads from a city's `city.toml`. */
export interface CityConfig {
  workspace: {
    name?: string;
    provider?: string;
    startCommand?: string;
    prefix?: string;
    suspended: boolean;
    /**
     * `includes`: packs the city takes in whole, the reference's older form of imports — local directories,
     * relative to the city; their agents, orders and commands keep their own names (no binding).
     */
    includes: string[];
    /** `global_fragments`: prompt template fragments appended to every templated prompt of the city. */
    globalFragments: string[];
  };
  providers: Record<string, Record<string, unknown>>;
  agents: CityAgentConfig[];
  rigs: CityRigConfig[];
  services: CityServiceConfig[];
  daemon: CityDaemonConfig;
  orders: CityOrdersConfig;
  /** `[imports.<binding>]` of `city.toml` (those of the city's `pack.toml` are added by the loader). */
  imports: PackImport[];
  /** `[defaults.rig.imports.<binding>]`: packs every rig imports. */
  rigDefaultImports: PackImport[];
  patches: CityPatches;
  /** `[agent_defaults]`: keys every agent has unless it sets them itself. */
  agentDefaults: Record<string, unknown>;
  /** `[extmsg] allowed_callback_hosts`: hosts besides loopback adapters' callback URLs may name. */
  extmsgCallbackHosts: string[];
  /** `[[pricing]]`: what a provider's tokens cost, per provider (the city's price wins over what it reports). */
  pricing: PricingEntry[];
  /** `[maintenance] interval`: bead store maintenance runs this often (none when absent). */
  maintenanceIntervalMs?: number;
  /** `[events] rotation_max_bytes`: rotate the event log once it reaches this size. */
  eventsRotationMaxBytes?: number;
  /** `[events] max_archives`: how many rotated archives of the event log are kept (the oldest go first). */
  eventsMaxArchives?: number;
  /** `[review]`: the merge queue's check (absent in configurations not read from a file: no check). */
  review?: ReviewConfig;
  /** `[beads] backend`: `sqlite` (the default) or `journal`. */
  beadsBackend?: 'sqlite' | 'journal';
  /** The file as parsed, every key of it: what the controller audits for keys it does not act on. */
  document?: Record<string, unknown>;
}

/** One `[[pricing]]` table: a provider's prices in US dollars per million tokens. */
export interface PricingEntry {
  provider: string;
  input: number;
  output: number;
  cache_read: number;
  cache_creation: number;
}
