import type { SessionHookEvent } from '../../shared/dto/sessions.js';

/**
 * What a program's hook reported, as far as a session needs it: read from the JSON Claude Code hands each hook on
 * its stdin (checked against Claude Code 2.1.332: every hook gets `session_id`, `transcript_path`, `cwd` and
 * `hook_event_name`; the fields below are those of the hooks that carry them). Anything else in it is ignored.
 */
export interface ProgramHook {
  event: SessionHookEvent;
  /** The program's own conversation id (`session_id`). */
  conversation?: string;
  /** `UserPromptSubmit`: the prompt as submitted. */
  prompt?: string;
  /** `PreToolUse`, `PostToolUse`, `PermissionRequest`: the tool and its input. */
  toolName?: string;
  toolInput?: unknown;
  /** `Notification`: `permission_prompt`, `idle_prompt`, `elicitation_dialog`, `auth_success`, … */
  notificationType?: string;
  /** `Notification`: what it says (`Claude needs your permission`). */
  message?: string;
  /** `Stop`, `StopFailure`, `SubagentStop`: the text of the last assistant message, the turn's reply. */
  lastMessage?: string;
  /** `StopFailure`: what failed (`error`, `error_details`). */
  error?: string;
  /** `SubagentStop`: the subagent's id and type. */
  agentId?: string;
  agentType?: string;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The hook `event` with what its stdin JSON said. */
export function programHook(event: SessionHookEvent, input: Record<string, unknown> = {}): ProgramHook {
  const hook: ProgramHook = { event };
  const fields: [keyof ProgramHook, string][] = [
    ['conversation', 'session_id'],
    ['prompt', 'prompt'],
    ['toolName', 'tool_name'],
    ['notificationType', 'notification_type'],
    ['message', 'message'],
    ['lastMessage', 'last_assistant_message'],
    ['agentId', 'agent_id'],
    ['agentType', 'agent_type'],
  ];
  for (const [key, field] of fields) {
    const value = text(input[field]);
    if (value !== undefined) (hook as unknown as Record<string, string>)[key] = value;
  }
  if (input.tool_input !== undefined) hook.toolInput = input.tool_input;
  // StopFailure's `error` is a category (`rate_limit`, …), its details the service's words.
  const error = [text(input.error), text(input.error_details)].filter(Boolean).join(': ');
  if (event === 'StopFailure') hook.error = error || 'the turn failed';
  return hook;
}

/** A tool call as a person reads it: `Bash(make test)`, the tool's main argument where it has one. */
export function toolCallText(name: string | undefined, input: unknown): string {
  if (name === undefined) return 'a tool';
  const args = (input ?? {}) as Record<string, unknown>;
  const main = ['command', 'file_path', 'path', 'url', 'pattern', 'query', 'prompt']
    .map((k) => args[k])
    .find((v) => typeof v === 'string');
  if (typeof main !== 'string') return name;
  const oneLine = main.replace(/\s+/g, ' ').trim();
  return `${name}(${oneLine.length > 200 ? `${oneLine.slice(0, 199)}…` : oneLine})`;
}

/** Whether two tool inputs are the same call's (a late PostToolUse must not clear the next call's prompt). */
export function sameToolCall(a: { name?: string; input?: unknown }, b: { name?: string; input?: unknown }): boolean {
  return a.name === b.name && JSON.stringify(a.input ?? null) === JSON.stringify(b.input ?? null);
}
