#!/usr/bin/env node
// A pretend coding agent that speaks Claude Code's stream-json protocol exactly as
// `claude -p --input-format stream-json --output-format stream-json --verbose --permission-prompt-tool stdio` does:
// one JSON object per line each way. It needs no model and no network, so sessions can be tried (and tested) for real.
//
//   any message         → `You said: <message>`
//   "run <command>"     → asks to use its Bash tool (a `can_use_tool` control request) and waits for the answer;
//                         allowed, it "runs" it and reports; denied, it says so
//   "slow <seconds>"    → answers after a while (something to interrupt)
//   "recall"            → repeats the first message of the conversation (it survives `--resume <session_id>`)
//   "argv"              → its command-line arguments, as JSON
//
// Flags: --resume <session_id> (continue a conversation), --permission-mode <mode> (bypassPermissions runs tools
// without asking), --model <name> (the model it says it is; default pretend-1). Like Claude Code it reports each
// model call's usage on its assistant messages — its context grows 90 tokens a message, from 10 — and its
// context window (1000 tokens) in its result's `modelUsage`. Conversations are kept in $STREAM_AGENT_STATE (default: a directory under the temp dir).
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const stateDir = process.env.STREAM_AGENT_STATE ?? join(tmpdir(), 'stream-json-agent');
mkdirSync(stateDir, { recursive: true });
const sessionId = flag('--resume') ?? randomUUID();
const historyFile = join(stateDir, `${sessionId}.jsonl`);
let permissionMode = flag('--permission-mode') ?? 'default';
const model = flag('--model') ?? 'pretend-1';
const CONTEXT_WINDOW = 1000;
let history = [];
try {
  history = readFileSync(historyFile, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
} catch {
  // a new conversation
}

const send = (frame) => process.stdout.write(`${JSON.stringify(frame)}\n`);
const callUsage = () => ({ input_tokens: 10, cache_read_input_tokens: 90 * (history.length - 1), output_tokens: 1 });
const assistant = (content) =>
  send({
    type: 'assistant',
    message: { id: `msg_${randomUUID()}`, role: 'assistant', model, content, usage: callUsage() },
    session_id: sessionId,
  });

let initialised = false;
let turn; // the turn in progress: { text, cancelled, wake }
const waiting = []; // turns received, not yet started
let turns = 0;
const waitingForPermission = new Map(); // request_id → resolve(decision)

function result(subtype, text, started) {
  send({
    type: 'result',
    subtype,
    is_error: subtype !== 'success',
    result: text,
    session_id: sessionId,
    num_turns: turns,
    duration_ms: Date.now() - started,
    total_cost_usd: 0,
    usage: { input_tokens: 10, output_tokens: text.length },
    modelUsage: { [model]: { inputTokens: 10, outputTokens: text.length, contextWindow: CONTEXT_WINDOW } },
  });
}

function sleep(ms, current) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    current.wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

async function askPermission(tool, input) {
  if (permissionMode === 'bypassPermissions') return { behavior: 'allow', updatedInput: input };
  const requestId = randomUUID();
  const decision = new Promise((resolve) => waitingForPermission.set(requestId, resolve));
  send({
    type: 'control_request',
    request_id: requestId,
    request: { subtype: 'can_use_tool', tool_name: tool, input, tool_use_id: `toolu_${requestId.slice(0, 8)}` },
  });
  return decision;
}

async function handle(current) {
  const { text } = current;
  const started = Date.now();
  turns++;
  turn = current;
  if (current.cancelled) {
    // Interrupted before it began: it ends at once, as an interrupted turn does.
    turn = undefined;
    result('error_during_execution', '', started);
    return;
  }
  if (!initialised) {
    initialised = true;
    send({
      type: 'system',
      subtype: 'init',
      session_id: sessionId,
      cwd: process.cwd(),
      tools: ['Bash'],
      model,
      permissionMode,
    });
  }
  history.push({ role: 'user', text });
  appendFileSync(historyFile, `${JSON.stringify({ role: 'user', text })}\n`);
  let reply;
  if (text.startsWith('run ')) {
    const input = { command: text.slice(4) };
    const toolUseId = `toolu_${randomUUID().slice(0, 8)}`;
    assistant([{ type: 'tool_use', id: toolUseId, name: 'Bash', input }]);
    const decision = await askPermission('Bash', input);
    if (current.cancelled) return;
    if (decision.behavior === 'allow') {
      const ran = decision.updatedInput?.command ?? input.command;
      send({
        type: 'user',
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: `ran: ${ran}` }] },
        session_id: sessionId,
      });
      reply = `I ran \`${ran}\`.`;
    } else {
      send({
        type: 'user',
        message: {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: toolUseId, content: decision.message, is_error: true }],
        },
        session_id: sessionId,
      });
      reply = `I was not allowed to run it: ${decision.message}`;
    }
  } else if (text.startsWith('slow ')) {
    await sleep(Number(text.slice(5)) * 1000, current);
    if (current.cancelled) return;
    reply = 'Done, slowly.';
  } else if (text === 'argv') {
    reply = `argv: ${JSON.stringify(args)}`;
  } else if (text === 'recall') {
    reply = `You first said: ${history[0].text}`;
  } else {
    reply = `You said: ${text}`;
  }
  assistant([{ type: 'text', text: reply }]);
  result('success', reply, started);
  turn = undefined;
}

function control(frame) {
  const request = frame.request ?? {};
  if (request.subtype === 'interrupt') {
    send({ type: 'control_response', response: { subtype: 'success', request_id: frame.request_id } });
    if (!turn && waiting.length) waiting[0].cancelled = true;
    if (turn) {
      const current = turn;
      current.cancelled = true;
      current.wake?.();
      for (const [id, resolve] of waitingForPermission) {
        waitingForPermission.delete(id);
        resolve({ behavior: 'deny', message: 'interrupted' });
      }
      turn = undefined;
      result('error_during_execution', '', Date.now());
    }
    return;
  }
  if (request.subtype === 'set_permission_mode') {
    permissionMode = request.mode;
    send({ type: 'control_response', response: { subtype: 'success', request_id: frame.request_id } });
    return;
  }
  send({
    type: 'control_response',
    response: { subtype: 'error', request_id: frame.request_id, error: `unknown request ${request.subtype}` },
  });
}

// Turns run one after another, as the real program queues messages that arrive during a turn.
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  const frame = JSON.parse(line);
  if (frame.type === 'user') {
    const content = frame.message?.content;
    const text = typeof content === 'string' ? content : (content ?? []).map((c) => c.text ?? '').join('');
    const next = { text, cancelled: false };
    waiting.push(next);
    queue = queue.then(() => handle(waiting.shift()));
  } else if (frame.type === 'control_response') {
    const resolve = waitingForPermission.get(frame.response?.request_id);
    if (resolve) {
      waitingForPermission.delete(frame.response.request_id);
      resolve(frame.response.response);
    }
  } else if (frame.type === 'control_request') {
    control(frame);
  }
});
