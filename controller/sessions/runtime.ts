import type { Logger } from 'pino';
import type { PendingInteraction, SessionProgramStatus } from '../../shared/dto/sessions.js';
import type { Host } from '../hosts/host.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { Priming } from './priming.js';
import type { ProgramHook } from './program-hooks.js';
import type { TurnFailure } from './turn-failure.js';

/** What a runtime can do beyond start, deliver and stop. */
export interface RuntimeCapabilities {
  /** It can end the current turn without ending the program. */
  interrupt: boolean;
  /** Its program can ask questions or request permissions, and hear the answer. */
  pending: boolean;
  /** A permission mode can change while the program runs. */
  liveModeChange: boolean;
  /**
   * A message can be handed over while a turn is in progress (the program queues it, and ends each turn it
   * was given on its own). Otherwise messages go one turn at a time.
   */
  concurrentTurns: boolean;
}

/** How a program ended. */
export interface ProgramExit {
  code: number | null;
  signal: string | null;
  /** We asked it to end (stop, kill, suspend, close, shutdown). */
  requested: boolean;
  /** The end of what it wrote on stderr. */
  stderrTail: string;
  /** Its host stopped answering before it said how the program ended: why (the session is lost, not crashed). */
  hostLost?: string;
}

/** What a program's output can be (each is a transcript entry kind). */
export type OutputKind = 'assistant' | 'tool_call' | 'tool_result' | 'error' | 'thought' | 'plan' | 'notice';

/** What a subagent did (Claude Code's Task/Agent tool), as one entry of its own transcript. */
export interface SubagentOutput {
  /** The program's id for the subagent (Claude Code's `agent_id`; its Task call's id where it names none). */
  agent_id: string;
  /** The main conversation's tool call that started it. */
  parent_tool_use_id: string;
  /** `start` (its task and prompt), its conversation (`user`, `assistant`, tools), `turn_end` (its status). */
  kind: 'start' | 'user' | 'turn_end' | OutputKind;
  text?: string;
  data?: Record<string, unknown>;
}

/**
 * What a runtime tells its session as it happens. The session turns these into transcript entries, stream
 * frames, state changes and events; the runtime knows nothing of those.
 */
export interface RuntimeSink {
  /** The program can take a turn. */
  ready(): void;
  /**
   * Output of the current turn: a reply (in pieces, as it comes; a piece with `data.chunk` continues the text
   * before it), a tool call or result, an error; from programs that say them, thoughts, a plan, a notice.
   */
  output(kind: OutputKind, text: string, data?: Record<string, unknown>): void;
  /**
   * The current turn ended (the program is idle); `data` holds what the program said about it (usage, …), and
   * `failure` what the provider's service answered instead of a reply (a rate limit, an unreachable model).
   */
  turnEnded(data?: Record<string, unknown>, failure?: TurnFailure): void;
  /** The program began a turn no message asked for (Claude Code, once a background subagent is done). */
  turnBegan(reason: string): void;
  /**
   * A subagent's turn: kept apart from the session's own conversation (its last output, the replies published
   * for it), listed under the tool call that started it.
   */
  subagent(output: SubagentOutput): void;
  pending(interaction: PendingInteraction): void;
  pendingCleared(requestId: string, action: string): void;
  /** The provider's own conversation id, to resume it with later. */
  sessionKey(key: string): void;
  /**
   * The program could not resume the conversation it was started with (it no longer has it): the next start
   * begins a new one, and the program's end that follows is not a crash.
   */
  resumeRefused(reason: string): void;
  /**
   * Handing the message being delivered to the program failed once, and is tried again in `retryInMs` (a
   * terminal program whose screen did not show it typed in time): the session says so on its event log.
   */
  deliveryRetried(retry: DeliveryRetry): void;
  exited(exit: ProgramExit): void;
  /**
   * While the session is behind in writing what it heard, a promise that resolves once it has caught up: the
   * runtime stops reading the program meanwhile (a program that floods its output waits in its pipe, not in our
   * memory). Undefined when it is not behind.
   */
  behind(): Promise<void> | undefined;
}

/** One failed attempt at handing a message to its program, with another to follow. */
export interface DeliveryRetry {
  /** The attempt that failed (from 1), out of `attempts`. */
  attempt: number;
  attempts: number;
  /** Why it failed. */
  error: string;
  retryInMs: number;
}

/**
 * A message the runtime gave up on after every attempt, while its program still runs: the message is not the
 * program's, and is dropped from the queue with its request failed (any other error of `deliver` means the
 * program went away).
 */
export class DeliveryFailed extends Error {
  constructor(
    message: string,
    readonly attempts: number,
  ) {
    super(message);
    this.name = 'DeliveryFailed';
  }
}

/** What a runtime starts a program from. */
export interface RuntimeOptions {
  sessionId: string;
  provider: ResolvedProvider;
  /** Where its programs run; `workDir`, `env`'s paths and `stateDir` are that host's. */
  host: Host;
  workDir: string;
  env: NodeJS.ProcessEnv;
  /** Where the runtime may keep files of its own (a pid file). */
  stateDir: string;
  /** The provider's conversation to resume, when there is one and the provider can. */
  resumeKey?: string;
  permissionMode?: string;
  /** Its options (`model`, `effort`, …): passed as its provider's `options_schema` says. */
  options?: Record<string, string>;
  /** The agent's prompt as system prompt and the priming hooks' settings, as far as the provider takes them. */
  priming?: Priming;
  /** The first message, for providers that take it on the command line. */
  firstMessage?: string;
  /** How long the program has to become ready (a runtime whose `start` waits for a handshake bounds it by this). */
  startTimeoutMs: number;
  /** Where a runtime says what went wrong that nobody waits on (a failed first turn, a clean-up that failed). */
  logger: Logger;
}

/** One session's program, whatever runs it. The next runtimes (tmux) implement this and nothing else. */
export interface SessionRuntime {
  readonly capabilities: RuntimeCapabilities;
  /** The process id of the program it started (it may have exited since). */
  readonly pid: number | undefined;
  /** Starts the program; rejects (with a reason for a person) when it cannot be started. */
  start(): Promise<void>;
  /**
   * Hands a message to the program; resolves once the program has it (written to it, not merely queued). Rejects
   * with `DeliveryFailed` when it gave up while the program runs, with anything else when the program is gone.
   */
  deliver(message: { id: string; text: string }): Promise<void>;
  /** Ends the current turn; false when nothing was in progress or the runtime cannot. */
  interrupt(): Promise<boolean>;
  /** Answers the pending interaction `requestId`. */
  respond(requestId: string, answer: { action: string; text?: string }): Promise<void>;
  /** Changes the permission mode of the running program; false when only a restart can. */
  setPermissionMode(mode: string): Promise<boolean>;
  /** Ends the program: asked nicely, then, after `graceMs`, not. Resolves once it is gone. */
  stop(graceMs: number): Promise<void>;
  isRunning(): boolean;
  /** A terminal runtime's screen: its last `lines` lines (`peek`). */
  peek?(lines: number): Promise<string[]>;
  /** A terminal runtime's place for a person to join it. */
  readonly attach?: { socket: string; target: string; command: string[] };
  /** A terminal runtime: how many terminals show its program now (people attached with tmux). */
  readonly clients?: number;
  /** A terminal runtime: what its program is doing, as its hooks or its screen say. */
  readonly programStatus?: SessionProgramStatus;
  /**
   * A hook its program reported (`ctl hook-event`, run by the program's own hooks): false when this runtime has
   * no use for hooks (its protocol already says all of it).
   */
  hook?(hook: ProgramHook): boolean;
}
