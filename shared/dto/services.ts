/** A workspace service as `GET /services` shows it (the reference's `Status`, plus what a program service has). */
export interface ServiceStatus {
  service_name: string;
  /** `url`: somebody else runs it; `program`: the controller runs it. */
  kind: 'url' | 'program';
  /** Where it is reached through the city: `/v0/city/<city>/svc/<name>`. */
  mount_path: string;
  /** Its files under the city (its log, its socket): `.ctl/services/<name>`. */
  state_root: string;
  /**
   * `starting` (started, not yet answering its health check), `running`, `unhealthy` (its health check fails),
   * `backoff` (it exited; restarts at `next_start_at`), `stopped`. A URL service is probed the same way (its
   * `health` path, else a connection): `external` until the first probe answers, then `running` or `unhealthy`.
   */
  local_state: 'starting' | 'running' | 'unhealthy' | 'backoff' | 'stopped' | 'external';
  /** The same as local_state (the reference's field). */
  state: string;
  /** Services are reached through the city's API only (its access rule applies). */
  publication_state: 'private';
  /**
   * `private`, as the reference means it: a request that may change state (not GET, HEAD, OPTIONS) needs the
   * `X-CTL-Request` header; there is no direct (unguarded) publication.
   */
  publish_mode: 'private';
  allow_websockets: boolean;
  /** When its state last changed. */
  updated_at: string;
  /** What the proxy forwards to (`http://127.0.0.1:<port>`, or `unix:<socket>`). */
  url?: string;
  command?: string;
  /** @isInt */
  pid?: number;
  /** @isInt */
  port?: number;
  socket?: string;
  health_path?: string;
  /** Why it is not running, or how it last ended. */
  reason?: string;
  /**
   * A program service: times the controller restarted it. A URL service: times it came back after being down
   * (its runner's restarts, as seen from here).
   * @isInt
   */
  restarts: number;
  next_start_at?: string;
  /** Its output, appended (a program service). */
  log_path?: string;
  pack?: string;
}

export interface ListBodyServiceStatus {
  items: ServiceStatus[];
  /** @isInt */
  total: number;
  /** The cursor of the next page, when there is one. */
  next_cursor?: string;
}

/** Body of `POST /service/{name}/restart`. */
export interface ServiceRestartOutputBody {
  service: string;
  action: 'restart';
  status: 'restarting';
}

/** Payload of `service.started`, `service.ready`, `service.exited`, `service.stopped`. */
export interface ServiceEventPayload {
  service: string;
  /** @isInt */
  pid?: number;
  /** @isInt */
  port?: number;
  socket?: string;
  /** @isInt */
  exit_code?: number;
  signal?: string;
  /** Why it ended or was restarted. */
  reason?: string;
  /** @isInt */
  restart_in_ms?: number;
}
