import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  geminiError,
  geminiToolNames,
  isGeminiPath,
  readGemini,
  schemaOf,
  valueOf,
  writeGemini,
} from './model-api-gemini.js';
import { chatToolNames, readChat, streamChat } from './model-server-chat.js';

// A scripted model server for tests with the real agent CLIs, offline: the Anthropic Messages API (what Claude
// Code and its ACP adapter call), the OpenAI Responses API (what Codex and its ACP adapter call) and the OpenAI
// Chat Completions API (what OpenCode and Qwen Code call, model-server-chat.ts) and the Gemini API (what Gemini
// CLI calls, model-api-gemini.ts), all streaming, answering by a few rules a test reads at a glance:
//
//   - a user text is echoed back: `You said: <text>`;
//   - `run: <command>` asks for a tool call (Claude: `Bash {command}`; Codex: `shell {command: [sh, -c, …]}`;
//     or whichever shell tool the request offers, see `fitShellTool`); once the tool's result comes back, the
//     reply is `Tool said: <result>`;
//   - `slow: <text>` streams the echo one word every 200 ms (a turn long enough to interrupt);
//   - `rate-limit` answers 429 (with `retry-after`), `overloaded` answers 529/503: the provider's errors;
//   - a text starting `say: <text>` replies exactly `<text>`;
//   - `delegate: <task>` asks Claude Code for a subagent (its `Agent` tool, in the foreground) whose prompt is
//     `<task>` — the subagent's own requests follow the same rules — and once the subagent's report comes back
//     the main reply is `Delegated work is done.`; `delegate in background: <task>` the same, with the subagent
//     in the background, and the turn Claude Code begins once it is done is answered
//     `The subagent reported: <its report>`;
//   - the work message an agent's session is handed (`Work on bead <id>: …`) is worked as a real agent would:
//     first a tool call reading the bead (`ctl bead show <id>`); once that comes back, a tool call that runs the
//     command its description names after `run:` (if it does: e.g. edit a file and commit it), prints the
//     session's `CTL_BEAD` and `CTL_AGENT`, and closes the bead with `ctl`;
//   - a review sent back (`Changes were requested on bead <id> …`, or `The check of bead <id> failed …`) is mended
//     the same way: a tool call running the command the message names after `run:` (a line of the check's output
//     that starts so, else the first in a person's request) and closing the bead again.
//
// It records every request (path and body) so that a test can check what the CLI sent, e.g. that a resumed
// conversation carries its earlier turns.

export interface ModelRequest {
  api: 'messages' | 'responses' | 'chat' | 'gemini';
  path: string;
  body: Record<string, unknown>;
  /** The user text the rules answered (undefined when the request ended a tool call). */
  userText: string | undefined;
}

export interface ModelServer {
  /** `http://127.0.0.1:PORT` (Claude Code's ANTHROPIC_BASE_URL; Codex's base_url is this plus `/v1`). */
  readonly url: string;
  readonly requests: ModelRequest[];
  /** Answers every request with this HTTP status until cleared (a server that is down or overloaded). */
  failWith(status: number | undefined): void;
  close(): Promise<void>;
}

const SLOW_WORD_MS = 200;

interface Reply {
  text?: string;
  tool?: { name: string; input: Record<string, unknown> };
  slow?: boolean;
  status?: number;
}

/** What the rules answer to the last user text, or to a tool's result. */
export function replyTo(
  userText: string | undefined,
  toolResult: string | undefined,
  api: ModelRequest['api'],
  toolName?: string,
  taskResult?: string,
  toolCommand?: string,
): Reply {
  if (taskResult !== undefined) return { text: `The subagent reported: ${taskResult.trim()}` };
  if (toolResult !== undefined && toolName === 'Agent') return { text: 'Delegated work is done.' };
  const read = toolResult !== undefined && /^ctl bead show (\S+)$/.exec(toolCommand ?? '');
  if (read) {
    // The bead's description (a `Description` field of `ctl bead show`) says what to run.
    const run = /\brun:\s*(.+)$/m.exec(toolResult)?.[1]?.trim();
    const close = `echo "bead=$CTL_BEAD agent=$CTL_AGENT" && ctl bead close ${read[1]} --reason done`;
    return bash(api, run ? `${run} && ${close}` : close, 'Do the work and close the bead');
  }
  if (toolResult !== undefined) return { text: `Tool said: ${toolResult.trim()}` };
  const text = (userText ?? '').trim();
  if (/\brate-limit\b/.test(text)) return { status: 429 };
  if (/\boverloaded\b/.test(text)) return { status: api === 'messages' ? 529 : 503 };
  const run = /^run:\s*(.+)$/s.exec(text);
  if (run) return bash(api, run[1], 'Run the command the test asked for');
  const delegate = /^delegate( in background)?:\s*(.+)$/s.exec(text);
  if (delegate && api === 'messages') {
    const input = { description: 'Delegated task', prompt: delegate[2], subagent_type: 'general-purpose' };
    return { tool: { name: 'Agent', input: delegate[1] ? input : { ...input, run_in_background: false } } };
  }
  const slow = /^slow:\s*(.+)$/s.exec(text);
  if (slow) return { text: `You said: ${slow[1]}`, slow: true };
  const changes = /^(?:Changes were requested on|The check of) bead (\S+)/.exec(text);
  if (changes) {
    // A line of its own (a check's output saying how to mend it) before one within a sentence (a person's words).
    const mend = (/^run:\s*(.+)$/m.exec(text) ?? /\brun:\s*(.+)$/m.exec(text))?.[1]?.trim();
    const close = `ctl bead close ${changes[1]} --reason done`;
    return bash(api, mend ? `${mend} && ${close}` : close, 'Make the requested changes and close the bead');
  }
  const work = /^Work on bead (\S+):/.exec(text);
  if (work) return bash(api, `ctl bead show ${work[1]}`, 'Read the bead');
  const say = /^say:\s*(.+)$/s.exec(text);
  if (say) return { text: say[1] };
  return { text: `You said: ${text}` };
}

/** A shell tool call: Claude Code's Bash, Codex's shell. */
function bash(api: ModelRequest['api'], command: string, description: string): Reply {
  return api === 'messages'
    ? { tool: { name: 'Bash', input: { command, description } } }
    : { tool: { name: 'shell', input: { command: ['sh', '-c', command] } } };
}

type Block = {
  type?: string;
  text?: string;
  content?: unknown;
  id?: string;
  name?: string;
  tool_use_id?: string;
  input?: { command?: unknown };
};

/** What a request asks the rules about: a user's text, or a tool call's result (with its tool and command). */
interface Read {
  userText?: string;
  toolResult?: string;
  toolName?: string;
  toolCommand?: string;
  taskResult?: string;
}

function textOf(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return (content as Block[]).flatMap((b) =>
    (b.type === 'text' || b.type === 'input_text') && typeof b.text === 'string' ? [b.text] : [],
  );
}

/** The CLIs add their own context as user text in angle brackets (`<system-reminder>`, `<environment_context>`). */
function isPeopleText(text: string): boolean {
  return !text.trimStart().startsWith('<') && text.trim() !== '';
}

/** Messages API: the last user message's own text, or the result of the tool call it answers (and its tool). */
function readMessages(body: Record<string, unknown>): Read {
  const messages = (body.messages ?? []) as { role?: string; content?: unknown }[];
  // Claude Code may put a `system` message after the user's (its list of agents and skills).
  const last = messages.filter((m) => m.role !== 'system').at(-1);
  if (!last || last.role !== 'user') return {};
  if (Array.isArray(last.content)) {
    const result = (last.content as Block[]).find((b) => b.type === 'tool_result');
    if (result) {
      const calls = messages.flatMap((m) =>
        m.role === 'assistant' && Array.isArray(m.content) ? (m.content as Block[]) : [],
      );
      const call = calls.find((b) => b.type === 'tool_use' && b.id === result.tool_use_id);
      return {
        toolResult: textOf(result.content).join('\n') || JSON.stringify(result.content ?? ''),
        ...(call?.name ? { toolName: call.name } : {}),
        ...(typeof call?.input?.command === 'string' ? { toolCommand: call.input.command } : {}),
      };
    }
  }
  const texts = textOf(last.content);
  // Claude Code tells the model a background subagent is done in a `<task-notification>` of its own.
  const notified = texts.map((t) => /<task-notification>[\s\S]*?<result>([\s\S]*?)<\/result>/.exec(t)).find(Boolean);
  if (notified) return { taskResult: notified[1] };
  return { userText: texts.filter(isPeopleText).at(-1) };
}

/** Responses API: the newest input item decides — a function call's output, or a user message. */
function readResponses(body: Record<string, unknown>): Read {
  const input = body.input;
  if (typeof input === 'string') return { userText: input };
  const items = (Array.isArray(input) ? input : []) as {
    type?: string;
    role?: string;
    content?: unknown;
    output?: unknown;
    call_id?: string;
    arguments?: string;
  }[];
  const last = items.at(-1);
  if (last?.type === 'function_call_output') {
    const output = typeof last.output === 'string' ? last.output : JSON.stringify(last.output);
    const call = items.find((i) => i.type === 'function_call' && i.call_id === last.call_id);
    const toolCommand = shellCommandOf(call?.arguments);
    const withCommand = toolCommand !== undefined ? { toolCommand } : {};
    // Codex wraps a shell result as JSON `{output, metadata}`.
    try {
      const parsed = JSON.parse(output) as { output?: string };
      if (typeof parsed.output === 'string') return { toolResult: parsed.output, ...withCommand };
    } catch {
      // plain text
    }
    return { toolResult: output, ...withCommand };
  }
  const users = items.filter((i) => i.role === 'user');
  for (let i = users.length - 1; i >= 0; i--) {
    const text = textOf(users[i].content).filter(isPeopleText).at(-1);
    if (text !== undefined) return { userText: text };
  }
  return {};
}

/**
 * The command of a Codex shell call's arguments: `shell`'s `sh -c` script (`{"command": ["sh", "-c", script]}`)
 * or `exec_command`'s `cmd` (what Codex 0.169 and its ACP adapter offer).
 */
function shellCommandOf(args: string | undefined): string | undefined {
  try {
    const { command, cmd } = JSON.parse(args ?? '') as { command?: unknown; cmd?: unknown };
    if (typeof cmd === 'string') return cmd;
    return Array.isArray(command) && typeof command[2] === 'string' ? command[2] : undefined;
  } catch {
    return undefined;
  }
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function sse(res: ServerResponse, event: string, data: Record<string, unknown>): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Pieces a reply streams in: words (slowly, for `slow:`), or the whole text at once. */
function pieces(reply: Reply): string[] {
  const text = reply.text ?? '';
  return reply.slow ? text.split(/(?<= )/) : [text];
}

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${(++counter).toString().padStart(6, '0')}`;

async function streamMessages(res: ServerResponse, body: Record<string, unknown>, reply: Reply): Promise<void> {
  const model = typeof body.model === 'string' ? body.model : 'scripted';
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': nextId('req') });
  const usage = { input_tokens: 12, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  sse(res, 'message_start', {
    message: {
      id: nextId('msg'),
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  });
  let outputTokens = 0;
  if (reply.tool) {
    sse(res, 'content_block_start', {
      index: 0,
      content_block: { type: 'tool_use', id: nextId('toolu'), name: reply.tool.name, input: {} },
    });
    sse(res, 'content_block_delta', {
      index: 0,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(reply.tool.input) },
    });
    sse(res, 'content_block_stop', { index: 0 });
    outputTokens = 20;
  } else {
    sse(res, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    for (const piece of pieces(reply)) {
      if (res.destroyed) return;
      sse(res, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } });
      outputTokens += piece.split(/\s+/).filter(Boolean).length;
      if (reply.slow) await pause(SLOW_WORD_MS);
    }
    sse(res, 'content_block_stop', { index: 0 });
  }
  sse(res, 'message_delta', {
    delta: { stop_reason: reply.tool ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: outputTokens },
  });
  sse(res, 'message_stop', {});
  res.end();
}

async function streamResponses(res: ServerResponse, body: Record<string, unknown>, reply: Reply): Promise<void> {
  const model = typeof body.model === 'string' ? body.model : 'scripted';
  const id = nextId('resp');
  const created_at = Math.floor(Date.now() / 1000);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const response = (status: string, output: unknown[]) => ({
    id,
    object: 'response',
    created_at,
    status,
    model,
    output,
    ...(status === 'completed'
      ? {
          usage: {
            input_tokens: 12,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 5,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 17,
          },
        }
      : {}),
  });
  sse(res, 'response.created', { response: response('in_progress', []) });
  let item: Record<string, unknown>;
  if (reply.tool) {
    item = {
      id: nextId('fc'),
      type: 'function_call',
      status: 'completed',
      call_id: nextId('call'),
      name: reply.tool.name,
      arguments: JSON.stringify(reply.tool.input),
    };
    sse(res, 'response.output_item.added', {
      output_index: 0,
      item: { ...item, status: 'in_progress', arguments: '' },
    });
    sse(res, 'response.function_call_arguments.done', {
      item_id: item.id,
      output_index: 0,
      arguments: item.arguments,
    });
  } else {
    const itemId = nextId('msg');
    const part = { type: 'output_text', text: '', annotations: [] };
    sse(res, 'response.output_item.added', {
      output_index: 0,
      item: { id: itemId, type: 'message', status: 'in_progress', role: 'assistant', content: [] },
    });
    sse(res, 'response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part });
    for (const delta of pieces(reply)) {
      if (res.destroyed) return;
      sse(res, 'response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta });
      if (reply.slow) await pause(SLOW_WORD_MS);
    }
    const text = reply.text ?? '';
    sse(res, 'response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text });
    sse(res, 'response.content_part.done', {
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part: { ...part, text },
    });
    item = {
      id: itemId,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    };
  }
  sse(res, 'response.output_item.done', { output_index: 0, item });
  sse(res, 'response.completed', { response: response('completed', [item]) });
  res.end();
}

function fail(res: ServerResponse, api: ModelRequest['api'], status: number): void {
  const headers = { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '30' } : {}) };
  res.writeHead(status, headers);
  const message = status === 429 ? 'rate limited by the scripted model server' : `scripted failure ${status}`;
  res.end(
    JSON.stringify(
      api === 'messages'
        ? { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'overloaded_error', message } }
        : api === 'gemini'
          ? geminiError(status, message)
          : { error: { type: status === 429 ? 'rate_limit_exceeded' : 'server_error', message } },
    ),
  );
}

function apiOf(path: string): ModelRequest['api'] | undefined {
  if (path.endsWith('/messages')) return 'messages';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/chat/completions')) return 'chat';
  if (isGeminiPath(path)) return 'gemini';
  return undefined;
}

/** The names of the tools a Messages or Responses request offers. */
function toolNames(body: Record<string, unknown>): string[] {
  const tools = (Array.isArray(body.tools) ? body.tools : []) as { name?: string }[];
  return tools.flatMap((t) => (typeof t.name === 'string' ? [t.name] : []));
}

/**
 * The shell tools of the agent CLIs, by name, and the input each takes. The rules ask for `Bash` (Claude Code) or
 * `shell` (Codex exec); other CLIs, and the ACP adapters, offer theirs under other names: OpenCode `bash`, the
 * Codex ACP adapter `exec_command`, Gemini CLI and Qwen Code `run_shell_command`.
 */
const SHELL_TOOLS: Record<string, (command: string) => Record<string, unknown>> = {
  Bash: (command) => ({ command, description: 'Run the command the test asked for' }),
  shell: (command) => ({ command: ['sh', '-c', command] }),
  bash: (command) => ({ command, description: 'Run the command the test asked for' }),
  exec_command: (cmd) => ({ cmd }),
  run_shell_command: (command) => ({ command }),
};

/**
 * A shell tool call the request can take: the one the rules asked for when it is offered, else the shell tool the
 * request offers. A request with no tools at all (a CLI's own side calls: titles, summaries) gets text instead.
 */
function fitShellTool(reply: Reply, offered: string[]): Reply {
  const tool = reply.tool;
  if (!tool || !(tool.name in SHELL_TOOLS) || offered.includes(tool.name)) return reply;
  const command = Array.isArray(tool.input.command) ? String(tool.input.command.at(-1)) : String(tool.input.command);
  const name = offered.find((n) => n in SHELL_TOOLS);
  if (!name) return offered.length === 0 ? { text: `No tools here to run: ${command}` } : reply;
  return { tool: { name, input: SHELL_TOOLS[name](command) } };
}

/**
 * Gemini CLI's answer: as the rules say, except for its own helper requests that ask for JSON (its model router,
 * its next-speaker check), which get a value of the schema they give.
 */
async function answerGemini(res: ServerResponse, path: string, body: Record<string, unknown>, reply: Reply) {
  const schema = schemaOf(body);
  const fitted = schema !== undefined ? { json: valueOf(schema) } : reply;
  await writeGemini(res, path, fitted, pieces(reply), async () => {
    if (reply.slow) await pause(SLOW_WORD_MS);
  });
}

/** Starts the scripted model server on a free loopback port. */
export async function startModelServer(): Promise<ModelServer> {
  const requests: ModelRequest[] = [];
  let failing: number | undefined;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      const api = apiOf(path);
      if (req.method !== 'POST' || !api) {
        // Claude Code's `HEAD /` reachability check, and anything else: a plain answer.
        await readBody(req);
        res.writeHead(req.method === 'HEAD' || path === '/' ? 200 : 404, { 'content-type': 'application/json' });
        res.end(req.method === 'HEAD' ? undefined : '{}');
        return;
      }
      const body = await readBody(req);
      const read: {
        userText?: string;
        toolResult?: string;
        toolName?: string;
        taskResult?: string;
        toolCommand?: string;
      } =
        api === 'messages'
          ? readMessages(body)
          : api === 'chat'
            ? readChat(body, isPeopleText)
            : api === 'gemini'
              ? readGemini(body, isPeopleText)
              : readResponses(body);
      requests.push({ api, path, body, userText: read.userText });
      if (failing !== undefined) return fail(res, api, failing);
      const reply = fitShellTool(
        replyTo(read.userText, read.toolResult, api, read.toolName, read.taskResult, read.toolCommand),
        api === 'chat' ? chatToolNames(body) : api === 'gemini' ? geminiToolNames(body) : toolNames(body),
      );
      if (reply.status !== undefined) return fail(res, api, reply.status);
      if (api === 'gemini') return answerGemini(res, path, body, reply);
      if (api === 'chat') {
        const tool = reply.tool && { id: nextId('call'), ...reply.tool };
        return streamChat(res, body, { pieces: pieces(reply), pauseMs: reply.slow ? SLOW_WORD_MS : 0, tool });
      }
      await (api === 'messages' ? streamMessages(res, body, reply) : streamResponses(res, body, reply));
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failWith(status) {
      failing = status;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
