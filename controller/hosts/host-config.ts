/** One `[[host]]` table of a city's configuration (or a pack's), as validated. */
export interface HostConfig {
  name: string;
  /** As written: `ssh://user@host[:port]`. */
  address: string;
  user: string;
  hostname: string;
  port: number;
  /** An absolute path (relative ones resolved against the city), readable by the controller. */
  identity_file?: string;
  /** An absolute path; without one, the controller's user's own known_hosts. Host keys are always checked. */
  known_hosts?: string;
  /** How many sessions may run there at once (default 1). */
  slots: number;
  labels: string[];
  /** Where worktrees, session files and ctl's own bundle live on the host (default `~/.ctl-work`). */
  work_root: string;
}

/** What a check of a host found. */
export interface HostProbe {
  /** It answered and has what ctl needs to run there (git; node is shipped). */
  ok: boolean;
  rtt_ms?: number;
  /** Of the Node ctl runs there (shipped by ctl). */
  node_version?: string;
  /** Of the ctl bundle there (shipped by ctl). */
  ctl_version?: string;
  /** Whether it has git and tmux (a tmux agent cannot be placed on a host without it). */
  git: boolean;
  tmux: boolean;
  /** Why it is not usable, for a person. */
  error?: string;
}
