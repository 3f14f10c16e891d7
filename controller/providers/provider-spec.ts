import type { OptionSpec } from './provider-options.js';

/**
 * How a provider's program talks: `text` — a stdin line is a turn, stdout is the reply, a turn ends at the ready
 * marker or after a quiet spell; `stream-json` — one JSON object per line each way, as Claude Code speaks with
 * `-p --input-format stream-json --output-format stream-json`; `codex-exec` — one `codex exec --json` process per
 * turn, resumed by thread id; `acp` — the Agent Client Protocol (JSON-RPC over stdio).
 */
export const WIRE_PROTOCOLS = ['text', 'stream-json', 'codex-exec', 'acp'] as const;
export type WireProtocol = (typeof WIRE_PROTOCOLS)[number];

/**
 * Where a session's program runs. `pipe`: a child of the controller with our own stdin/stdout/stderr pipes.
 * `tmux`: an interactive terminal program in a tmux session of the city's server, read by its screen rules.
 */
export const RUNTIME_KINDS = ['pipe', 'tmux'] as const;
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

/**
 * How a session's first message reaches the program: `stdin` — written as its first turn once it runs (the
 * default for both protocols); `arg` — appended to the command line; `flag` — after `prompt_flag`.
 */
export const PROMPT_MODES = ['stdin', 'arg', 'flag'] as const;
export type PromptMode = (typeof PROMPT_MODES)[number];

/**
 * A provider as `[providers.<name>]` in `city.toml` (or a built-in preset) writes it: every field optional, a
 * `base` to inherit from (`builtin:claude`, or another provider's name), the rest overriding what it inherits.
 */
export interface ProviderSpec {
  /** `builtin:<preset>`, or the name of another provider of the city. */
  base?: string;
  display_name?: string;
  /** The program: a name looked up on PATH, or a path; split on spaces into program and leading arguments. */
  command?: string;
  /** Arguments after the command (replace what is inherited). */
  args?: string[];
  /** Arguments appended after the inherited ones. */
  args_append?: string[];
  env?: Record<string, string>;
  protocol?: WireProtocol;
  runtime?: RuntimeKind;
  prompt_mode?: PromptMode;
  prompt_flag?: string;
  /**
   * Resuming a conversation: arguments that carry the provider's own session id, `{session_key}` standing for
   * it (Claude Code: `["--resume", "{session_key}"]`).
   */
  resume_args?: string[];
  /**
   * Handing an agent's prompt to the program as (part of) its system prompt, at every start: arguments in which
   * `{prompt_file}` stands for a file holding it, `{prompt_toml}` for it as a TOML string, `{prompt_text}` for
   * the text itself, `{context_dir:NAME}` for a directory holding only it, in a file named NAME (Claude Code:
   * `["--append-system-prompt-file", "{prompt_file}"]`; Gemini CLI: `["--include-directories",
   * "{context_dir:GEMINI.md}"]`). Without them the prompt is the session's first turn.
   */
  system_prompt_args?: string[];
  /**
   * A per-session settings file in Claude Code's format, whose `SessionStart` and `PreCompact` hooks run
   * `ctl prime` (the session is primed again after its context is compacted): arguments in which
   * `{settings_file}` stands for it (Claude Code: `["--settings", "{settings_file}"]`).
   */
  settings_args?: string[];
  /** `text`: a line that starts with this means the program is ready for the next turn. */
  ready_prompt_prefix?: string;
  /** `tmux`: the screen rules it is read by (`tui-agent`, … in controller/sessions/tmux/rules, or a path). */
  screen_rules?: string;
  /** `text`: without a ready marker, a turn ends after this long without output (default 500 ms). */
  quiet_ms?: number;
  /** How long a program without a ready marker must keep running to be taken as ready (default 200 ms). */
  ready_delay_ms?: number;
  /** `text`: a regular expression; an output line matching it is a question waiting for an answer. */
  pending_pattern?: string;
  /** Permission modes this provider knows, each with the arguments that select it. */
  permission_modes?: Record<string, string[]>;
  /** The permission mode sessions start in. */
  default_permission_mode?: string;
  /** Names its processes go by (for a person reading `ps`; liveness comes from the child's exit). */
  process_names?: string[];
  /**
   * The options its sessions start with unless their agent or they choose otherwise (`model`, `effort`, …, and
   * `permission_mode`): each one of the provider's `options_schema` (or its permission modes).
   */
  option_defaults?: Record<string, string>;
  /** The options it offers and the arguments that pass them: preset data, inherited by what is based on it. */
  options_schema?: Record<string, OptionSpec>;
  /** Context windows (tokens) of models whose program does not report one with its usage, by model name. */
  context_windows?: Record<string, number>;
}

/**
 * A settings file of ctl's own that the program reads beneath the person's own settings (Gemini CLI's system
 * defaults), handed through an environment variable at every start: what the file the program would otherwise read
 * says, with `settings` on top. Preset data, inherited by what is based on the preset.
 */
export interface DefaultsFile {
  /** The variable naming the file the program reads (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`). */
  env: string;
  /**
   * Where the program reads it when that variable is unset: the first that applies. `{env_dir:NAME}` stands for
   * the directory of the file the variable NAME names (a candidate with it applies only while NAME is set).
   */
  fallbacks: string[];
  /** What ctl's file sets, over what the person's file says (objects merged key by key). */
  settings: Record<string, unknown>;
  /**
   * The program reads such a file only where it and every directory above it belong to root and no one else may
   * write them (Gemini CLI's rule for system files): elsewhere it is not handed, and the person's stays in effect.
   */
  root_only: boolean;
}

/** A provider with its inheritance resolved: what a session is started from. */
export interface ResolvedProvider {
  name: string;
  display_name: string;
  /** A built-in preset (possibly adjusted by the city). */
  builtin: boolean;
  /** Declared in the city's `city.toml`. */
  city_level: boolean;
  /** Where it comes from: `builtin`, `city` or `builtin+city`. */
  origin: 'builtin' | 'city' | 'builtin+city';
  /** The readiness probe of the preset it derives from (`claude`, `codex`, `gemini`), if any. */
  probe?: string;
  /** The defaults file of the preset it derives from, if it has one. */
  defaults_file?: DefaultsFile;
  command: string;
  args: string[];
  env: Record<string, string>;
  protocol: WireProtocol;
  runtime: RuntimeKind;
  prompt_mode: PromptMode;
  prompt_flag?: string;
  resume_args?: string[];
  system_prompt_args?: string[];
  settings_args?: string[];
  ready_prompt_prefix?: string;
  screen_rules?: string;
  quiet_ms: number;
  ready_delay_ms: number;
  pending_pattern?: string;
  permission_modes: Record<string, string[]>;
  default_permission_mode?: string;
  process_names: string[];
  option_defaults: Record<string, string>;
  options_schema: Record<string, OptionSpec>;
  context_windows: Record<string, number>;
}
