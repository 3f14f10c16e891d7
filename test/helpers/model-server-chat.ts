import type { ServerResponse } from 'node:http';

// The OpenAI Chat Completions API of the scripted model server (what OpenCode's OpenAI-compatible provider calls):
// reading a request's last message, and streaming a reply as `chat.completion.chunk`s. The rules that pick the
// reply are model-server.ts's, shared by every API.

interface ChatMessage {
  role?: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: { id?: string; function?: { name?: string; arguments?: string } }[];
}

type Part = { type?: string; text?: string };

function partsText(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return (content as Part[]).flatMap((p) => (p.type === 'text' && typeof p.text === 'string' ? [p.text] : []));
}

/** The last message decides: a tool's result (and which tool it answers), or the user's own text. */
export function readChat(
  body: Record<string, unknown>,
  isPeopleText: (text: string) => boolean,
): { userText?: string; toolResult?: string; toolName?: string; toolCommand?: string } {
  const messages = (Array.isArray(body.messages) ? body.messages : []) as ChatMessage[];
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const call = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === last.tool_call_id);
    return {
      toolResult: partsText(last.content).join('\n'),
      ...(call?.function?.name ? { toolName: call.function.name } : {}),
      ...commandOf(call?.function?.arguments),
    };
  }
  if (last?.role !== 'user') return {};
  // OpenCode's `run` quotes the message ("hello"); over ACP it does not, but an unquoted text is left as it is.
  const text = partsText(last.content).filter(isPeopleText).at(-1);
  return { userText: text?.replace(/^"([\s\S]*)"$/, '$1') };
}

/** The shell command a tool call ran (its `command`, a string or an argv), when its arguments name one. */
function commandOf(args: string | undefined): { toolCommand?: string } {
  try {
    const command = (JSON.parse(args ?? '{}') as { command?: unknown }).command;
    if (typeof command === 'string') return { toolCommand: command };
    if (Array.isArray(command)) return { toolCommand: command.map(String).join(' ') };
  } catch {
    // Arguments that are not JSON name no command: the reply then follows the result alone.
  }
  return {};
}

/** The names of the tools a Chat Completions request offers. */
export function chatToolNames(body: Record<string, unknown>): string[] {
  const tools = (Array.isArray(body.tools) ? body.tools : []) as { function?: { name?: string } }[];
  return tools.flatMap((t) => (t.function?.name ? [t.function.name] : []));
}

/** A streamed reply: its text in the given pieces (pausing `pauseMs` between them), or one tool call. */
export async function streamChat(
  res: ServerResponse,
  body: Record<string, unknown>,
  reply: { pieces: string[]; pauseMs: number; tool?: { id: string; name: string; input: Record<string, unknown> } },
): Promise<void> {
  const model = typeof body.model === 'string' ? body.model : 'scripted';
  const id = `chatcmpl-${Date.now().toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`,
    );
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, finish_reason: finish }]);
  delta({ role: 'assistant', content: '' });
  let outputTokens = 0;
  if (reply.tool) {
    const { id: callId, name, input } = reply.tool;
    delta({ tool_calls: [{ index: 0, id: callId, type: 'function', function: { name, arguments: '' } }] });
    delta({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(input) } }] });
    delta({}, 'tool_calls');
    outputTokens = 20;
  } else {
    for (const piece of reply.pieces) {
      if (res.destroyed) return;
      delta({ content: piece });
      outputTokens += piece.split(/\s+/).filter(Boolean).length;
      if (reply.pauseMs) await new Promise((resolve) => setTimeout(resolve, reply.pauseMs));
    }
    delta({}, 'stop');
  }
  const options = body.stream_options as { include_usage?: boolean } | undefined;
  if (options?.include_usage) {
    chunk([], { usage: { prompt_tokens: 12, completion_tokens: outputTokens, total_tokens: 12 + outputTokens } });
  }
  res.write('data: [DONE]\n\n');
  res.end();
}
