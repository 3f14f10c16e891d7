import type { RuntimeSink } from '../runtime.js';
import type { TurnFailure } from '../turn-failure.js';

interface CodexItem {
  id?: string;
  type?: string;
  text?: string;
  message?: string;
  command?: string;
  aggregated_output?: string;
  exit_code?: number | null;
  status?: string;
  changes?: { path?: string; kind?: string }[];
}

interface CodexEvent {
  type?: string;
  thread_id?: string;
  item?: CodexItem;
  usage?: Record<string, unknown>;
  error?: { message?: string };
  message?: string;
}

/** What a turn's JSON lines have said so far: how it ended, if it has. */
export interface TurnOutcome {
  ended: boolean;
  usage?: Record<string, unknown>;
  failure?: TurnFailure;
}

/** A status code in Codex's words for an API failure (`last status: 429 Too Many Requests`). */
function statusIn(message: string): number | undefined {
  const match = /\bstatus:?\s*(\d{3})\b/i.exec(message) ?? /\b(\d{3}) [A-Z][a-z]+/.exec(message);
  return match ? Number(match[1]) : undefined;
}

/**
 * One line of `codex exec --json` onto the session: `thread.started` names the conversation (the key a later
 * turn resumes), `item.*` are the turn's output (the reply, commands and their output, file changes; reasoning
 * as a tool-like note), `turn.completed` ends the turn with its usage, `turn.failed` and `error` end it with the
 * provider's error. Codex reports some warnings as items of type `error` (a model it has no metadata for): they
 * are kept as error entries, and only `turn.failed` fails a turn.
 */
export function readCodexLine(line: string, sink: RuntimeSink, outcome: TurnOutcome): void {
  let event: CodexEvent;
  try {
    event = JSON.parse(line) as CodexEvent;
  } catch {
    if (line.trim()) sink.output('error', line);
    return;
  }
  switch (event.type) {
    case 'thread.started':
      if (event.thread_id) sink.sessionKey(event.thread_id);
      return;
    case 'item.completed':
      readItem(event.item ?? {}, sink);
      return;
    case 'item.started':
      if (event.item?.type === 'command_execution' && event.item.command) {
        sink.output('tool_call', event.item.command, { item_id: event.item.id, name: 'command_execution' });
      }
      return;
    case 'turn.completed':
      outcome.ended = true;
      if (event.usage) outcome.usage = event.usage;
      return;
    case 'turn.failed': {
      const message = event.error?.message ?? 'the turn failed';
      outcome.ended = true;
      outcome.failure = { message, ...(statusIn(message) !== undefined ? { status: statusIn(message) } : {}) };
      return;
    }
    case 'error': {
      const message = event.message ?? 'error';
      // A stream error: recorded; the turn.failed that follows (or the exit) ends the turn.
      sink.output('error', message);
      outcome.failure ??= { message, ...(statusIn(message) !== undefined ? { status: statusIn(message) } : {}) };
      return;
    }
    default:
    // turn.started, item.updated: nothing a person reads that the completed item will not say.
  }
}

function readItem(item: CodexItem, sink: RuntimeSink): void {
  const data = { item_id: item.id };
  switch (item.type) {
    case 'agent_message':
      if (item.text) sink.output('assistant', item.text);
      return;
    case 'reasoning':
      if (item.text) sink.output('tool_call', item.text, { ...data, name: 'reasoning' });
      return;
    case 'command_execution':
      sink.output('tool_result', item.aggregated_output ?? '', {
        ...data,
        name: 'command_execution',
        command: item.command,
        exit_code: item.exit_code,
      });
      return;
    case 'file_change':
      sink.output('tool_result', (item.changes ?? []).map((c) => `${c.kind ?? 'change'} ${c.path ?? ''}`).join('\n'), {
        ...data,
        name: 'file_change',
      });
      return;
    case 'error':
      if (item.message) sink.output('error', item.message, data);
      return;
    default:
      sink.output('tool_result', JSON.stringify(item), { ...data, name: item.type });
  }
}
