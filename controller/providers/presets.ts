import { ACP_PRESETS } from './presets-acp.js';
import type { ProviderSpec } from './provider-spec.js';

/** A built-in provider: its spec, and the readiness probe that checks its tool is installed and signed in. */
export interface Preset {
  spec: ProviderSpec & { display_name: string; command: string; protocol: NonNullable<ProviderSpec['protocol']> };
  probe?: string;
}

/**
 * The built-in providers, as data: how each program is started, spoken to, resumed and put in a permission mode.
 * A city uses one as it is (`provider = "claude"`) or adjusts it (`[providers.mine] base = "builtin:claude"`).
 * Flags are those of the versions `../shared/reference/real-clis.md` records (Claude Code 2.1.197, Codex 0.169).
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
      // As configuration overrides, which `exec resume` takes too (it has no --sandbox flag).
      permission_modes: {
        default: [],
        'read-only': ['-c', 'sandbox_mode="read-only"'],
        'workspace-write': ['-c', 'sandbox_mode="workspace-write"'],
        'danger-full-access': ['-c', 'sandbox_mode="danger-full-access"'],
      },
      default_permission_mode: 'default',
      process_names: ['codex'],
    },
  },
  gemini: {
    probe: 'gemini',
    spec: {
      display_name: 'Gemini CLI',
      command: 'gemini',
      // `--acp` since Gemini CLI 0.33 (google-gemini/gemini-cli#21171 renamed `--experimental-acp`, which now only
      // warns that it is deprecated).
      args: ['--acp'],
      protocol: 'acp',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      permission_modes: { default: [], yolo: ['--yolo'] },
      default_permission_mode: 'default',
      process_names: ['gemini', 'node'],
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
