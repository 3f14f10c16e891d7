// Rigs: the project repositories (directories) a city's agents work in, declared as `[[rigs]]` in city.toml.
import type { SessionWorktree } from './sessions.js';

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
  /** With `git=true`: the worktrees of its open sessions (agents with `isolation = "worktree"`), each branch's state. */
  worktrees?: RigSessionWorktree[];
  /** The directory exists. */
  present: boolean;
}

/** An open session's worktree of a rig. */
export interface RigSessionWorktree extends SessionWorktree {
  session_id: string;
  session_name: string;
  /** The agent it is a session of. */
  agent: string;
}

export interface ListBodyRigResponse {
  items: RigResponse[];
  /** @isInt */
  total: number;
  next_cursor?: string;
}

/** Body of `POST /v0/city/{cityName}/rigs`: an existing directory (`path`), or a repository to clone (`git_url`). */
export interface RigCreateInputBody {
  /**
   * The rig's name (letters, digits, `.`, `_`, `-`).
   * @pattern ^[a-zA-Z0-9][a-zA-Z0-9._-]*$
   */
  name: string;
  /** An existing directory (absolute, or relative to the city); with `git_url`, where to clone (default `rigs/<name>`). */
  path?: string;
  /** A repository to clone (https, http, ssh, git or file URL), asynchronously: the answer is a 202. */
  git_url?: string;
  prefix?: string;
  /** Its mainline branch (default: the clone's, or the directory's current branch). */
  default_branch?: string;
  /** Your correlation id for a clone (default: a new one). */
  request_id?: string;
}

/** Body of the answer to `POST /v0/city/{cityName}/rigs`. */
export interface RigCreateResponseBody {
  /** `created` (201: an existing directory) or `accepted` (202: a clone under way). */
  status: string;
  /** The rig's name. */
  rig: string;
  prefix?: string;
  default_branch?: string;
  /** A clone's correlation id: `request.result.rig.create` or `request.failed` carries it. */
  request_id?: string;
  /** The city event cursor before the clone began (pass as `after_seq` to the city stream). */
  event_cursor?: string;
}

/** Payload of `request.result.rig.create`: a cloned rig is ready. */
export interface RigCreateSucceededPayload {
  request_id: string;
  rig: string;
  prefix: string;
  default_branch: string;
}

/** Payload of `rig.provision.progress`: a step of a rig's provisioning. */
export interface RigProvisionProgressPayload {
  rig: string;
  /** `clone` (with git's progress in `detail`), `config`. */
  step: string;
  request_id?: string;
  detail?: string;
  warn?: boolean;
}

/** Body of `PATCH /v0/city/{cityName}/rig/{name}`: absent fields stay as they are. */
export interface RigUpdateInputBody {
  path?: string;
  prefix?: string;
  default_branch?: string;
  suspended?: boolean;
}
