import type { ContentBlock, SessionUpdate, ToolCallContent } from '@agentclientprotocol/sdk';
import type { RuntimeSink } from '../runtime.js';

/** A tool's input or output as a line for people: `{"command":"ls"}`, cut at `limit`. */
export function describe(value: unknown, limit = 2000): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** A content block as text: its text, or what it is when it is not text (`[image image/png]`). */
function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType}]`;
    case 'resource_link':
      return `[${block.name}](${block.uri})`;
    case 'resource':
      return 'text' in block.resource ? block.resource.text : `[resource ${block.resource.uri}]`;
  }
}

function toolContentText(content: ToolCallContent[] | null | undefined): string | undefined {
  if (!content?.length) return undefined;
  return content
    .map((item) => {
      if (item.type === 'content') return blockText(item.content);
      if (item.type === 'diff') return `diff ${item.path}`;
      return `terminal ${item.terminalId}`;
    })
    .join('\n');
}

/**
 * One `session/update` told to the session: the agent's reply in chunks (`assistant`, marked `chunk` so the
 * conversation joins them without a separator), its thoughts and plan (kept in the transcript, not in the
 * conversation: they are not its reply), tool calls and their final results, and its notices. Returns the usage
 * it reports, for the turn's end. What is not conversation (its commands, modes, options, title, a user message
 * echoed back) is left out.
 */
export function reportUpdate(update: SessionUpdate, sink: RuntimeSink): { usage?: Record<string, unknown> } {
  switch (update.sessionUpdate) {
    case 'agent_message_chunk':
      sink.output('assistant', blockText(update.content), { chunk: true });
      return {};
    case 'agent_thought_chunk':
      sink.output('thought', blockText(update.content), { chunk: true });
      return {};
    case 'tool_call': {
      sink.output(
        'tool_call',
        `${update.title}${update.rawInput !== undefined ? ` ${describe(update.rawInput)}` : ''}`,
        {
          tool_call_id: update.toolCallId,
          ...(update.kind ? { tool_kind: update.kind } : {}),
          ...(update.status ? { status: update.status } : {}),
          ...(update.rawInput !== undefined ? { input: update.rawInput } : {}),
        },
      );
      if (update.status === 'completed' || update.status === 'failed') {
        reportToolResult(sink, update.toolCallId, update.status, update.content, update.rawOutput);
      }
      return {};
    }
    case 'tool_call_update':
      // Progress is not kept: only how the call ended.
      if (update.status === 'completed' || update.status === 'failed') {
        reportToolResult(sink, update.toolCallId, update.status, update.content, update.rawOutput);
      }
      return {};
    case 'plan':
      sink.output('plan', update.entries.map((entry) => `[${entry.status}] ${entry.content}`).join('\n'), {
        entries: update.entries,
      });
      return {};
    case 'notice':
      sink.output('notice', update.description ? `${update.title}: ${update.description}` : update.title, {
        severity: update.severity,
      });
      return {};
    case 'usage_update':
      return { usage: { used: update.used, size: update.size, ...(update.cost ? { cost: update.cost } : {}) } };
    default:
      return {};
  }
}

function reportToolResult(
  sink: RuntimeSink,
  toolCallId: string,
  status: 'completed' | 'failed',
  content: ToolCallContent[] | null | undefined,
  rawOutput: unknown,
): void {
  const text = toolContentText(content) ?? (rawOutput !== undefined ? describe(rawOutput) : status);
  sink.output('tool_result', text, {
    tool_call_id: toolCallId,
    status,
    ...(status === 'failed' ? { is_error: true } : {}),
  });
}
