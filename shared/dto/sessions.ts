import type { Bead } from './beads.js';
import type { PartyOverlap } from './overlaps.js';
import type { Message } from './mail.js';
import type { SessionUsageTotals } from './usage.js';

export type { SessionUsageTotals } from './usage.js';
export type {
  SessionAgentGetResponse,
  SessionAgentListResponse,
  SessionAgentMapping,
  SessionTranscriptResponse,
  SessionTurn,
  TranscriptEntry,
  TranscriptPagination,
} from './session-transcripts.js';

/**
 * A session's lifecycle state (stored in its session bead). `start-pending` → `creating` → `active`; `asleep`,
 * `suspended`, `quarantined` (no program running); `draining` → `drained`; `archived`, `failed-create`; `lost` (its
 * host stopped answering: nothing starts it again but a person's `wake`); `closed` is terminal.
 */
export type SessionState =
  | 'start-pending'
  | 'creating'
  | 'active'
  | 'asleep'
  | 'suspended'
  | 'draining'
  | 'drained'
  | 'quarantined'
  | 'archived'
  | 'failed-create'
  | 'lost'
  | 'closed';

/** What `POST …/submit` can do for this session besides delivering at once. */
export interface SubmissionCapabilities {
  /** `intent: follow_up`: queued until the current turn ends. */
  supports_follow_up: boolean;
  /** `intent: interrupt_now`: the current turn is stopped, then the message delivered. */
  supports_interrupt_now: boolean;
}

/** A session: a live (or resumable) process of a provider's program that people and programs talk to. */
export interface SessionResponse {
  /** The session bead's id. */
  id: string;
  /** The agent or provider it was created from. */
  template: string;
  title: string;
  /** The provider whose program runs. */
  provider: string;
  /** The runtime's name for it (unique in the city; also accepted wherever `{id}` is). */
  session_name: string;
  state: SessionState;
  /** Its program is running now. */
  running: boolean;
  /**
   * Someone is attached: a stream of it is open, or — a session in tmux — a tmux client shows it
   * (`ctl session attach`, or `tmux attach` itself). A configuration change waits for them before it restarts it.
   */
  attached: boolean;
  /** @format date-time */
  created_at: string;
  /** `agent` or `provider`. */
  kind: string;
  /** Where its programs run: `local` (this machine) or the `[[host]]` it was placed on. */
  host: string;
  alias?: string;
  /** The program's working directory. */
  work_dir?: string;
  /** `idle` or `in-turn`, while running. */
  activity?: 'idle' | 'in-turn';
  /**
   * The last time the program read a message or wrote output.
   * @format date-time
   */
  last_active?: string;
  /** The end of its most recent output. */
  last_output?: string;
  /** Why it is in its state (`exited with code 1`, `suspended by a person`, …). */
  reason?: string;
  /** The permission mode it runs (or will run) in, for providers that have modes. */
  permission_mode?: string;
  /** The options its program starts with: its provider's, its agent's, then its own `option_defaults`/`options`. */
  options?: { [key: string]: string };
  /** The model it runs on: as its program reported it in its last turn, else as chosen in its options. */
  model?: string;
  /** The tokens its turns used, as its provider reported them. */
  usage?: SessionUsageTotals;
  /** Tokens of the context its model read in its last turn (prompt, history, tool results). @isInt */
  context_tokens?: number;
  /** Its model's context window in tokens: as its program reported it, else from its provider's table. @isInt */
  context_window?: number;
  /** `context_tokens` as a rounded percentage of `context_window`, once both are known. @isInt */
  context_pct?: number;
  /** A question or permission request waiting for an answer (`GET …/pending`, `POST …/respond`). */
  pending?: PendingInteraction;
  /**
   * Messages accepted and waiting to be delivered, in order.
   * @isInt
   */
  queued: number;
  /**
   * Process id of its program, while running.
   * @isInt
   */
  pid?: number;
  /** The provider's own conversation id (resumed when the session wakes), once the program has told it. */
  provider_session_key?: string;
  /** A session in tmux: where a person joins it (`tmux -S <socket> attach -t <target>`, or `ctl session attach`). */
  attach?: SessionAttach;
  /**
   * A session in tmux, while its program runs: what it is doing, as its hooks last reported it (Claude Code's,
   * posted by `ctl hook-event`) or, for a program that reports none, as its screen shows it.
   */
  program_status?: SessionProgramStatus;
  /**
   * Its own git worktree (an agent with `isolation = "worktree"`); `GET …/session/{id}` adds the branch's state
   * (head, dirty, ahead and behind its base), lists leave it out.
   */
  worktree?: SessionWorktree;
  submission_capabilities: SubmissionCapabilities;
}

/** What a terminal program is doing, and who said so. */
export interface SessionProgramStatus {
  /** `starting`, `idle` (at its prompt), `busy` (in a turn) or `asking` (a permission prompt). */
  status: 'starting' | 'idle' | 'busy' | 'asking';
  /** `hooks`: the program's own hooks report it; `screen`: read off its screen by its rules. */
  source: 'hooks' | 'screen';
  /** The last hook it posted (`Stop`, `PermissionRequest`, …), once hooks report. */
  hook?: string;
  /**
   * When it last changed.
   * @format date-time
   */
  at: string;
}

/** A session's own git worktree and branch. */
export interface SessionWorktree {
  /** The worktree's directory (under the city's `.ctl/worktrees/`). */
  path: string;
  /** Its branch: `ctl/<agent>/<session name>`. */
  branch: string;
  /** The branch it starts from and merges into (known once the worktree is made). */
  base?: string;
  /** The repository (its main working tree) it is a worktree of. */
  repository: string;
  /** The commit its branch is at (with the git state). */
  head?: string;
  /** Uncommitted changes or untracked files in it (with the git state). */
  dirty?: boolean;
  /**
   * Commits on its branch that are not in its base (with the git state).
   * @isInt
   */
  ahead?: number;
  /**
   * Commits in its base that are not on its branch (with the git state).
   * @isInt
   */
  behind?: number;
  /** Why its state could not be read (the worktree is gone, git failed). */
  error?: string;
  /**
   * In a rig (with the git state): its other open sessions and reviews waiting to land whose branches changed some
   * of the same files, with those files (as `GET …/rigs/{name}/overlaps`).
   */
  overlaps?: PartyOverlap[];
}

/** What became of a session's worktree when it closed. */
export interface SessionWorktreeRelease {
  path: string;
  branch: string;
  /** Removed (with its branch): it held nothing that is not in its base. */
  removed: boolean;
  /** Why it was kept (uncommitted changes, commits not in its base, a git failure). */
  reason?: string;
}

/** Answer to `POST …/session/{id}/close`. */
export interface SessionCloseResponse {
  /** `closed`, or `deleted` with `delete=true`. */
  status: string;
  id: string;
  /** Its worktree: removed, or kept with the reason. */
  worktree?: SessionWorktreeRelease;
}

/** Answer to `POST …/session/{id}/reset`. */
export interface SessionResetResponse {
  /** Always `reset`. */
  status: 'reset';
  id: string;
  /** Its program was running and was started again on the new conversation; false: the next start begins it. */
  restarted: boolean;
  /**
   * The seq of the transcript's `reset` entry: what comes after it is the new conversation.
   * @isInt
   */
  transcript_seq: number;
  /** The conversation left behind (the provider's session key), when there was one. */
  previous_conversation?: string;
}

/** Where to attach to a session's terminal. */
export interface SessionAttach {
  /** The city's tmux server socket, on the session's host. */
  socket: string;
  /** The tmux session. */
  target: string;
  /**
   * The command that joins it from the supervisor's machine: `tmux -S <socket> attach-session -t <target>`, or
   * for a session on another host `ssh -tt … tmux …` over the city's connection to it.
   */
  command: string[];
}

/** Body of `POST /v0/city/{cityName}/sessions`. */
export interface SessionCreateBody {
  /** The agent or provider to start (default: the city's own provider or start command). */
  name?: string;
  /** `provider` (default) or `agent`. */
  kind?: 'agent' | 'provider';
  /** A second name to address it by. */
  alias?: string;
  /**
   * What the session is about (default: the first words of `message`, or the agent or provider name).
   * @pattern \S
   */
  title?: string;
  /**
   * A first message, delivered once the program is ready.
   * @pattern \S
   */
  message?: string;
  /** The permission mode to start in (one of the provider's). */
  permission_mode?: string;
  /** Options over its agent's and provider's (`model`, `effort`, …): one its provider lacks is a 422 naming it. */
  options?: { [key: string]: string };
}

/** Body of `PATCH /v0/city/{cityName}/session/{id}`. */
export interface SessionPatchBody {
  /**
   * @minLength 1
   * @pattern \S
   */
  title?: string;
  /** An empty string removes the alias. */
  alias?: string;
}

/** Body of `POST …/session/{id}/messages`. */
export interface SessionMessageInputBody {
  /**
   * @minLength 1
   * @pattern \S
   */
  message: string;
}

/** How a submitted message is delivered. */
export type SubmitIntent = 'default' | 'follow_up' | 'interrupt_now';

/** Body of `POST …/session/{id}/submit`. */
export interface SessionSubmitInputBody {
  /**
   * @minLength 1
   * @pattern \S
   */
  message: string;
  /** `default`: as soon as the program can take it; `follow_up`: after the current turn; `interrupt_now`: stop the current turn first. */
  intent?: SubmitIntent;
}

/** Body of `POST …/session/{id}/rename`. */
export interface SessionRenameInputBody {
  /**
   * @minLength 1
   * @pattern \S
   */
  title: string;
}

/** Body of `POST …/session/{id}/permission-mode`. */
export interface SessionPermissionModeBody {
  /**
   * One of the provider's permission modes.
   * @minLength 1
   * @pattern \S
   */
  permission_mode: string;
}

/** Body of `POST …/session/{id}/respond`: the answer to the pending interaction. */
export interface SessionRespondInputBody {
  /**
   * `allow` or `deny` for a permission request; `answer` (with `text`) for a question.
   * @minLength 1
   */
  action: string;
  /** The interaction answered (default: the one pending). */
  request_id?: string;
  /** The answer's text (a question's answer; a reason for a denial). */
  text?: string;
  metadata?: { [key: string]: string };
}

/** A question or permission request from a session's program, waiting for a person or program to answer it. */
export interface PendingInteraction {
  request_id: string;
  /** `tool-approval` (allow or deny) or `question` (a text answer). */
  kind: string;
  /** What is asked, for a person. */
  prompt?: string;
  /** The actions that answer it. */
  options?: string[];
  metadata?: { [key: string]: string };
  /** @format date-time */
  created_at?: string;
}

/** Body of `GET …/session/{id}/pending`. */
export interface SessionPendingResponse {
  /** The session's provider can ask (its protocol carries questions or permission requests). */
  supported: boolean;
  pending?: PendingInteraction;
}

/** One pending interaction of the city (`GET …/pending`). */
export interface CityPendingEntry {
  session_id: string;
  request_id: string;
  kind: string;
  prompt?: string;
}

/** Body of `GET …/pending`. */
export interface CityPendingListBody {
  items: CityPendingEntry[];
  /** @isInt */
  total: number;
  /** Pass as `cursor` for the next page. */
  next_cursor?: string;
}

/** Body of `GET …/sessions`. */
export interface ListBodySessionResponse {
  items: SessionResponse[];
  /** @isInt */
  total: number;
  /** Pass as `cursor` for the next page. */
  next_cursor?: string;
}

/** The 202 of a city-scope asynchronous operation (session create, message, submit). */
export interface AsyncAcceptedBody {
  status: 'accepted';
  /** Correlates the `request.result.session.*` or `request.failed` event that ends it. */
  request_id: string;
  /** The city log's head before the operation: pass as `after_seq` to the city stream to wait for the result. */
  event_cursor: string;
  /** The session it concerns (for a create: the new session, already addressable). */
  session_id: string;
}

/** The 202 of `POST …/respond`. */
export interface SessionRespondAcceptedBody {
  status: 'accepted';
  /** The session. */
  id: string;
  /** The interaction answered. */
  request_id: string;
}

/**
 * A hook of a terminal program (Claude Code's names): `SessionStart`, `UserPromptSubmit` (a prompt was
 * submitted), `PreToolUse` and `PostToolUse` (a tool is about to run, has run), `PermissionRequest` and
 * `Notification` (a permission prompt is up; a Notification also says when it waits for input), `Stop` and
 * `StopFailure` (the turn ended, or failed), `SubagentStop` (a subagent finished).
 */
export type SessionHookEvent =
  | 'SessionStart'
  | 'UserPromptSubmit'
  | 'PreToolUse'
  | 'PostToolUse'
  | 'PermissionRequest'
  | 'Notification'
  | 'Stop'
  | 'StopFailure'
  | 'SubagentStop';

/** Body of `POST …/session/{id}/hook`: what a program's hook reported, as `ctl hook-event` posts it. */
export interface SessionHookBody {
  event: SessionHookEvent;
  /** The JSON the hook was given on its stdin (Claude Code: `session_id`, `tool_name`, `tool_input`, …). */
  input?: { [key: string]: unknown };
}

/** The answer to a hook. */
export interface SessionHookResponse {
  /** The session. */
  id: string;
  event: SessionHookEvent;
  /** Its runtime reads hooks (a session in tmux) and took it; false for one that does not need them. */
  applied: boolean;
}

/** `status: ok` and the session's id. */
export interface OKWithIDResponseBody {
  status: string;
  id: string;
}

/** Data of a session stream's `activity` frame. */
export interface SessionActivityEvent {
  activity: 'idle' | 'in-turn';
}

/** Data of a session stream's `pending_cleared` frame. */
export interface SessionPendingClearedEvent {
  request_id: string;
}

/**
 * What a session needs in a turn (`GET …/session/{id}/prime`): its agent's role prompt, the bead it holds now and
 * its unread mail — and all of it as `text`, what `ctl prime` prints for a hook or a first turn.
 */
export interface SessionPrimeResponse {
  session_id: string;
  session_name: string;
  /** The agent it is a session of (absent for a provider's session). */
  agent?: string;
  /** The agent's prompt, its template filled in. */
  prompt?: string;
  /** The bead it holds now (in progress, handed to it), if any. */
  bead?: Bead;
  /** Unread mail to its agent or to it by its session name, newest first (at most 20). */
  mail: Message[];
  /** Unread messages in all (`mail` may hold fewer). */
  unread: number;
  text: string;
}
