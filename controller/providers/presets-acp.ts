import type { Preset } from './presets.js';
import { CODEX_SANDBOX_MODES } from './codex-sandbox.js';

/**
 * Built-in providers that speak the Agent Client Protocol besides Gemini CLI: OpenCode (`opencode acp`), and the
 * ACP adapters of Claude Code and Codex — an alternative runtime for those two, where the ACP session's
 * permission requests, cancel and `session/load` take the place of stream-json and `codex exec`. Versions and
 * what each was tested with: docs/agent-clis.md.
 *
 * None has a readiness probe of its own: installed is `configured` (each takes its model provider and key from
 * its own configuration, which ctl does not read).
 */
export const ACP_PRESETS: Record<string, Preset> = {
  opencode: {
    spec: {
      display_name: 'OpenCode',
      command: 'opencode',
      // Its model and permissions come from its own configuration (opencode.json, OPENCODE_CONFIG_CONTENT): a
      // tool asks through `session/request_permission` where that says `ask` (bash runs unasked by default).
      // It has no system prompt flag: an agent's prompt is the session's first turn.
      args: ['acp'],
      protocol: 'acp',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      process_names: ['opencode'],
    },
  },
  'claude-acp': {
    spec: {
      display_name: 'Claude Code (ACP)',
      // @agentclientprotocol/claude-agent-acp (formerly @zed-industries/claude-code-acp), on the Claude Agent SDK.
      // Its permission mode is Claude Code's `permissions.defaultMode` setting (`auto` when unset); it takes no
      // flags, so an agent's prompt is the session's first turn.
      command: 'claude-agent-acp',
      args: [],
      protocol: 'acp',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      process_names: ['claude-agent-acp', 'node', 'claude'],
    },
  },
  'codex-acp': {
    spec: {
      display_name: 'Codex (ACP)',
      // @zed-industries/codex-acp: Codex's agent in one native process, configured like Codex ($CODEX_HOME/
      // config.toml) and by `-c key=value` overrides. Its npm launcher is a Node wrapper that runs the binary as
      // its child: the whole process group ends with the session.
      command: 'codex-acp',
      args: [],
      protocol: 'acp',
      runtime: 'pipe',
      prompt_mode: 'stdin',
      // As Codex takes them: developer instructions, and the sandbox as a configuration override.
      system_prompt_args: ['-c', 'developer_instructions={prompt_toml}'],
      // Its sandboxes, and Codex's approval policy that asks (`session/request_permission`) before every command
      // it does not know to be safe: the adapter, unlike `codex exec`, can ask a person.
      permission_modes: { ...CODEX_SANDBOX_MODES, untrusted: ['-c', 'approval_policy="untrusted"'] },
      default_permission_mode: 'default',
      process_names: ['codex-acp'],
    },
  },
};
