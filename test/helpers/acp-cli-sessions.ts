import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { ModelServer } from './model-server.js';
import { isAlive } from './processes.js';
import {
  send,
  session,
  sessionEvents,
  startSessionCity,
  terminalOf,
  turns,
  waitForTurn,
  type Accepted,
  type SessionCity,
} from './sessions.js';
import { waitUntil } from './wait.js';

// The steps every real ACP agent CLI's test takes (OpenCode, the Claude Code and Codex adapters), one session of
// one program through them: it answers, a tool call waits for `respond`, and after its controller is killed the
// next controller's program loads the conversation (`session/load`).

/** How long a turn of a real CLI may take on a busy 2-core machine (OpenCode's first start is the slowest). */
export const TURN_MS = 60_000;

interface RawEntry {
  kind: string;
  text?: string;
  stop_reason?: string;
  request_id?: string;
  action?: string;
  resumed?: string;
}

export async function rawTranscript(city: SessionCity, id: string): Promise<RawEntry[]> {
  const reply = await city.api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
  expect(reply.status).to.equal(200);
  return reply.body.messages;
}

/** A city whose provider `provider.name` runs the CLI (a preset adjusted: its command, its environment). */
export async function startCliCity(
  cityName: string,
  provider: { name: string; base: string; command: string; env: Record<string, string> },
): Promise<SessionCity> {
  const city = await startSessionCity(cityName);
  const created = await city.api.post('/providers', provider);
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  return city;
}

/** A session of the provider, once its program has finished the ACP handshake (slower than `createSession` waits). */
export async function createCliSession(city: SessionCity, body: Record<string, unknown>): Promise<string> {
  const reply = await city.api.post<Accepted>('/sessions', body);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
  const result = await terminalOf(city.api, reply.body.request_id, TURN_MS);
  expect(result.type, JSON.stringify(result.payload)).to.equal('request.result.session.create');
  return reply.body.session_id;
}

/** Sends a message and waits until the program has it (a program being started takes a while). */
export async function deliver(city: SessionCity, id: string, message: string): Promise<void> {
  const accepted = await send(city.api, id, message);
  const result = await terminalOf(city.api, accepted.request_id, TURN_MS);
  expect(result.type, JSON.stringify(result.payload)).to.match(/^request\.result\.session\./);
}

/** A message is answered, as the scripted model said it; the turn ends with the agent's stop reason. */
export async function expectAnswer(city: SessionCity, model: ModelServer, id: string): Promise<void> {
  await deliver(city, id, 'hello there');
  await waitForTurn(city.api, id, 'assistant', 'You said: hello there', TURN_MS);
  const ends = await waitUntil(
    'the turn to end',
    async () => {
      const found = (await rawTranscript(city, id)).filter((e) => e.kind === 'turn_end');
      return found.length > 0 ? found : undefined;
    },
    TURN_MS,
  );
  expect(ends.at(-1)).to.include({ stop_reason: 'end_turn' });
  expect(
    model.requests.some((r) => r.userText === 'hello there'),
    'the model was asked',
  ).to.equal(true);
  expect(await sessionEvents(city.api, 'session.turn_failed', id)).to.deep.equal([]);
}

/**
 * `run: touch <file>` asks permission: pending until `respond allow`, then the command runs and the model sees
 * its result; a second one answered `deny` never runs. The files are in the session's work dir (`dir`): one
 * outside it would be a question of its own to some CLIs (OpenCode's `external_directory`).
 */
export async function expectPermissionThroughRespond(city: SessionCity, id: string, dir: string): Promise<void> {
  const { api } = city;
  const allowed = join(dir, 'allowed-by-respond');
  await deliver(city, id, 'run: touch allowed-by-respond && echo made-it');
  const asked = await waitUntil('the permission request', async () => (await session(api, id)).pending, TURN_MS);
  expect(asked.kind).to.equal('tool-approval');
  expect(asked.prompt).to.include('touch allowed-by-respond');
  expect(existsSync(allowed), 'nothing runs before the answer').to.equal(false);
  expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
  await waitForTurn(api, id, 'assistant', /^Tool said: [\s\S]*made-it/, TURN_MS);
  expect(existsSync(allowed)).to.equal(true);

  const denied = join(dir, 'denied-by-respond');
  const before = (await rawTranscript(city, id)).filter((e) => e.kind === 'turn_end').length;
  await deliver(city, id, 'run: touch denied-by-respond');
  const second = await waitUntil('the second request', async () => {
    const pending = (await session(api, id)).pending;
    return pending && pending.request_id !== asked.request_id ? pending : undefined;
  });
  expect((await api.post(`/session/${id}/respond`, { action: 'deny' })).status).to.equal(202);
  await waitUntil(
    'the denied turn to end',
    async () => (await rawTranscript(city, id)).filter((e) => e.kind === 'turn_end').length > before,
    TURN_MS,
  );
  expect(existsSync(denied), 'a denied command never runs').to.equal(false);
  const cleared = (await sessionEvents(api, 'session.pending_cleared', id)).map((e) => e.payload);
  expect(cleared.map((p) => [p.request_id, p.action])).to.deep.include.members([
    [asked.request_id, 'allow'],
    [second.request_id, 'deny'],
  ]);
}

/**
 * The controller killed: the next one reaps the old program, starts a new one that loads the conversation
 * (`session/load` of the same id), and the model's next request carries the earlier turns.
 */
export async function expectLoadAfterRestart(
  city: SessionCity,
  cityName: string,
  model: ModelServer,
  id: string,
): Promise<void> {
  const { api, sup } = city;
  await deliver(city, id, 'remember the lighthouse');
  await waitForTurn(api, id, 'assistant', 'You said: remember the lighthouse', TURN_MS);
  const key = (await session(api, id)).provider_session_key;
  expect(key, "the agent's session id").to.be.a('string');
  const oldPid = (await session(api, id)).pid!;
  const controller = (await sup.city(cityName))!.pid!;
  process.kill(controller, 'SIGKILL');
  await waitUntil(
    'a new controller',
    async () => {
      const info = await sup.city(cityName);
      return info?.running === true && info.pid !== controller;
    },
    TURN_MS, // the new controller takes on a session whose program it reaps and starts again: slow on a busy machine
  );
  await waitUntil('the old program to be gone', () => !isAlive(oldPid), TURN_MS);
  await deliver(city, id, 'recall');
  await waitForTurn(api, id, 'assistant', 'You said: recall', TURN_MS);
  const view = await session(api, id);
  expect(view.provider_session_key, 'the same conversation').to.equal(key);
  expect(view.pid).to.not.equal(oldPid);
  const starts = (await rawTranscript(city, id)).filter((e) => e.kind === 'start');
  expect(starts.at(-1)?.resumed, 'started by loading it').to.equal(key);
  const notes = (await turns(api, id)).filter((t) => t.role === 'system' && /could not load|cannot load/.test(t.text));
  expect(notes, 'loaded, not started anew').to.deep.equal([]);
  const recall = model.requests.filter((r) => r.userText === 'recall').at(-1)!;
  expect(JSON.stringify(recall.body), 'the earlier turns, loaded').to.include('remember the lighthouse');
}
