#!/usr/bin/env node
// A pretend coding agent that speaks the Agent Client Protocol (JSON-RPC over stdio), built on the official SDK
// (@agentclientprotocol/sdk) as Gemini CLI and the Claude Code and Codex ACP adapters are. It needs no model and no
// network, so ACP sessions can be tried (and tested) for real.
//
//   any message        → `You said: <message>`, streamed word by word as agent_message_chunk updates
//   "run: <command>"   → reports a tool call and asks permission for it (session/request_permission); allowed or
//                        denied, it says so. It never runs anything: it only reports what it would have run.
//   "slow: <text>"     → streams <text> a word every 200 ms; session/cancel stops it (stopReason `cancelled`)
//   "recall"           → repeats the first message of the conversation (it survives session/load)
//   "think: <text>"    → reports <text> as its reasoning (agent_thought_chunk), then answers as any message
//
// Conversations are kept in $ACP_AGENT_STATE (default: a directory under the temp dir), one JSON Lines file per
// session, so it advertises loadSession: a loaded session replays its history as session/update notifications.
// With ACP_AGENT_NO_LOAD=1 it does not, as agents that cannot resume a conversation.
/* global AbortController */
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import * as acp from '@agentclientprotocol/sdk';

const stateDir = process.env.ACP_AGENT_STATE ?? join(tmpdir(), 'acp-agent');
mkdirSync(stateDir, { recursive: true });

/** sessionId → { history: [{ role, text }], turn: AbortController | undefined } */
const sessions = new Map();

const historyFile = (sessionId) => join(stateDir, `${encodeURIComponent(sessionId)}.jsonl`);

function remember(sessionId, role, text) {
  sessions.get(sessionId).history.push({ role, text });
  appendFileSync(historyFile(sessionId), `${JSON.stringify({ role, text })}\n`);
}

function sessionOf(sessionId) {
  const session = sessions.get(sessionId);
  if (!session) throw acp.RequestError.sessionNotFound(sessionId);
  return session;
}

const update = (client, sessionId, change) =>
  client.notify(acp.methods.client.session.update, { sessionId, update: change });

const say = (client, sessionId, text) =>
  update(client, sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } });

/** Streams `text` a word at a time (the space before each word goes with it); aborts with `signal`. */
async function stream(client, sessionId, text, signal, pauseMs = 0) {
  const words = text.split(/(?= )/);
  for (const word of words) {
    if (pauseMs) await sleep(pauseMs, undefined, { signal });
    signal.throwIfAborted();
    await say(client, sessionId, word);
  }
}

/** "run: <command>": a tool call, a permission request, and what came of it. */
async function runCommand(client, sessionId, command, signal) {
  const toolCallId = `call_${randomUUID().slice(0, 8)}`;
  const toolCall = { toolCallId, title: `Run ${command}`, kind: 'execute', status: 'pending', rawInput: { command } };
  await update(client, sessionId, { sessionUpdate: 'tool_call', ...toolCall });
  const answer = await client.request(
    acp.methods.client.session.requestPermission,
    {
      sessionId,
      toolCall,
      options: [
        { optionId: 'yes-once', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'yes-always', name: 'Always allow', kind: 'allow_always' },
        { optionId: 'no-once', name: 'Deny', kind: 'reject_once' },
      ],
    },
    { cancellationSignal: signal },
  );
  if (answer.outcome.outcome === 'cancelled') return undefined;
  const allowed = answer.outcome.optionId !== 'no-once';
  await update(client, sessionId, {
    sessionUpdate: 'tool_call_update',
    toolCallId,
    status: allowed ? 'completed' : 'failed',
    content: [
      {
        type: 'content',
        content: { type: 'text', text: allowed ? `would run: ${command} (nothing was run)` : 'denied' },
      },
    ],
  });
  return allowed ? `Allowed: ${command} (${answer.outcome.optionId})` : `Denied: ${command}`;
}

async function prompt({ params, client }) {
  const session = sessionOf(params.sessionId);
  session.turn?.abort();
  const turn = new AbortController();
  session.turn = turn;
  const text = params.prompt
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('');
  remember(params.sessionId, 'user', text);
  let reply;
  try {
    if (text.startsWith('run: ')) {
      reply = await runCommand(client, params.sessionId, text.slice(5), turn.signal);
      if (reply === undefined) return { stopReason: 'cancelled' };
      await stream(client, params.sessionId, reply, turn.signal);
    } else if (text.startsWith('slow: ')) {
      reply = text.slice(6);
      await stream(client, params.sessionId, reply, turn.signal, 200);
    } else if (text.startsWith('think: ')) {
      await update(client, params.sessionId, {
        sessionUpdate: 'agent_thought_chunk',
        content: { type: 'text', text: text.slice(7) },
      });
      reply = `You said: ${text}`;
      await stream(client, params.sessionId, reply, turn.signal);
    } else if (text === 'recall') {
      reply = `You first said: ${session.history.find((m) => m.role === 'user').text}`;
      await stream(client, params.sessionId, reply, turn.signal);
    } else {
      reply = `You said: ${text}`;
      await stream(client, params.sessionId, reply, turn.signal);
    }
  } catch (err) {
    if (turn.signal.aborted) return { stopReason: 'cancelled' };
    throw err;
  } finally {
    if (session.turn === turn) session.turn = undefined;
  }
  remember(params.sessionId, 'agent', reply);
  return { stopReason: 'end_turn' };
}

async function loadSession({ params, client }) {
  if (!existsSync(historyFile(params.sessionId))) throw acp.RequestError.sessionNotFound(params.sessionId);
  const history = readFileSync(historyFile(params.sessionId), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  sessions.set(params.sessionId, { history, turn: undefined });
  // The client rebuilds the conversation from these before the load is answered.
  for (const message of history) {
    await update(client, params.sessionId, {
      sessionUpdate: message.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk',
      content: { type: 'text', text: message.text },
    });
  }
  return {};
}

const app = acp
  .agent({ name: 'acp-example-agent' })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: process.env.ACP_AGENT_NO_LOAD !== '1' },
    agentInfo: { name: 'acp-example-agent', version: '1.0.0' },
  }))
  .onRequest(acp.methods.agent.session.new, () => {
    const sessionId = randomUUID();
    sessions.set(sessionId, { history: [], turn: undefined });
    appendFileSync(historyFile(sessionId), '');
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.load, loadSession)
  .onRequest(acp.methods.agent.session.prompt, prompt)
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.turn?.abort();
  });

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
// The client closing our stdin ends the conversation, and the program.
void connection.closed.then(() => process.exit(0));
