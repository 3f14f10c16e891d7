// Orders: `orders/<name>.toml` — a trigger (cooldown, cron, condition, event, manual, webhook) and an action (a
// shell command, or a formula run routed to a pool), each firing tracked by a bead.

/** One order. */
export interface OrderResponse {
  name: string;
  /** `name` (city orders), or `name:rig:<rig>` for the instance a rig's pack brings in (one per rig). */
  scoped_name: string;
  /** `rig`: a rig-imported pack's order runs once per importing rig; `city`: once. */
  scope?: string;
  /** `exec` or `formula`. */
  type: string;
  /** `cooldown`, `cron`, `condition`, `event`, `manual` or `webhook`. */
  trigger?: string;
  description?: string;
  /** Cooldown: the interval between firings (`1h`). */
  interval?: string;
  /** Cron: five fields (minute hour day-of-month month day-of-week). */
  schedule?: string;
  /** Cron: its time zone (IANA), when not the machine's. */
  tz?: string;
  /** Condition: the check command (exit 0 = due). */
  check?: string;
  check_timeout?: string;
  /** @isInt */
  check_timeout_ms?: number;
  /** Event: the event type it fires on. */
  on?: string;
  formula?: string;
  exec?: string;
  /** Formula: the agent its run is routed to. */
  pool?: string;
  /** The rig this instance runs for (its commands run in the rig's directory). */
  rig?: string;
  /** A webhook order: where it takes deliveries. */
  webhook?: OrderWebhookView;
  timeout?: string;
  /** @isInt */
  timeout_ms: number;
  enabled: boolean;
  /** A firing may start while an earlier one is still open. */
  idempotent?: boolean;
  /** Output of `exec` is kept on its tracking bead. */
  capture_output: boolean;
  env?: { [key: string]: string };
  /** The file, relative to the city. */
  source?: string;
  /** Written in `city.toml` `[[orders.overrides]]` (enable/disable). */
  overridden?: boolean;
}

/** Where a webhook order takes deliveries (`POST {path}` on the webhook listener) and how they are signed. */
export interface OrderWebhookView {
  /** `/hooks/{city}/{scoped name}`, on the webhook listener (`[webhooks] listen` of supervisor.toml). */
  path: string;
  /** The header carrying the body's HMAC-SHA256 (`sha256=<hex>`, hex or base64). */
  signature_header: string;
  /** The environment variable holding the secret; absent: the order takes no deliveries until it names one. */
  secret_env?: string;
}

export interface OrderListBody {
  orders: OrderResponse[];
  /** Order files that could not be read, each with why; the others run. */
  errors?: string[];
}

export interface OrderCheckResponse {
  name: string;
  scoped_name: string;
  /** The rig this instance runs for. */
  rig?: string;
  due: boolean;
  /** Why it is due or not (`never run`, `cooldown: 59m52s remaining`, `disabled`, `open work: <bead>`, …). */
  reason: string;
  /** When it last fired (RFC 3339). */
  last_run?: string;
  /** `success`, `failed`, `running` or `dispatched`. */
  last_run_outcome?: string;
  /** When it is next due, when that is known (cooldown, cron). */
  next_due?: string;
}

export interface OrderCheckListBody {
  checks: OrderCheckResponse[];
  /** Order files that could not be read, each with why. */
  errors?: string[];
}

/** One firing of an order, from its tracking bead. */
export interface OrderHistoryEntry {
  /** The tracking bead. */
  bead_id: string;
  store_ref: string;
  name: string;
  scoped_name: string;
  rig?: string;
  created_at: string;
  labels: string[];
  /** `running`, `success`, `failed` or `dispatched` (a formula run started). */
  status?: string;
  duration_ms?: string;
  exit_code?: string;
  signal?: string;
  error?: string;
  /** The run a formula order started. */
  wisp_root_id?: string;
  capture_output: boolean;
  has_output: boolean;
  /** What fired it: `cooldown`, `cron`, `condition`, `event`, `manual`, `webhook`. */
  trigger?: string;
}

export interface OrderHistoryListBody {
  /** Newest first. */
  entries: OrderHistoryEntry[];
}

export interface OrderHistoryDetailResponse {
  bead_id: string;
  store_ref: string;
  created_at: string;
  labels: string[];
  /** The command's output (stdout and stderr as they came; the last 64 KiB). */
  output: string;
  exit_code?: string;
  duration_ms?: string;
  error?: string;
}

/** Body of `POST /order/{name}/run`. */
export interface OrderRunInputBody {
  /** Vars for a formula order's run; for an `exec` order, environment variables `CTL_ORDER_ARG_<NAME>`. */
  vars?: { [key: string]: string };
}

export interface OrderRunOutputBody {
  /** `dispatched`. */
  status: string;
  scoped_name?: string;
  /** The tracking bead of this firing. */
  tracking_id?: string;
}

/** Payload of `order.fired`, `order.completed` and `order.failed`. */
export interface OrderEventPayload {
  order: string;
  scoped_name: string;
  /** The rig the instance runs for. */
  rig?: string;
  /** The tracking bead. */
  tracking_id: string;
  trigger?: string;
  /** @isInt */
  exit_code?: number;
  signal?: string;
  /** @isInt */
  duration_ms?: number;
  error?: string;
  /** The run a formula order started. */
  run_id?: string;
}
