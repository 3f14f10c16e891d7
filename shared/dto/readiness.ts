/** Probe result for one provider or tool. */
export interface ReadinessItem {
  /** Item name, e.g. `claude`, `github_cli`. */
  name: string;
  /** `provider` or `tool`. */
  kind: string;
  /** Human name, e.g. `Claude Code`. */
  display_name: string;
  /** `configured`, `needs_auth`, `not_installed`, `invalid_configuration` or `probe_error`. */
  status: string;
  /** What the probe found. */
  detail?: string;
}

/** Body of `GET /v0/readiness`. */
export interface ReadinessResponse {
  items: { [name: string]: ReadinessItem };
}

export interface ProviderReadiness {
  display_name: string;
  /** `configured`, `needs_auth`, `not_installed`, `invalid_configuration` or `probe_error`. */
  status: string;
  detail?: string;
}

/** Body of `GET /v0/provider-readiness`. */
export interface ProviderReadinessResponse {
  providers: { [name: string]: ProviderReadiness };
}
