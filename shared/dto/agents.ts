import type { RunRef } from './formulas.js';
import type { SessionUsageTotals } from './sessions.js';

/** The session an agent is seen through: its running one, else its latest. */
export interface SessionInfo {
  /** The session's name (`<agent>-<n>`). */
  name: string;
  /** Someone has its stream open. */
  attached: boolean;
  /** @format date-time */
  last_activity?: string;
}

/**
 * An agent, as configured and as it is doing now. `state` is derived, never stored: `suspended` (the agent, its
 * rig or the city) > `quarantined` (a session failed fast too often) > `stopped` (no session running) >
 * `working` (it holds a bead and was active in the last 10 minutes) > `waiting` (it holds a bead, no recent
 * activity) > `idle`.
 */
export interface AgentResponse {
  /** `base`, or `dir/base` for an agent of a rig. */
  name: string;
  running: boolean;
  suspended: boolean;
  /** Always false until packs exist: every agent comes from the city's own files. */
  pack_derived: boolean;
  state: 'suspended' | 'quarantined' | 'stopped' | 'working' | 'waiting' | 'idle';
  /** It can run: its provider exists and its `depends_on` names agents without a circle. */
  available: boolean;
  unavailable_reason?: string;
  /**
   * Why a session it wants cannot be placed on any host of its `hosts` (each host down, full, not checked yet,
   * without tmux for a tmux agent, or naming nothing), as the last tick found; it starts once one can take it.
   */
  unplaceable_reason?: string;
  display_name?: string;
  description?: string;
  provider?: string;
  rig?: string;
  /** The agent's name when it is a pool (more than one session, or a `scale_check`). */
  pool?: string;
  /** `in-turn` or `idle`, of its running session. */
  activity?: string;
  /** The bead its session is working on. */
  active_bead?: string;
  last_output?: string;
  session?: SessionInfo;
  /** Where it is declared: `city.toml` or `agents/<name>/agent.toml`. */
  source: string;
  /** @isInt */
  min_active_sessions: number;
  /** @isInt */
  max_active_sessions: number;
  /**
   * Its open sessions (running or asleep).
   * @isInt
   */
  session_count: number;
  /** Ready beads routed to it and not yet taken. @isInt */
  queued_work: number;
  /** Its configuration changed while a session was busy or attached: that session restarts once idle. */
  restart_pending: boolean;
  /** Why it does not start a session it wants (a dependency not running, a back-off after failures). */
  wait_reason?: string;
  /** Its `option_defaults` (over its provider's): what its sessions start with. */
  option_defaults?: { [key: string]: string };
  /** The model of the session it is seen through: as reported, else as chosen for it. */
  model?: string;
  /**
   * Its session's context as of its last turn: tokens the model read, against the model's window.
   * @isInt
   */
  context_pct?: number;
  /** @isInt */
  context_window?: number;
  /** Tokens over its open sessions' turns. */
  usage?: SessionUsageTotals;
}

export interface ListBodyAgentResponse {
  items: AgentResponse[];
  /** @isInt */
  total: number;
  next_cursor?: string;
}

/** Body of `POST /v0/city/{cityName}/agents`: an `[[agent]]` table added to `city.toml`. */
export interface AgentCreateInputBody {
  /**
   * Agent name.
   * @minLength 1
   * @pattern ^[a-zA-Z0-9][a-zA-Z0-9._-]*$
   */
  name: string;
  /**
   * Provider name.
   * @minLength 1
   */
  provider: string;
  /** The rig (directory of the city) it belongs to; it is then addressed `dir/name`. */
  dir?: string;
  scope?: string;
  description?: string;
  /** The text its sessions start with. */
  prompt?: string;
  /** @isInt @minimum 0 */
  min_active_sessions?: number;
  /** @isInt @minimum 1 */
  max_active_sessions?: number;
  /** A duration (`30s`, `5m`): an idle session sleeps after it. */
  idle_timeout?: string;
  depends_on?: string[];
  suspended?: boolean;
  /**
   * Options its sessions start with over its provider's `option_defaults` (`model`, `effort`, …): each one the
   * provider offers, else a 422 naming it.
   */
  option_defaults?: { [key: string]: string };
}

export interface AgentCreatedOutputBody {
  /** `created`. */
  status: string;
  /** The created agent's name. */
  agent: string;
}

/** Body of `PATCH …/agent/{base}`: the fields changed in its `[[agent]]` table (or `agent.toml`). */
export interface AgentUpdateInputBody {
  provider?: string;
  scope?: string;
  suspended?: boolean;
  description?: string;
  /** @isInt @minimum 0 */
  min_active_sessions?: number;
  /** @isInt @minimum 1 */
  max_active_sessions?: number;
  /** A duration (`30s`, `5m`); empty removes it. */
  idle_timeout?: string;
  /**
   * Options its sessions start with (`model`, `effort`, …), merged key by key into what it has; `null` removes
   * them all. Each must be one its provider offers (a 422 naming it otherwise). Its sessions restart on them.
   */
  option_defaults?: { [key: string]: string } | null;
}

/** One turn of an agent's conversation. */
export interface OutputTurn {
  /** `user`, `assistant` or `system`. */
  role: string;
  text: string;
  /** @format date-time */
  timestamp?: string;
}

export interface OutputPaginationInfo {
  has_older_messages: boolean;
  /** @isInt */
  total_message_count: number;
  /** @isInt */
  returned_message_count: number;
  /** Always 0: our transcripts are never compacted. @isInt */
  total_compactions: number;
}

/** An agent's conversation, from its running session's transcript (else its latest session's). */
export interface AgentOutputResponse {
  agent: string;
  /** `conversation`. */
  format: string;
  /** The session the turns come from. */
  session_id?: string;
  turns: OutputTurn[];
  pagination?: OutputPaginationInfo;
}

/** Body of `POST /v0/city/{cityName}/sling`: route work (a bead, several, a convoy's open members, text) to a target. */
export interface SlingInputBody {
  /**
   * Who takes it: an agent (or pool), `name` or `dir/name` (with `rig`, a bare name is that rig's agent); or an
   * open session (its id, name or alias), which is handed the bead at once and told.
   * @minLength 1
   */
  target: string;
  /** The bead to route; a convoy routes each of its open members. */
  bead?: string;
  /** Several beads routed at once, with one convoy tracking them all (not with `bead` or `text`). */
  beads?: string[];
  /**
   * Free text that becomes a new task bead (its first line the title, all of it the description), routed as
   * `bead` would be (not with `bead`, `beads` or `formula`).
   */
  text?: string;
  /** A formula to run: its work steps are routed to the target (with `vars`); the answer names the new run. */
  formula?: string;
  /** The formula's vars. */
  vars?: { [key: string]: string };
  /** The bead the formula's run is for (`{{attached_bead_id}}`; closed when the run passes). Default: `bead`. */
  attached_bead_id?: string;
  /** The convoy's (or the run's) title. */
  title?: string;
  /** The rig the target is in: a bare target names that rig's agent (`rig/target`); a qualified one must agree. */
  rig?: string;
  /**
   * How the bead's work gets into its base branch, stamped on each routed bead as `merge_strategy` and told to the
   * session: `direct` (its worktree branch merged into the base when the bead closes), `local` (the branch stays,
   * unmerged, for a person), `review` (the branch held for a person's review, merged once approved), `push` (the branch pushed to the rig's
   * remote when the bead closes, its commits carrying the bead's `Ctl-Bead` trailer), or `mr` (the session opens a
   * merge request; ctl merges nothing).
   */
  merge?: 'direct' | 'review' | 'push' | 'mr' | 'local';
  /** Do not create a convoy for the routed bead. */
  no_convoy?: boolean;
  /** Mark the convoy created for the work as owned: it is not closed by itself when its last bead closes. */
  owned?: boolean;
  /** Suppress the target's `default_sling_formula`. */
  no_formula?: boolean;
  /** Clear the bead's assignee before routing, so the target can take it. */
  reassign?: boolean;
  /** Route even a closed bead (it is reopened). */
  force?: boolean;
}

export interface SlingResponse {
  /** `slung`. */
  status: string;
  /** The agent routed to (for a session target: the session's agent). */
  target: string;
  /** The session handed the work, when the target was a session. */
  session_id?: string;
  /** The bead routed (for a convoy: the convoy; for text: the bead made of it). */
  bead?: string;
  /**
   * `direct` (one bead), `batch` (several), `convoy` (its members), `session` (handed to a session), or `formula`
   * (a run of a formula, maybe the agent's default).
   */
  mode: string;
  /** The beads routed to the target (a run's work steps). */
  routed: string[];
  /** The bead made of `text`. */
  created_bead?: string;
  /** The convoy tracking the routed work (created unless `no_convoy`, or the convoy slung); for a formula, its run. */
  workflow_id?: string;
  /** The formula run. */
  formula?: string;
  /** The run's root bead (its run id). */
  root_bead_id?: string;
  attached_bead_id?: string;
  /** The convoy created for the slung bead when a formula wraps it. */
  convoy_id?: string;
  run?: RunRef;
  warnings?: string[];
}

/** Body of `PATCH /v0/city/{cityName}`. */
export interface CityPatchInputBody {
  /** Suspend every agent of the city (sessions drain, then stop), or resume them. */
  suspended?: boolean;
}

/** Payload of `bead.dead_assignee_reopened`: work held by a session that is gone went back to open. */
export interface BeadDeadAssigneeReopenedPayload {
  bead_id: string;
  /** The session name that held it. */
  dead_assignee?: string;
  /** The agent it stays routed to. */
  routed_to?: string;
}

/**
 * `GET …/agent-suspension/{base}`: whether the agent is to be suspended (its desired state, as its config says),
 * and the token a conditional change names.
 */
export interface AgentSuspensionResponse {
  /** The agent's qualified name (`base`, or `dir/base` for a rig's agent). */
  agent: string;
  /** `suspended = true` in its config: its sessions finish their turn, then stop, and none starts. */
  suspended: boolean;
  /**
   * A digest of the agent as it is now (SHA-256 of the canonical JSON of its identity, resolved definition and
   * raw config): any change to the agent — a suspend or resume, an edit, a provider it uses changed — changes it.
   */
  token: string;
}

/** Body of `PUT …/agent-suspension/{base}`: the desired state, if the agent is still as it was read. */
export interface AgentSuspensionInputBody {
  /**
   * The `token` read with the agent's suspension: a change to the agent since then is a 409.
   * @minLength 1
   */
  expected_token: string;
  /** Suspend (true) or resume (false) the agent. */
  suspended: boolean;
}

/** Answer to `PUT …/agent-suspension/{base}`. */
export interface AgentSuspensionUpdateResponse extends AgentSuspensionResponse {
  /** The agent was in that state already: nothing was written (and the token was not needed). */
  already_desired: boolean;
}

/** Payload of `agent.*` events. */
export interface AgentEventPayload {
  agent: string;
  reason?: string;
}

/** One key or table a configuration file has that ctl does not act on. */
export interface ConfigIgnoredKey {
  /** The file, relative to the city (`pack:review/pack.toml` for a pack's). */
  file: string;
  /** Where in it, dotted (`session.provider`). */
  key?: string;
  message: string;
}

/**
 * Payload of `config.unsupported`: what the configuration as loaded says that ctl does not act on — reference
 * keys it does not support and unknown keys — recorded when the configuration loads, again only when it changes.
 */
export interface ConfigUnsupportedPayload {
  unsupported: ConfigIgnoredKey[];
  unknown: ConfigIgnoredKey[];
}

/** Payload of `config.reloaded` and `config.reload_failed`. */
export interface ConfigReloadPayload {
  /** What changed on disk (a file relative to the city), when known. */
  file?: string;
  /** Why the files were not taken (the last good configuration stays). */
  error?: string;
}
