/**
 * How a provider's program talks: `text` (a stdin line is a turn, stdout the reply), `stream-json` (Claude Code's
 * JSON lines), `codex-exec` (one `codex exec --json` per turn), `acp` (the Agent Client Protocol).
 */
export type ProviderProtocol = 'text' | 'stream-json' | 'codex-exec' | 'acp';

/**
 * Where a session's program runs. `pipe`: a child of the controller with its own stdin/stdout pipes. `tmux`: an
 * interactive program in a tmux session of the city's tmux server, read off its screen by its `screen_rules`.
 */
export type ProviderRuntime = 'pipe' | 'tmux';

/** How a session's first message reaches the program: on `stdin`, as an `arg`, or after `prompt_flag`. */
export type ProviderPromptMode = 'stdin' | 'arg' | 'flag';

/** Where a provider comes from: a built-in preset, the city's `city.toml`, or a preset the city adjusts. */
export type ProviderOrigin = 'builtin' | 'city' | 'builtin+city';

/** A provider as sessions start it: its `base` chain resolved over the built-in presets. */
export interface ProviderResponse {
  name: string;
  /** A built-in preset (`claude`, `codex`, `gemini`, `qwen`, `generic`), possibly adjusted by the city. */
  builtin: boolean;
  /** Declared in the city's `city.toml` (`[providers.<name>]`, or `[workspace] start_command` for `default`). */
  city_level: boolean;
  origin: ProviderOrigin;
  display_name: string;
  /** The program: a name looked up on PATH, or a path (a command with shell syntax runs through `sh -c`). */
  command: string;
  args: string[];
  env: { [name: string]: string };
  protocol: ProviderProtocol;
  runtime: ProviderRuntime;
  prompt_mode: ProviderPromptMode;
  prompt_flag?: string;
  /** Arguments that resume the provider's own conversation, `{session_key}` standing for its id. */
  resume_args?: string[];
  /**
   * Arguments that hand an agent's prompt to the program as its system prompt, `{prompt_file}` standing for a
   * file holding it, `{prompt_toml}` for it as a TOML string, `{prompt_text}` for the text itself and
   * `{context_dir:NAME}` for a directory holding only it, in a file named NAME; without them it is the first turn.
   */
  system_prompt_args?: string[];
  /** Arguments that pass a per-session settings file (Claude Code's format, hooks running `ctl prime`), `{settings_file}` standing for it. */
  settings_args?: string[];
  /** `text`: an output line starting with this means the program waits for the next turn. */
  ready_prompt_prefix?: string;
  /** `tmux`: the screen rules it is read by (a shipped rules file's name, or a path to a TOML file). */
  screen_rules?: string;
  /**
   * How long after it starts a program is taken to be ready when it gives no other sign.
   * @isInt
   */
  ready_delay_ms: number;
  /**
   * `text`: without a ready marker, a turn ends after this long without output.
   * @isInt
   */
  quiet_ms: number;
  /** `text`: a regular expression; an output line matching it is a question waiting for an answer. */
  pending_pattern?: string;
  /** Permission modes, each with the arguments that select it. */
  permission_modes: { [mode: string]: string[] };
  /** The permission mode sessions start in. */
  default_permission_mode?: string;
  /**
   * The options its sessions start with unless their agent or they choose otherwise (`model`, `effort`, …,
   * `permission_mode`).
   */
  option_defaults: { [key: string]: string };
  /** The options it offers (from the preset it is based on), each with the arguments that pass it. */
  options_schema: { [key: string]: ProviderOptionSpec };
  /**
   * Context windows (tokens) of models whose program does not report one, by model name.
   * @isInt
   */
  context_windows: { [model: string]: number };
  /** Names its processes go by. */
  process_names: string[];
}

/** Body of `GET …/providers`: every provider the city can start sessions with, by name. */
export interface ListBodyProviderResponse {
  items: ProviderResponse[];
  /** @isInt */
  total: number;
  /** Pass as `cursor` for the next page. */
  next_cursor?: string;
}

/** One choice of a provider option. */
export interface OptionChoiceDTO {
  value: string;
  label: string;
}

/** An option a provider offers, with the arguments that pass it (`{value}` standing for the value). */
export interface ProviderOptionSpec {
  label: string;
  /** `select` (one of `choices`), `string` (any single line), `integer` (1 or more). */
  type: 'select' | 'string' | 'integer';
  args: string[];
  choices?: string[];
}

/** An option a person can choose for a provider's sessions (never the flags behind it). */
export interface ProviderOptionDTO {
  /** `model`, `effort`, `max_turns`, `permission_mode`, … */
  key: string;
  label: string;
  /** `select`, `string` or `integer`. */
  type: string;
  /** The provider's default (its `option_defaults`), or empty: the program's own. */
  default: string;
  choices: OptionChoiceDTO[];
}

/** A provider as a browser may see it: no command line, arguments, flags or environment. */
export interface ProviderPublicResponse {
  name: string;
  builtin: boolean;
  city_level: boolean;
  display_name: string;
  protocol: ProviderProtocol;
  /** The names of its permission modes. */
  permission_modes: string[];
  default_permission_mode?: string;
  /** Option defaults (the model, the effort, …), with `permission_mode` when it has a default one. */
  effective_defaults: { [key: string]: string };
  options_schema: ProviderOptionDTO[];
}

/** Body of `GET …/providers/public`. */
export interface ProviderPublicListBody {
  items: ProviderPublicResponse[];
  /** @isInt */
  total: number;
  /** Pass as `cursor` for the next page. */
  next_cursor?: string;
}

/** The settings of a `[providers.<name>]` table, as `POST` and `PATCH` take them. */
export interface ProviderSettings {
  /** What it inherits from: `builtin:<preset>` (`builtin:claude`), or another provider of the city by name. */
  base?: string;
  display_name?: string;
  /**
   * The program (a name on PATH, or a path). Without a `base`, the only setting a provider needs: it then runs
   * on the `pipe` runtime speaking the `text` protocol.
   * @pattern \S
   */
  command?: string;
  /** Arguments after the command (replace what is inherited). */
  args?: string[];
  /** Arguments appended after the inherited ones. */
  args_append?: string[];
  env?: { [name: string]: string };
  protocol?: ProviderProtocol;
  runtime?: ProviderRuntime;
  prompt_mode?: ProviderPromptMode;
  prompt_flag?: string;
  resume_args?: string[];
  system_prompt_args?: string[];
  settings_args?: string[];
  ready_prompt_prefix?: string;
  screen_rules?: string;
  /**
   * @isInt
   * @minimum 0
   * @maximum 3600000
   */
  ready_delay_ms?: number;
  /**
   * @isInt
   * @minimum 0
   * @maximum 3600000
   */
  quiet_ms?: number;
  /** A regular expression (JavaScript syntax). */
  pending_pattern?: string;
  permission_modes?: { [mode: string]: string[] };
  default_permission_mode?: string;
  /** Options its sessions start with (`model`, `effort`, …): each one the provider offers (`options_schema`). */
  option_defaults?: { [key: string]: string };
  process_names?: string[];
}

/** Body of `POST …/providers`: a name and the settings of its `[providers.<name>]` table. */
export interface ProviderCreateInputBody extends ProviderSettings {
  /**
   * Letters, digits, `.`, `_` and `-`, starting with a letter or digit.
   * @pattern ^[a-zA-Z0-9][a-zA-Z0-9._-]*$
   */
  name: string;
}

/**
 * Body of `PATCH …/provider/{name}`: the settings to change in its `[providers.<name>]` table. Tables (`env`,
 * `permission_modes`, `option_defaults`) are merged key by key; `null` removes a setting from the table (the
 * provider inherits it again).
 */
export interface ProviderUpdateInputBody {
  base?: string | null;
  display_name?: string | null;
  /** @pattern \S */
  command?: string | null;
  args?: string[] | null;
  args_append?: string[] | null;
  env?: { [name: string]: string } | null;
  protocol?: ProviderProtocol | null;
  runtime?: ProviderRuntime | null;
  prompt_mode?: ProviderPromptMode | null;
  prompt_flag?: string | null;
  resume_args?: string[] | null;
  system_prompt_args?: string[] | null;
  settings_args?: string[] | null;
  ready_prompt_prefix?: string | null;
  screen_rules?: string | null;
  /**
   * @isInt
   * @minimum 0
   * @maximum 3600000
   */
  ready_delay_ms?: number | null;
  /**
   * @isInt
   * @minimum 0
   * @maximum 3600000
   */
  quiet_ms?: number | null;
  pending_pattern?: string | null;
  permission_modes?: { [mode: string]: string[] } | null;
  default_permission_mode?: string | null;
  /** Options its sessions start with (`model`, `effort`, …): each one the provider offers (`options_schema`). */
  option_defaults?: { [key: string]: string } | null;
  process_names?: string[] | null;
}

/** Body of the 201 of `POST …/providers`. */
export interface ProviderCreatedOutputBody {
  /** `created`. */
  status: 'created';
  /** The created provider's name. */
  provider: string;
}
