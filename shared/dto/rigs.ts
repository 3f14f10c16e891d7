// Rigs: the project repositories (directories) a city's agents work in, declared as `[[rigs]]` in city.toml.

/** A rig's git working tree, read with the machine's `git`. */
export interface GitStatus {
  /** The checked-out branch (absent on a detached HEAD). */
  branch?: string;
  /** The commit checked out. */
  head?: string;
  /** Nothing changed and nothing untracked. */
  clean: boolean;
  /**
   * Commits ahead of and behind its upstream (0 without one).
   * @isInt
   */
  ahead: number;
  /** @isInt */
  behind: number;
  upstream?: string;
  /** Paths changed, staged or untracked. */
  changed_files: string[];
  /** Why it could not be read (not a git repository, …); the other fields are then empty. */
  error?: string;
}

export interface RigResponse {
  name: string;
  /** Its directory, absolute. */
  path: string;
  suspended: boolean;
  /**
   * Agents of the rig (their `dir` names it).
   * @isInt
   */
  agent_count: number;
  /**
   * Of those, agents with a running session.
   * @isInt
   */
  running_count: number;
  prefix?: string;
  default_branch?: string;
  /** With `git=true`. */
  git?: GitStatus;
  /** The directory exists. */
  present: boolean;
}

export interface ListBodyRigResponse {
  items: RigResponse[];
  /** @isInt */
  total: number;
  next_cursor?: string;
}

/** Body of `POST /v0/city/{cityName}/rigs`. */
export interface RigCreateInputBody {
  /**
   * The rig's name (letters, digits, `.`, `_`, `-`).
   * @pattern ^[a-zA-Z0-9][a-zA-Z0-9._-]*$
   */
  name: string;
  /** An existing directory (absolute, or relative to the city). */
  path: string;
  prefix?: string;
  default_branch?: string;
}

/** Body of `PATCH /v0/city/{cityName}/rig/{name}`: absent fields stay as they are. */
export interface RigUpdateInputBody {
  path?: string;
  prefix?: string;
  default_branch?: string;
  suspended?: boolean;
}
