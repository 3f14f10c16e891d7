import { ACP_PRESETS } from './presets-acp.js';
import type { OptionSpec } from './provider-options.js';
import type { DefaultsFile, ProviderSpec } from './provider-spec.js';
import { CODEX_SANDBOX_MODES } from './codex-sandbox.js';

/** A model chosen by name: any the program knows (its own aliases included), passed as it is. */
const modelOption = (args: string[]): OptionSpec => ({ label: 'Model', type: 'string', args });

/**
 * A built-in provider: its spec, the readiness probe that checks its tool is installed and signed in, and the
 * defaults file its program is handed at every start (controller/sessions/defaults-file.ts).
 */
export interface Preset {
  spec: ProviderSpec & { display_name: string; command: string; protocol: NonNullable<ProviderSpec['protocol']> };
  probe?: string;
  defaults_file?: DefaultsFile;
}

/**
 * Gemini CLI's system defaults (the settings beneath the person's own), with its session clean-up off. At every
 * start the clean-up deletes chat files without a turn, and with each one every file sharing its 8-character id:
 * a `session/load` leaves such a file beside the conversation it loads, so the next start deleted the conversation
 * itself (docs/agent-clis.md). Where the file is read when the variable is unset: its `getSystemDefaultsPath`.
 */
const GEMINI_DEFAULTS_FILE: DefaultsFile = {
  env: 'GEMINI_CLI_SYSTEM_DEFAULTS_PATH',
  fallbacks: ['{env_dir:GEMINI_CLI_SYSTEM_SETTINGS_PATH}/system-defaults.json', '/etc/gemini-cli/system-defaults.json'],
  settings: { general: { sessionRetention: { enabled: false } } },
  root_only: true,
};

/**
 * The built-in providers, as data: how each program is started, spoken to, resumed and put in a permission mode.
 * A city uses one as it is (`provider = "claude"`) or adjusts it (`[providers.mine] base = "builtin:claude"`).
 * Flags are those of the versions docs/agent-clis.md lists as tested, checked against their `--help`: an option is
 * offered only where the program has a flag (or configuration override) for it.
 */
export const PRESETS: Record<string, Preset> = {
  claude: {
    probe: 'claude',
    spec: {
      display_name: 'Claude Code',
      command: 'claude',
      // Long-lived and structured: user messages in, system/assistant/result lines out; permission requests
      // come to us as `can_use_tool` control requests instead of a menu on a screen.
      args: [
        '-p',
        '--input-format',
        'stream-json',
        '--output-format',
        'stream-json',
        '--verbose',
        '--permission-prompt-tool',
        'stdio',
      ],
      protocol: 'stream-json',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      // A foreground subagent's replies are not written out unless asked for (its tool calls always are): with
      // them, a subagent's transcript (`…/session/{id}/agents/{agentId}`) holds its whole conversation.
      env: { CLAUDE_CODE_FORWARD_SUBAGENT_TEXT: '1' },
      resume_args: ['--resume', '{session_key}'],
      // An agent's prompt joins Claude Code's own system prompt; its hooks prime it at start and after compaction.
      system_prompt_args: ['--append-system-prompt-file', '{prompt_file}'],
      settings_args: ['--settings', '{settings_file}'],
      permission_modes: {
        default: ['--permission-mode', 'default'],
        acceptEdits: ['--permission-mode', 'acceptEdits'],
        plan: ['--permission-mode', 'plan'],
        bypassPermissions: ['--permission-mode', 'bypassPermissions'],
      },
      default_permission_mode: 'default',
      // Claude Code reports the model's context window with every turn's usage (`result.modelUsage`): no table.
      options_schema: {
        model: modelOption(['--model', '{value}']),
        effort: {
          label: 'Effort',
          type: 'select',
          args: ['--effort', '{value}'],
          choices: ['low', 'medium', 'high', 'xhigh', 'max'],
        },
        // Agentic turns (model calls) per message before Claude Code ends the turn (a hidden `-p` flag).
        max_turns: { label: 'Max turns', type: 'integer', args: ['--max-turns', '{value}'] },
      },
      process_names: ['claude', 'node'],
    },
  },
  codex: {
    probe: 'codex',
    spec: {
      display_name: 'Codex CLI',
      command: 'codex',
      // One `codex exec --json` per turn; after the first, `codex exec resume <thread_id>` continues it.
      args: ['exec', '--json', '--skip-git-repo-check'],
      protocol: 'codex-exec',
      runtime: 'pipe',
      prompt_mode: 'arg',
      resume_args: ['resume', '{session_key}'],
      // Its developer instructions (a configuration override each `codex exec` and `exec resume` takes).
      system_prompt_args: ['-c', 'developer_instructions={prompt_toml}'],
      permission_modes: CODEX_SANDBOX_MODES,
      default_permission_mode: 'default',
      // Both as flags `exec resume` takes too. Codex passes any effort through; these are the values it knows
      // (which of them a model takes is the model's: its catalog lists low to xhigh, max or ultra).
      options_schema: {
        model: modelOption(['-m', '{value}']),
        effort: {
          label: 'Reasoning effort',
          type: 'select',
          args: ['-c', 'model_reasoning_effort="{value}"'],
          choices: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', 'ultra'],
        },
      },
      // `codex exec --json` reports tokens but not the window: the windows of the models Codex 0.169 bundles.
      context_windows: {
        'gpt-5.5': 272_000,
        'gpt-5.6-luna': 272_000,
        'gpt-5.6-sol': 272_000,
        'gpt-5.6-terra': 272_000,
        'gpt-6-astra': 272_000,
        'gpt-6-luna': 272_000,
        'gpt-6-sol': 272_000,
        'gpt-6.1-sol': 272_000,
        'gpt-6.1-terra': 500_000,
        'codex-auto-review': 272_000,
      },
      process_names: ['codex'],
    },
  },
  gemini: {
    probe: 'gemini',
    defaults_file: GEMINI_DEFAULTS_FILE,
    spec: {
      display_name: 'Gemini CLI',
      command: 'gemini',
      // `--acp` since Gemini CLI 0.33 (google-gemini/gemini-cli#21171 renamed `--experimental-acp`, which now only
      // warns that it is deprecated). Tested with 0.61 (docs/agent-clis.md).
      args: ['--acp'],
      protocol: 'acp',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      // Left to itself it starts a second Node (~180 MB more) only to run with a larger heap.
      env: { GEMINI_CLI_NO_RELAUNCH: 'true' },
      // An agent's prompt is a context file: GEMINI.md in a directory of the session's it includes. Gemini CLI
      // reads context files only in a trusted workspace, so the agent's work dir is trusted for the run.
      system_prompt_args: ['--skip-trust', '--include-directories', '{context_dir:GEMINI.md}'],
      permission_modes: {
        default: ['--approval-mode', 'default'],
        auto_edit: ['--approval-mode', 'auto_edit'],
        yolo: ['--approval-mode', 'yolo'],
        plan: ['--approval-mode', 'plan'],
      },
      default_permission_mode: 'default',
      process_names: ['gemini', 'node'],
    },
  },
  // Qwen Code, a fork of Gemini CLI, over ACP. Its model and sign-in are its own (~/.qwen/settings.json, or
  // OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL for any OpenAI-compatible API). Tested with 0.24.
  qwen: {
    spec: {
      display_name: 'Qwen Code',
      command: 'qwen',
      args: ['--acp'],
      protocol: 'acp',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      // Left to itself it starts another Node (~200 MB more) only to run with a larger heap.
      env: { QWEN_CODE_NO_RELAUNCH: 'true' },
      // Appended to its own system prompt (it takes the text itself, not a file).
      system_prompt_args: ['--append-system-prompt', '{prompt_text}'],
      // Its own default is `auto` (a model call judges each tool call); ctl's is to ask, through `respond`.
      permission_modes: {
        default: ['--approval-mode', 'default'],
        'auto-edit': ['--approval-mode', 'auto-edit'],
        auto: ['--approval-mode', 'auto'],
        yolo: ['--approval-mode', 'yolo'],
        plan: ['--approval-mode', 'plan'],
      },
      default_permission_mode: 'default',
      process_names: ['qwen', 'node'],
    },
  },
  // OpenCode and the ACP adapters of Claude Code and Codex (presets-acp.ts).
  ...ACP_PRESETS,
  // Any command-line program that reads a line and answers: the one to base a custom provider on.
  generic: {
    spec: {
      display_name: 'Command-line program',
      command: 'cat',
      args: [],
      protocol: 'text',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      quiet_ms: 500,
    },
  },
};
