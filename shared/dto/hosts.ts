/**
 * `up`: its last check answered and it has what ctl needs; `down`: it did not (`last_error` says why);
 * `unknown`: not checked yet since it was configured (or its configuration changed).
 */
export type HostState = 'up' | 'down' | 'unknown';

/** A machine sessions run on: `local` (this one) or a `[[host]]` of city.toml or a pack, as last checked. */
export interface HostResponse {
  /** `local`, or the `[[host]]` table's name. */
  name: string;
  /** `ssh://user@host[:port]`; `local` for this machine. */
  address: string;
  state: HostState;
  /**
   * How many sessions may run there at once; null for `local`, which has no limit of its own (an agent's
   * `max_active_sessions` is its limit).
   * @isInt
   */
  slots: number | null;
  /**
   * Its sessions whose program runs or is starting there.
   * @isInt
   */
  used: number;
  labels: string[];
  /** Where ctl keeps worktrees, session files and its bundle there (a `[[host]]`). */
  work_root?: string;
  /** The file declaring it (`city.toml`, `pack:<binding>/pack.toml`). */
  source?: string;
  /**
   * How long its last check took to answer, in milliseconds.
   * @isInt
   */
  rtt_ms?: number;
  /** Of the Node ctl runs there (ctl ships it). */
  node_version?: string;
  /** Of the ctl bundle there (ctl ships it). */
  ctl_version?: string;
  /** Whether its last check found git (worktrees need it). */
  git?: boolean;
  /** Whether its last check found tmux (a tmux agent is placed only where it is). */
  tmux?: boolean;
  /** Why it is `down`, for a person (an unreachable address, a host key that does not match, git missing). */
  last_error?: string;
  /** @format date-time */
  checked_at?: string;
}

export interface ListBodyHostResponse {
  items: HostResponse[];
  /** @isInt */
  total: number;
  /** The cursor of the next page, when there is one. */
  next_cursor?: string;
}

/** Payload of `host.up` and `host.down`: recorded when a host's state changes, not at every check. */
export interface HostEventPayload {
  host: string;
  address: string;
  /** `host.down`: why. */
  reason?: string;
  /** @isInt */
  rtt_ms?: number;
}
