import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { expectProblem } from './helpers/city-api.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import {
  createSession,
  deliver,
  send,
  session,
  sessionEvents,
  startSessionCity,
  terminalOf,
  turns,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { closeAllStreams, SseStreamReader } from './helpers/sse.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** The ACP example agent the project ships, built on the official SDK. */
const ACP_AGENT = join(packageRoot, 'examples', 'agents', 'acp-agent.mjs');

interface RawEntry {
  seq: number;
  kind: string;
  text?: string;
  turn?: number;
  stop_reason?: string;
  resumed?: string;
  request_id?: string;
  action?: string;
  chunk?: boolean;
  status?: string;
}

describe('sessions over ACP (the Agent Client Protocol, the SDK-built example agent)', function () {
  let city: SessionCity;
  let agentState: string;
  /** Every program pid a test saw, to check at the end that none outlives the city. */
  const seenPids = new Set<number>();

  before(async function () {
    agentState = tempDir('ctl-acp-state-');
    city = await startSessionCity(
      'acp',
      `
[providers.acp]
command = "${process.execPath} ${ACP_AGENT}"
protocol = "acp"
env = { ACP_AGENT_STATE = "${agentState}" }

[providers.acp-no-load]
command = "${process.execPath} ${ACP_AGENT}"
protocol = "acp"
env = { ACP_AGENT_STATE = "${agentState}", ACP_AGENT_NO_LOAD = "1" }

[providers.acp-missing]
command = "/nonexistent/acp-agent"
protocol = "acp"
`,
    );
  });

  afterEach(function () {
    closeAllStreams();
  });

  after(async function () {
    await city?.sup.cleanup();
    rmSync(agentState, { recursive: true, force: true });
  });

  async function raw(id: string): Promise<RawEntry[]> {
    const reply = await city.api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
    expect(reply.status).to.equal(200);
    return reply.body.messages;
  }

  async function running(id: string): Promise<number> {
    const view = await session(city.api, id);
    expect(view.running).to.equal(true);
    seenPids.add(view.pid!);
    return view.pid!;
  }

  it('creates a session and talks: streamed replies reach the transcript (one reply per turn) and the stream', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'acp' });
    await running(id);
    const view = await session(api, id);
    expect(view).to.include({ state: 'active', provider: 'acp' });
    expect(view.provider_session_key, 'the agent session id is kept for session/load').to.match(/^[0-9a-f-]{36}$/);
    expect((await api.get(`/session/${id}/pending`)).body).to.deep.equal({ supported: true });

    const stream = await SseStreamReader.open(api.url(`/session/${id}/stream`));
    expect(stream.status).to.equal(200);
    await deliver(api, id, 'hello there');
    // The agent streams its reply word by word: the stream has each piece as it comes.
    let streamed = '';
    await stream.until((frame) => {
      if (frame.event !== 'turn') return false;
      const turn = JSON.parse(frame.data) as { role: string; text: string };
      if (turn.role === 'assistant') streamed += turn.text;
      return streamed === 'You said: hello there';
    });
    await waitForTurn(api, id, 'assistant', 'You said: hello there');
    await deliver(api, id, 'and again');
    await waitForTurn(api, id, 'assistant', 'You said: and again');

    expect((await turns(api, id)).map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'hello there'],
      ['assistant', 'You said: hello there'],
      ['user', 'and again'],
      ['assistant', 'You said: and again'],
    ]);
    const entries = await raw(id);
    const pieces = entries.filter((e) => e.kind === 'assistant' && e.turn === 1);
    expect(pieces.length, 'a reply in several chunks').to.be.greaterThan(1);
    expect(pieces.every((e) => e.chunk === true)).to.equal(true);
    expect(entries.filter((e) => e.kind === 'turn_end').map((e) => e.stop_reason)).to.deep.equal([
      'end_turn',
      'end_turn',
    ]);
    expect((await session(api, id)).last_output).to.equal('You said: hello there\nYou said: and again');

    // format=structured: the reference's typed messages; the agent's reasoning given only when asked for.
    await deliver(api, id, 'think: weigh it first');
    await waitForTurn(api, id, 'assistant', 'You said: think: weigh it first');
    type Structured = {
      format: string;
      schema_version: string;
      operation: string;
      history: { transcript_stream_id: string; cursor: { resume_token: string }; tail_state: { activity: string } };
      structured_messages: { role: string; status: string; blocks: Record<string, unknown>[]; turn?: number }[];
      pagination: { last_seq: number };
    };
    const get = async (query: string) =>
      (await api.get<Structured>(`/session/${id}/transcript?format=structured${query}`)).body;
    const plain = await get('');
    expect(plain).to.include({ format: 'structured', schema_version: 'session.structured.v1', operation: 'snapshot' });
    expect(plain.history.transcript_stream_id).to.equal(id);
    expect(plain.history.cursor.resume_token).to.equal(String(plain.pagination.last_seq));
    expect(plain.structured_messages.map((m) => [m.role, m.status, m.turn])).to.deep.equal([
      ['user', 'final', 1],
      ['assistant', 'final', 1],
      ['user', 'final', 2],
      ['assistant', 'final', 2],
      ['user', 'final', 3],
      ['assistant', 'final', 3],
    ]);
    expect(plain.structured_messages[1].blocks).to.deep.equal([{ type: 'text', text: 'You said: hello there' }]);
    expect(plain.structured_messages[5].blocks).to.deep.equal([
      { type: 'thinking' },
      { type: 'text', text: 'You said: think: weigh it first' },
    ]);
    const thinking = await get('&include_thinking=true');
    expect(thinking.structured_messages[5].blocks[0]).to.deep.equal({ type: 'thinking', thinking: 'weigh it first' });
    expectProblem(await api.get(`/session/${id}/transcript?format=threaded`), 422, 'validation-failed');
  });

  it('a permission request is pending; allow and deny each reach the agent; answering one no longer pending is a 409', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'acp' });
    await running(id);

    await deliver(api, id, 'run: ls -la');
    const first = await waitUntil('the permission request', async () => (await session(api, id)).pending);
    expect(first).to.include({ kind: 'tool-approval', prompt: 'Allow Run ls -la? {"command":"ls -la"}' });
    expect(first.options).to.deep.equal(['allow', 'deny']);
    const own = await api.get<{ pending: { metadata: Record<string, string> } }>(`/session/${id}/pending`);
    expect(own.body.pending.metadata.agent_options).to.equal(
      'yes-once (allow_once): Allow once; yes-always (allow_always): Always allow; no-once (reject_once): Deny',
    );
    const [asked] = await sessionEvents(api, 'session.pending', id);
    expect(asked.payload).to.include({ request_id: first.request_id, kind: 'tool-approval' });
    await waitForTurn(api, id, 'tool', 'Run ls -la {"command":"ls -la"}');
    expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
    await waitForTurn(api, id, 'tool', 'would run: ls -la (nothing was run)');
    await waitForTurn(api, id, 'assistant', 'Allowed: ls -la (yes-once)');

    await deliver(api, id, 'run: rm -rf /');
    const second = await waitUntil('the second request', async () => (await session(api, id)).pending);
    expect(second.request_id).to.not.equal(first.request_id);
    expect(
      (await api.post(`/session/${id}/respond`, { action: 'deny', request_id: second.request_id })).status,
    ).to.equal(202);
    await waitForTurn(api, id, 'assistant', 'Denied: rm -rf /');

    // The first request was answered: it is no longer pending.
    expectProblem(
      await api.post(`/session/${id}/respond`, { action: 'allow', request_id: first.request_id }),
      409,
      'conflict-wrong-state',
      { detail: `conflict: session ${id} has no pending interaction` },
    );
    // An answer can name one of the agent's own options.
    await deliver(api, id, 'run: date');
    const third = await waitUntil('the third request', async () => (await session(api, id)).pending);
    expectProblem(
      await api.post(`/session/${id}/respond`, { action: 'allow', request_id: second.request_id }),
      409,
      'conflict-wrong-state',
      { detail: `conflict: session ${id} is waiting on ${third.request_id}, not ${second.request_id}` },
    );
    await api.post(`/session/${id}/respond`, { action: 'allow', text: 'yes-always' });
    await waitForTurn(api, id, 'assistant', 'Allowed: date (yes-always)');
    const cleared = await sessionEvents(api, 'session.pending_cleared', id);
    expect(cleared.map((e) => e.payload.action)).to.deep.equal(['allow', 'deny', 'allow']);
  });

  it('stop is session/cancel: a slow turn ends (stopReason cancelled), a pending question is answered cancelled, the program stays', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'acp' });
    const pid = await running(id);
    expect((await api.post<{ status: string }>(`/session/${id}/stop`)).body).to.deep.equal({ status: 'idle', id });

    const words = Array.from({ length: 50 }, (_, i) => `w${i}`).join(' ');
    await deliver(api, id, `slow: ${words}`);
    await waitUntil('the slow reply to begin', async () => (await raw(id)).some((e) => e.kind === 'assistant'));
    expect((await api.post<{ status: string }>(`/session/${id}/stop`)).body).to.deep.equal({ status: 'ok', id });
    await waitUntil('idle', async () => (await session(api, id)).activity === 'idle');
    let entries = await raw(id);
    expect(entries.filter((e) => e.kind === 'turn_end').at(-1)).to.include({ stop_reason: 'cancelled', turn: 1 });
    const reply = (await turns(api, id)).find((t) => t.role === 'assistant')!.text;
    expect(reply.length).to.be.lessThan(words.length);

    // A turn waiting on a permission: cancelling answers the request `cancelled`, and the turn ends.
    await deliver(api, id, 'run: make');
    const pending = await waitUntil('the permission request', async () => (await session(api, id)).pending);
    expect((await api.post<{ status: string }>(`/session/${id}/stop`)).body.status).to.equal('ok');
    await waitUntil('idle', async () => (await session(api, id)).activity === 'idle');
    entries = await raw(id);
    expect(entries.find((e) => e.kind === 'pending_cleared' && e.request_id === pending.request_id)).to.include({
      action: 'cancelled',
    });
    expect(entries.filter((e) => e.kind === 'turn_end').at(-1)).to.include({ stop_reason: 'cancelled', turn: 2 });
    expect((await session(api, id)).pending).to.equal(undefined);

    await deliver(api, id, 'still there?');
    await waitForTurn(api, id, 'assistant', 'You said: still there?');
    expect((await session(api, id)).pid).to.equal(pid);
  });

  it('kill, then a message wakes it: session/load resumes the conversation, whose replay is not recorded twice', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'acp', message: 'remember the lighthouse' });
    await waitForTurn(api, id, 'assistant', 'You said: remember the lighthouse');
    const pid = await running(id);
    const key = (await session(api, id)).provider_session_key!;
    expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
    await waitUntil('asleep', async () => (await session(api, id)).state === 'asleep');
    expect(isAlive(pid)).to.equal(false);

    await deliver(api, id, 'recall');
    await waitForTurn(api, id, 'assistant', 'You first said: remember the lighthouse');
    const view = await session(api, id);
    expect(view).to.include({ state: 'active', provider_session_key: key });
    expect(view.pid).to.not.equal(pid);
    seenPids.add(view.pid!);
    const entries = await raw(id);
    expect(entries.filter((e) => e.kind === 'start').map((e) => e.resumed)).to.deep.equal([undefined, key]);
    expect((await turns(api, id)).map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'remember the lighthouse'],
      ['assistant', 'You said: remember the lighthouse'],
      ['user', 'recall'],
      ['assistant', 'You first said: remember the lighthouse'],
    ]);
    expect(entries.filter((e) => e.kind === 'error')).to.deep.equal([]);
  });

  it('an agent that cannot load sessions: a woken session starts a new conversation, and the transcript says so', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'acp-no-load', message: 'remember the lighthouse' });
    await waitForTurn(api, id, 'assistant', 'You said: remember the lighthouse');
    const pid = await running(id);
    const key = (await session(api, id)).provider_session_key!;
    await api.post(`/session/${id}/kill`);
    await waitUntil('asleep', async () => (await session(api, id)).state === 'asleep');
    expect(isAlive(pid)).to.equal(false);
    await deliver(api, id, 'recall');
    await waitForTurn(api, id, 'assistant', 'You first said: recall');
    seenPids.add((await session(api, id)).pid!);
    await waitForTurn(
      api,
      id,
      'system',
      `the agent cannot load conversations: conversation ${key} is not resumed, this is a new one`,
    );
    const newKey = (await session(api, id)).provider_session_key!;
    expect(newKey).to.match(/^[0-9a-f-]{36}$/);
    expect(newKey).to.not.equal(key);
  });

  it('a command that is not installed: request.failed naming it', async function () {
    const { api } = city;
    const reply = await api.post<{ request_id: string; session_id: string }>('/sessions', { name: 'acp-missing' });
    expect(reply.status).to.equal(202);
    const result = await terminalOf(api, reply.body.request_id);
    expect(result.type).to.equal('request.failed');
    expect(result.payload).to.include({ operation: 'session.create', error_code: 'session_start_failed' });
    expect(String(result.payload.error_message)).to.match(/\/nonexistent\/acp-agent not found/);
    expect(await session(api, reply.body.session_id)).to.include({ state: 'failed-create', running: false });
  });

  it('the agent crashing mid-turn: the turn ends, session.crashed is recorded, the next message wakes it', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'acp' });
    const pid = await running(id);
    await deliver(api, id, `slow: ${Array.from({ length: 50 }, (_, i) => `w${i}`).join(' ')}`);
    await waitUntil('the slow reply to begin', async () => (await raw(id)).some((e) => e.kind === 'assistant'));
    process.kill(pid, 'SIGKILL');
    const [crash] = await waitUntil('session.crashed', async () => {
      const events = await sessionEvents(api, 'session.crashed', id);
      return events.length ? events : undefined;
    });
    expect(crash.payload).to.include({ session_id: id, pid, signal: 'SIGKILL', exit_code: null });
    const view = await session(api, id);
    expect(view).to.include({ state: 'asleep', running: false, reason: 'its program killed by SIGKILL' });
    const entries = await raw(id);
    expect(entries.filter((e) => e.kind === 'turn_end').map((e) => e.stop_reason)).to.deep.equal(['ended']);
    expect(entries.at(-1)).to.include({ kind: 'exit' });
    await deliver(api, id, 'again');
    await waitForTurn(api, id, 'assistant', 'You said: again');
    seenPids.add((await session(api, id)).pid!);
  });

  it('bad input: a respond with nothing pending is a 409', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'acp' });
    await running(id);
    expectProblem(await api.post(`/session/${id}/respond`, { action: 'allow' }), 409, 'conflict-wrong-state', {
      detail: `conflict: session ${id} has no pending interaction`,
    });
    // A message while another turn runs waits for it: one prompt at a time.
    await send(api, id, 'slow: a b c');
    await deliver(api, id, 'next');
    await waitForTurn(api, id, 'assistant', 'You said: next');
    const texts = (await turns(api, id)).map((t) => t.text);
    expect(texts.indexOf('a b c')).to.be.lessThan(texts.indexOf('next'));
  });

  it('a session outlives its controller: the next one reaps the old agent and loads the conversation in a new one', async function () {
    const { api, sup } = city;
    const id = await createSession(api, { name: 'acp', message: 'the password is swordfish' });
    await waitForTurn(api, id, 'assistant', 'You said: the password is swordfish');
    const oldPid = await running(id);
    const controller = (await sup.city('acp'))!.pid!;
    process.kill(controller, 'SIGKILL');
    await waitUntil('a new controller', async () => {
      const info = await sup.city('acp');
      return info?.running === true && info.pid !== controller;
    });
    await waitUntil('the old agent to be gone', () => !isAlive(oldPid));
    await waitUntil('the session running again', async () => {
      const v = await session(api, id);
      return v.running && v.state === 'active';
    });
    seenPids.add((await session(api, id)).pid!);
    await deliver(api, id, 'recall');
    await waitForTurn(api, id, 'assistant', 'You first said: the password is swordfish');
  });

  it('ctl supervisor stop leaves no agent program behind', async function () {
    const { api, sup, dir } = city;
    const id = await createSession(api, { name: 'acp' });
    await running(id);
    const result = await sup.ctl(['supervisor', 'stop']);
    expect(result.code, result.stderr).to.equal(0);
    await waitUntil(
      'every process of the city to be gone',
      () => processesMentioning(dir).length === 0 && [...seenPids].every((pid) => !isAlive(pid)),
    );
    expect(processesMentioning(ACP_AGENT)).to.deep.equal([]);
  });
});
