import type { WorkflowDepResponse } from './beads.js';

// Formulas (TOML recipes of steps) and what instantiating one makes: a molecule — a root bead and its step beads
// — which the API calls a run (`/runs/{run_id}`, the root bead's id) and a workflow (`/workflow/{workflow_id}`).

/** A variable a formula declares in `[vars]`. */
export interface FormulaVarDefResponse {
  name: string;
  /** `string` (every value is text). */
  type: string;
  description?: string;
  /** Its value when none is given. */
  default?: string;
  /** A run without it is refused (422). */
  required?: boolean;
  /** The only values it takes. */
  enum?: string[];
  /** A regular expression every value must match (whole value). */
  pattern?: string;
}

/** One step of a formula's compiled graph. */
export interface FormulaStepResponse {
  /** The step id; a loop's iterations are `<step>.iter<N>.<body step>`. */
  id: string;
  title: string;
  /** `step` (work for an agent), `group` (a step with children), `check` (a step's check or retry, run by the controller), `gate` (a wait), `finalize`. */
  kind: string;
  /** The bead type its bead gets (`task` unless the step says). */
  type?: string;
  assignee?: string;
  labels?: string[];
  metadata?: { [key: string]: string };
  description?: string;
  /** Ids of the steps it waits for. */
  needs?: string[];
}

export interface FormulaPreviewNodeResponse {
  id: string;
  title: string;
  kind: string;
  scope_ref?: string;
}

/** `from` waits for `to`. */
export interface FormulaPreviewEdgeResponse {
  from: string;
  to: string;
  kind?: string;
}

/** The graph a run of the formula would create, without creating anything. */
export interface FormulaPreviewResponse {
  nodes: FormulaPreviewNodeResponse[];
  edges: FormulaPreviewEdgeResponse[];
}

export interface FormulaRecentRunResponse {
  workflow_id: string;
  status: string;
  target: string;
  started_at: string;
  updated_at: string;
}

/** One formula in `GET /formulas`. */
export interface FormulaSummaryResponse {
  name: string;
  description: string;
  var_defs: FormulaVarDefResponse[];
  /** @isInt */
  run_count: number;
  recent_runs: FormulaRecentRunResponse[];
  /** The file it was read from, relative to the city. */
  source?: string;
  /** Why it cannot be run, when its file does not validate. */
  errors?: string[];
}

export interface FormulaListBody {
  /** By name. */
  items: FormulaSummaryResponse[];
  /**
   * Formulas in all.
   * @isInt
   */
  total: number;
  partial: boolean;
  partial_errors?: string[];
  /** Present when there are more; pass it back as `cursor`. */
  next_cursor?: string;
}

/** Body of `GET /formulas/{name}` and `POST /formulas/{name}/preview`. */
export interface FormulaDetailResponse {
  name: string;
  description: string;
  var_defs: FormulaVarDefResponse[];
  /** Its steps as compiled with the given (or default) vars, in an order that respects `needs`. */
  steps: FormulaStepResponse[];
  /** `from` waits for `to`. */
  deps: FormulaPreviewEdgeResponse[];
  preview: FormulaPreviewResponse;
  source?: string;
}

export interface FormulaSourceOutputBody {
  name: string;
  /** The raw TOML. */
  source: string;
}

export interface FormulaValidateOutputBody {
  valid: boolean;
  /** Every error, each naming the file, the step and the field at fault. */
  errors?: string[];
}

/** Body of `POST /formulas/{name}/preview`. */
export interface FormulaPreviewBody {
  /** The agent its steps would be routed to (or a bead id). */
  target?: string;
  vars?: { [key: string]: string };
  scope_kind?: string;
  scope_ref?: string;
}

export interface FormulaRunsResponse {
  formula: string;
  /** @isInt */
  run_count: number;
  recent_runs: FormulaRecentRunResponse[];
  partial: boolean;
  partial_errors?: string[];
}

/** One run or order firing in a feed (`/formulas/feed`, `/orders/feed`), newest first. */
export interface MonitorFeedItemResponse {
  id: string;
  /** `run` or `order`. */
  type: string;
  status: string;
  title: string;
  scope_kind: string;
  scope_ref: string;
  target: string;
  started_at: string;
  updated_at: string;
  root_bead_id?: string;
  workflow_id?: string;
  bead_id?: string;
  attached_bead_id?: string;
  detail_available?: boolean;
  run_detail_available?: boolean;
}

export interface FeedBody {
  /** Newest first. */
  items: MonitorFeedItemResponse[];
  partial: boolean;
  partial_errors?: string[];
  /** Present when there are more; pass it back as `cursor`. */
  next_cursor?: string;
}

/** A run's status, derived from its beads. */
export type RunStatus =
  'pending' | 'active' | 'waiting' | 'canceling' | 'completed' | 'failed' | 'canceled' | 'skipped';

/** A step's status, derived from its bead. */
export type RunStepStatus = 'pending' | 'active' | 'blocked' | 'completed' | 'failed' | 'skipped' | 'canceled';

export interface RunScope {
  kind?: string;
  ref?: string;
}

export interface RunLastError {
  /** `fail`, `skipped`, `canceled`. */
  code: string;
  message?: string;
}

/** A run: one molecule, named by its root bead's id. */
export interface Run {
  /** The root bead's id. */
  run_id: string;
  title: string;
  status: RunStatus;
  scope: RunScope;
  formula?: string;
  /** The agent its steps are routed to. */
  target?: string;
  started_at?: string;
  updated_at?: string;
  last_error?: RunLastError;
}

export interface RunStatusCounts {
  /** @isInt */
  pending: number;
  /** @isInt */
  active: number;
  /** @isInt */
  waiting: number;
  /** @isInt */
  canceling: number;
  /** @isInt */
  completed: number;
  /** @isInt */
  failed: number;
  /** @isInt */
  canceled: number;
  /** @isInt */
  skipped: number;
}

export interface RunsListOutputBody {
  /** Newest first. */
  runs: Run[];
  status_counts: RunStatusCounts;
  partial?: boolean;
  partial_errors?: string[];
}

export interface RunsCensusOutputBody {
  status_counts: RunStatusCounts;
  partial?: boolean;
  partial_errors?: string[];
}

export interface RunStep {
  /** The step's bead id. */
  id: string;
  title: string;
  status: RunStepStatus;
  /** `step`, `group`, `check`, `gate` or `finalize`. */
  kind?: string;
  assignee?: string;
  /** The step id in the formula. */
  step_ref?: string;
  /** @isInt */
  attempt?: number;
}

export interface RunStepsOutputBody {
  run_id: string;
  steps: RunStep[];
}

export interface RunCancelOutputBody {
  run_id: string;
  status: RunStatus;
  /**
   * The run's beads the cancel closed.
   * @isInt
   */
  closed: number;
}

/** A run launched by a sling or an order. */
export interface RunRef {
  /** `sling` or `order`. */
  kind: string;
  run_id: string;
  status: string;
}

export interface WorkflowBeadResponse {
  id: string;
  title: string;
  status: string;
  kind: string;
  metadata: { [key: string]: string };
  step_ref?: string;
  /** @isInt */
  attempt?: number;
  assignee?: string;
  logical_bead_id?: string;
  scope_ref?: string;
}

/** A step of the formula as written, in a run's snapshot. */
export interface LogicalNode {
  /** The formula step id (the beads' `step_ref`). */
  id: string;
  title: string;
  /** `step`, `gate` or `group`. */
  kind: string;
  /** The step's status; a step with a check is `completed` only once its check passed. */
  status: RunStepStatus;
  /** The beads it is made of: the step's own, then its check's. */
  bead_ids: string[];
  /** @isInt */
  attempt?: number;
  assignee?: string;
  /** The scope group (a group's id) it was written inside. */
  scope_group?: string;
}

/** A group of a run's snapshot: a step with children or a loop, and the logical nodes written inside it. */
export interface ScopeGroup {
  /** The group's step id (also its logical node's id). */
  id: string;
  title: string;
  status: RunStepStatus;
  /** The logical nodes written directly inside it (a nested group is one of them). */
  node_ids: string[];
  /** The group it is itself inside. */
  parent?: string;
}

/** Body of `GET /workflow/{workflow_id}`: every bead of the molecule and the edges among them. */
export interface WorkflowSnapshotResponse {
  workflow_id: string;
  root_bead_id: string;
  root_store_ref: string;
  resolved_root_store: string;
  scope_kind: string;
  scope_ref: string;
  beads: WorkflowBeadResponse[];
  deps: WorkflowDepResponse[];
  /**
   * The run as its formula was written: one node per step, gate or group, the controller's own beads folded in
   * (a step's check is part of its step; the finalize bead is the run's end, not a node).
   */
  logical_nodes: LogicalNode[];
  /** Order among the logical nodes: `from` waits for `to` (a group waiting for its own members is left out). */
  logical_edges: WorkflowDepResponse[];
  /** The groups (steps with children, loops): which logical nodes were written inside each. */
  scope_groups: ScopeGroup[];
  partial: boolean;
  stores_scanned: string[];
  /**
   * The seq of the last event that changed this run (one of its beads made, changed or closed): it grows only
   * when the run changes. With `index` set to it, the request waits until the run changes again.
   * @isInt
   */
  snapshot_version: number;
  /**
   * The city's last event when the snapshot was taken.
   * @isInt
   */
  snapshot_event_seq?: number;
}

export interface WorkflowDeleteResponse {
  workflow_id: string;
  /** @isInt */
  closed: number;
  /** @isInt */
  deleted: number;
  partial?: boolean;
  partial_errors?: string[];
}

/** The waits `GET /waits` lists: those in one state, or `all` (by default the open ones, `pending` and `ready`). */
export type WaitStateFilter = 'pending' | 'ready' | 'closed' | 'canceled' | 'failed' | 'all';

/** A wait: a `gate` bead of a molecule that holds its step until a time, a condition or a person. */
export interface WaitView {
  /** The gate bead's id. */
  id: string;
  /**
   * A session's wait (`deps`): the session waiting. A run's gate: the session of the agent the held step is routed
   * to (empty when none holds it yet).
   */
  session_id: string;
  session_name?: string;
  /** `deps` (a session waits for beads to close), or a run's gate: `timer`, `condition` or `human`. */
  kind: string;
  /**
   * `pending` (holding), `ready` (its condition is met, closing), `closed`; a session's wait also `canceled` or
   * `failed` (its session ended before its beads closed).
   */
  state: string;
  /** The bead's status (`open`, `closed`). */
  status: string;
  /** The steps it holds; for a session's wait, the beads it waits for. */
  dep_ids?: string[];
  /** `all`, or `any` (a session's wait that ends when any of its beads closes). */
  dep_mode?: string;
  /** When a timer gate opens (RFC 3339). */
  expires_at?: string;
  created_at?: string;
  labels?: string[];
  /** What it waits for, in words. */
  note?: string;
  /** The run it belongs to. */
  run_id?: string;
  /** A session's wait: the message it was nudged with, once it was. */
  nudge_id?: string;
  /** A session's wait: why it ended (its beads closed, canceled, its session gone). */
  reason?: string;
}

/** Body of `POST /session/{id}/wait`: the session waits for these beads to close, and is nudged when they have. */
export interface SessionWaitInputBody {
  /**
   * The beads to wait for.
   * @minItems 1
   */
  on_beads: string[];
  /** Nudge when any of them closes (default: when all have). */
  any?: boolean;
  /** What the session is reminded of when the wait is over. */
  note?: string;
}

/** Payload of `wait.*` events: a session's dependency wait registered, over (`ready`), canceled or failed. */
export interface WaitEventPayload {
  wait_id: string;
  session_id: string;
  dep_ids: string[];
  /** `all` or `any`. */
  dep_mode: string;
  /** Why it ended. */
  reason?: string;
  /** The message the session was nudged with (`wait.ready`). */
  nudge_id?: string;
}

export interface WaitListBody {
  /** Newest first. */
  waits: WaitView[];
  /** The list stopped at its cap (500). */
  capped: boolean;
  partial?: boolean;
  partial_errors?: string[];
}

/** Payload of `molecule.*` events. */
export interface MoleculeEventPayload {
  run_id: string;
  formula?: string;
  /** `pass`, `fail`, `canceled` (molecule.resolved). */
  outcome?: string;
  /** The step concerned (step events). */
  step?: string;
  bead_id?: string;
  /** @isInt */
  attempt?: number;
  reason?: string;
}

/** Body of `POST /formulas/{name}/cook`. */
export interface FormulaCookInputBody {
  vars?: { [key: string]: string };
  /** The run's title (default: the formula's description, else its name). */
  title?: string;
  /** The bead the run is for: `{{attached_bead_id}}` in the formula, closed when the run passes. */
  attached_bead_id?: string;
  /** Route its work steps to this agent (default: nobody; they wait in `GET /beads/ready`). */
  target?: string;
}

/** Body of `POST /formulas/{name}/cook`: the run made. */
export interface FormulaCookResponse {
  root_bead_id: string;
  workflow_id: string;
  run: RunRef;
  /**
   * Beads created: the steps, the finalize step and the root.
   * @isInt
   */
  created: number;
  /** Each step id's bead id. */
  beads: { [step: string]: string };
}
