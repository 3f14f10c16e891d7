import type { Readable, Writable } from 'node:stream';

/**
 * The seam for where a session's programs run: this machine (`LocalHost`) or one reached over OpenSSH
 * (`SshHost`). Every runtime (pipe, ACP, codex-exec, tmux) starts, signals, stages and runs through a host and
 * nothing else, so a runtime never assumes shared paths, local pids or local signals. A pod host (Kubernetes)
 * would be a third implementation: docs/architecture/hosts.md.
 */
export interface Host {
  /** `local`, or the `[[host]]` table's name. */
  readonly name: string;
  /** Whether its programs run on another machine (paths and pids are the host's, not ours). */
  readonly remote: boolean;
  /**
   * How long after the host stops answering a program of ours there is certainly gone (its watchdog's deadline and
   * grace): what a lost session's beads wait for before they go back to the pool. 0 here.
   */
  readonly fenceMs: number;
  /** Why the host stopped answering, while it has not answered since; undefined while it answers (or never has). */
  lost(): string | undefined;
  /**
   * Readies the host: connects, ships what runs there, and tethers its runs (nothing to do for this machine).
   * Every other operation does it first; `sessionDir` and `tmuxSocket` need it done. Rejects with a reason.
   */
  prepare(): Promise<void>;
  /**
   * Starts `argv` in a process group of its own, with exactly `spec.env` added to the host's own login
   * environment (remote) or as the whole environment (local), tethered so that it ends when this controller
   * does. Rejects, with a reason for a person, when it cannot be started.
   */
  spawn(spec: HostSpawnSpec): Promise<HostProcess>;
  /**
   * Copies `files` (paths relative to `fromDir` on this machine, their modes kept) to `toDir` on the host, made
   * when missing. The local host: nothing to do when `toDir` is `fromDir`.
   */
  stage(fromDir: string, files: string[], toDir: string): Promise<void>;
  /**
   * Tethers group `pid`, started on the host by a tool of ours rather than by `spawn` (a tmux pane's program),
   * so that it too ends with the controller; `release` once it has ended.
   */
  tether(pid: number, what: string): Promise<void>;
  release(pid: number): void;
  /** Sends `signal` to group `pid` on the host; nothing when it is gone. */
  signalGroup(pid: number, signal: NodeJS.Signals): Promise<void>;
  /** Whether process `pid` still runs on the host. */
  isAlive(pid: number): Promise<boolean>;
  /**
   * Ends what this city's controllers started on the host and no live controller holds any more (a controller
   * killed with its watchdog); resolves with the process ids it ended.
   */
  reap(): Promise<number[]>;
  /** Runs a short command on the host, bounded by `timeoutMs`; resolves with how it ended, never rejects for it. */
  run(argv: string[], options: HostRunOptions): Promise<HostCommandResult>;
  /**
   * The command a person runs on this machine to be in `argv` on the host with a terminal of their own (an
   * attach): `argv` itself here, `ssh -tt … argv` there.
   */
  terminal(argv: string[]): string[];
  /** Where a session's own files live on the host (its staged priming, shell start-up files, defaults). */
  sessionDir(sessionId: string, localDir: string): string;
  /** The directory of the `ctl` a session's shells run there (`localBin`, the controller's launcher, here). */
  ctlBin(localBin: string): string;
  /**
   * Where a session's `ctl` there reaches its city: the far end of the host's reverse tunnel to its gateway (a
   * socket on the host), once prepared; undefined here, where `ctl` reaches the supervisor as the person does.
   */
  apiSocket(): string | undefined;
  /** Where tmux keeps this city's server socket on the host. */
  tmuxSocket(localSocket: string): string;
  /**
   * A repository of this city's on the host (`name`: one per rig), as git on this machine reaches it over the
   * host's own connection, once prepared: its path there, its URL and the environment git needs for it. Undefined
   * here, where a worktree is made from the rig itself.
   */
  gitRepository(name: string): HostGitRepository | undefined;
}

/** A repository on a host, reached by this machine's git over the host's connection (push, fetch). */
export interface HostGitRepository {
  /** Its directory on the host (a bare repository). */
  path: string;
  /** What `git push` and `git fetch` here are given. */
  url: string;
  /** `GIT_SSH_COMMAND`: the host's ssh, through its connection's socket. */
  env: Record<string, string>;
}

export interface HostSpawnSpec {
  argv: string[];
  /** The working directory, on the host. */
  cwd: string;
  /** The variables to set (a value `undefined` unsets an inherited one). */
  env: NodeJS.ProcessEnv;
  /** What it is, for the tether's log: `session program claude`. */
  what: string;
}

/** A program a host started. */
export interface HostProcess {
  /** Its process id on the host, which leads its process group there. */
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /**
   * Resolves once it has exited and its output has ended. `lost`: the host stopped answering before it said how
   * the program ended (its end is then the host's watchdog's to make), and why.
   */
  readonly exited: Promise<{ code: number | null; signal: string | null; lost?: string }>;
  /** Sends `signal` to its whole process group (what it started too); nothing when it is gone. */
  signal(signal: NodeJS.Signals): void;
}

export interface HostRunOptions {
  cwd?: string;
  /** Written to its stdin, which is then closed (none: stdin is empty). */
  input?: string;
  env?: Record<string, string>;
  timeoutMs: number;
}

export interface HostCommandResult {
  /** Its exit code; null when it was ended by a signal, timed out, or could not be started. */
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** The name of this machine among a city's hosts (`hosts = ["local", …]`). */
export const LOCAL_HOST = 'local';
