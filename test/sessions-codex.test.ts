import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { ModelServer } from './helpers/model-server.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import {
  createSession,
  deliver,
  session,
  sessionEvents,
  startSessionCity,
  terminalOf,
  turns,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { closeAllStreams, SseStreamReader } from './helpers/sse.js';
import { startScriptedCodex, type ScriptedCodex } from './helpers/scripted-codex.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** The real Codex CLI: the dev dependency, or the version CTL_TEST_CODEX_VERSION names (helpers/real-clis.ts). */
let CODEX: string;

interface RawEntry {
  kind: string;
  text?: string;
  turn?: number;
  usage?: Record<string, number>;
  error?: string;
  error_category?: string;
  interrupted?: boolean;
}

/** What a session's view says of its model and tokens. */
interface Counted {
  model?: string;
  usage?: { turns: number; input_tokens: number };
  context_tokens?: number;
  context_window?: number;
  context_pct?: number;
}

/**
 * Codex itself (0.169.0 as pinned) in `exec` mode, offline: a process per turn, `exec resume <thread_id>` after the first,
 * against the scripted model server's Responses API (echo; `rate-limit` is a 429; `slow:` streams a word every
 * 200 ms). Its CODEX_HOME holds a config naming the server as its model provider.
 */
describe('sessions of the real Codex (exec per turn, against a scripted model server)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let codex: ScriptedCodex;
  let model: ModelServer;
  let home: string;

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_CODEX_VERSION is installed on first use
    codex = await startScriptedCodex({ model: 'scripted' });
    ({ model, home } = codex);
    CODEX = codex.cli.bin;
    city = await startSessionCity('codex');
    const created = await city.api.post('/providers', codex.providerBody('codex-local'));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
  });

  afterEach(function () {
    closeAllStreams();
  });

  after(async function () {
    await city?.sup.cleanup();
    expect(processesMentioning(CODEX), 'no codex left behind').to.deep.equal([]);
    await codex?.close();
  });

  async function raw(id: string): Promise<RawEntry[]> {
    const reply = await city.api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
    expect(reply.status).to.equal(200);
    return reply.body.messages;
  }

  async function firstTurnFailed(id: string) {
    const [failed] = await waitUntil(
      'session.turn_failed',
      async () => {
        const events = await sessionEvents(city.api, 'session.turn_failed', id);
        return events.length > 0 ? events : undefined;
      },
      30_000,
    );
    return failed;
  }

  it('two messages, two processes: the second resumes the thread, and the model sees the first turn', async function () {
    const { api } = city;
    // Its options, as `-m` and a model_reasoning_effort override on each turn's `codex exec` (and `exec resume`).
    const id = await createSession(api, { name: 'codex-local', options: { model: 'gpt-5.5', effort: 'high' } });
    expect(await session(api, id)).to.include({ running: true, state: 'active' });
    const stream = await SseStreamReader.open(api.url(`/session/${id}/stream`));
    await deliver(api, id, 'first words');
    await stream.until((f) => f.event === 'turn' && f.data.includes('You said: first words'), 30_000);
    await waitForTurn(api, id, 'assistant', 'You said: first words', 30_000);
    const thread = (await session(api, id)).provider_session_key;
    expect(thread, 'the thread id, kept to resume').to.match(/^[0-9a-f-]{36}$/);
    await deliver(api, id, 'second words');
    await waitForTurn(api, id, 'assistant', 'You said: second words', 30_000);
    const conversation = (await turns(api, id)).filter((t) => t.role !== 'system');
    expect(conversation.map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'first words'],
      ['assistant', 'You said: first words'],
      ['user', 'second words'],
      ['assistant', 'You said: second words'],
    ]);
    expect((await session(api, id)).provider_session_key, 'one thread').to.equal(thread);
    const second = model.requests.filter((r) => r.userText === 'second words').at(-1)!;
    expect(JSON.stringify(second.body.input), 'the first turn, resumed').to.include('first words');
    const ends = await waitUntil('both turns to end', async () => {
      const found = (await raw(id)).filter((e) => e.kind === 'turn_end');
      return found.length === 2 ? found : undefined;
    });
    for (const end of ends) expect(end.usage?.output_tokens, 'usage from turn.completed').to.be.a('number');
    // Both turns asked for the chosen model at the chosen effort.
    const sent = model.requests.filter((r) => r.userText === 'first words' || r.userText === 'second words');
    expect(
      sent.map((r) => [r.body.model, (r.body.reasoning as { effort?: string } | undefined)?.effort]),
    ).to.deep.equal([
      ['gpt-5.5', 'high'],
      ['gpt-5.5', 'high'],
    ]);
    // The view: the last turn's input (Codex counts its cached tokens in it) against gpt-5.5's window, from the
    // preset's table (`codex exec --json` reports tokens, not the window).
    const counted = await waitUntil('both turns counted', async () => {
      const v = (await api.get<Counted>(`/session/${id}`)).body;
      return v.usage?.turns === 2 ? v : undefined;
    });
    expect(counted).to.include({
      model: 'gpt-5.5',
      context_tokens: ends[1].usage!.input_tokens,
      context_window: 272_000,
    });
    expect(counted.context_pct).to.equal(Math.round((100 * counted.context_tokens!) / 272_000));
    expect(counted.usage!.input_tokens).to.equal(ends[0].usage!.input_tokens + ends[1].usage!.input_tokens);
    expect(await sessionEvents(api, 'session.turn_failed', id)).to.deep.equal([]);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    await api.post(`/session/${id}/close`);
  });

  it("an agent's prompt is Codex's developer instructions on every turn, never a turn of its own", async function () {
    const { api } = city;
    const prompt = 'You are the coder agent: "close" each bead with ctl.';
    mkdirSync(join(city.dir, 'agents', 'coder'), { recursive: true });
    writeFileSync(join(city.dir, 'agents', 'coder', 'prompt.md'), `${prompt}\n`);
    writeFileSync(
      join(city.dir, 'agents', 'coder', 'agent.toml'),
      'provider = "codex-local"\nmin_active_sessions = 0\nmax_active_sessions = 1\n',
    );
    await waitUntil('the agent to be known', async () => (await api.get('/agent/coder')).status === 200);
    const id = await createSession(api, { kind: 'agent', name: 'coder' });
    await deliver(api, id, 'first task');
    await waitForTurn(api, id, 'assistant', 'You said: first task', 30_000);
    await deliver(api, id, 'second task');
    await waitForTurn(api, id, 'assistant', 'You said: second task', 30_000);
    const developerText = (text: string) => {
      const request = model.requests.filter((r) => r.userText === text).at(-1)!;
      const items = request.body.input as { role?: string; content?: { text?: string }[] }[];
      return items.filter((i) => i.role === 'developer').flatMap((i) => (i.content ?? []).map((c) => c.text));
    };
    // Given with each `codex exec` (the first, and the resumed one).
    expect(developerText('first task')).to.include(`${prompt}\n`);
    expect(developerText('second task')).to.include(`${prompt}\n`);
    expect((await turns(api, id)).map((t) => t.text)).to.not.include(`${prompt}\n`);
    await api.post(`/session/${id}/close`);
  });

  it('reset: the next turn is a new thread (`codex exec`, not `exec resume`), and the model sees nothing before it', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'codex-local' });
    await deliver(api, id, 'words before the reset');
    await waitForTurn(api, id, 'assistant', 'You said: words before the reset', 30_000);
    const thread = (await session(api, id)).provider_session_key;
    expect(thread).to.match(/^[0-9a-f-]{36}$/);
    const reset = await api.post<{ restarted: boolean; previous_conversation?: string }>(`/session/${id}/reset`);
    expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
    expect(reset.body).to.include({ restarted: true, previous_conversation: thread });
    await deliver(api, id, 'words after the reset');
    await waitForTurn(api, id, 'assistant', 'You said: words after the reset', 30_000);
    const after = model.requests.filter((r) => r.userText === 'words after the reset').at(-1)!;
    expect(JSON.stringify(after.body.input), 'a new thread').to.not.include('words before the reset');
    const now = (await session(api, id)).provider_session_key;
    expect(now)
      .to.match(/^[0-9a-f-]{36}$/)
      .and.not.equal(thread);
  });

  it('after a controller restart, a message resumes the same thread', async function () {
    const { api, sup } = city;
    const id = await createSession(api, { name: 'codex-local' });
    await deliver(api, id, 'before the restart');
    await waitForTurn(api, id, 'assistant', 'You said: before the restart', 30_000);
    const thread = (await session(api, id)).provider_session_key;
    const controller = (await sup.city('codex'))!.pid!;
    process.kill(controller, 'SIGKILL');
    await waitUntil(
      'a new controller',
      async () => {
        const info = await sup.city('codex');
        return info?.running === true && info.pid !== controller;
      },
      30_000,
    );
    await deliver(api, id, 'after the restart');
    await waitForTurn(api, id, 'assistant', 'You said: after the restart', 30_000);
    expect((await session(api, id)).provider_session_key).to.equal(thread);
    const request = model.requests.filter((r) => r.userText === 'after the restart').at(-1)!;
    expect(JSON.stringify(request.body.input)).to.include('before the restart');
    await api.post(`/session/${id}/close`);
  });

  it('a rate limit and an unreachable model fail the turn (the error recorded, an event), never a crash; the next turn works', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'codex-local' });
    await deliver(api, id, 'rate-limit me');
    const failed = await firstTurnFailed(id);
    expect(failed.payload).to.include({ session_id: id, category: 'rate_limited', status: 429 });
    const end = await waitUntil('the failed turn in the transcript', async () =>
      (await raw(id)).find((e) => e.kind === 'turn_end'),
    );
    expect(end).to.include({ error_category: 'rate_limited' });
    expect(end.error).to.match(/429/);
    model.failWith(503);
    try {
      await deliver(api, id, 'anyone?');
      await waitUntil(
        'a second turn_failed',
        async () => (await sessionEvents(api, 'session.turn_failed', id)).length === 2,
        30_000,
      );
      const [, second] = await sessionEvents(api, 'session.turn_failed', id);
      expect(second.payload).to.include({ category: 'provider_unavailable' });
    } finally {
      model.failWith(undefined);
    }
    await deliver(api, id, 'better now');
    await waitForTurn(api, id, 'assistant', 'You said: better now', 30_000);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    expect((await session(api, id)).state).to.equal('active');
    await api.post(`/session/${id}/close`);
  });

  it('stop ends a turn in progress (its process interrupted); the session takes the next message', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'codex-local' });
    const words = Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ');
    await deliver(api, id, `slow: ${words}`);
    await waitUntil('the turn to be under way', async () => (await session(api, id)).pid !== undefined);
    const pid = (await session(api, id)).pid!;
    const stopped = await api.post<{ status: string }>(`/session/${id}/stop`);
    expect(stopped.body).to.deep.include({ status: 'ok' });
    await waitUntil('its process to end', () => !isAlive(pid));
    const end = await waitUntil('the interrupted turn', async () => (await raw(id)).find((e) => e.kind === 'turn_end'));
    expect(end.interrupted).to.equal(true);
    expect(await sessionEvents(api, 'session.turn_failed', id), 'asked for, not a failure').to.deep.equal([]);
    await deliver(api, id, 'next one');
    await waitForTurn(api, id, 'assistant', 'You said: next one', 30_000);
    await api.post(`/session/${id}/close`);
  });

  it('a thread Codex no longer has: the turn fails saying so, and the next message starts a new thread', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'codex-local' });
    await deliver(api, id, 'hello');
    await waitForTurn(api, id, 'assistant', 'You said: hello', 30_000);
    const thread = (await session(api, id)).provider_session_key!;
    rmSync(join(home, 'codex', 'sessions'), { recursive: true, force: true });
    await deliver(api, id, 'do you remember?');
    const failed = await firstTurnFailed(id);
    expect(failed.payload.error).to.include(`no rollout found for thread id ${thread}`);
    const updated = (await sessionEvents(api, 'session.updated', id)).map((e) => String(e.payload.reason));
    expect(updated.some((r) => r.startsWith(`could not resume conversation ${thread}`))).to.equal(true);
    await deliver(api, id, 'fresh start');
    await waitForTurn(api, id, 'assistant', 'You said: fresh start', 30_000);
    const now = (await session(api, id)).provider_session_key;
    expect(now).to.match(/^[0-9a-f-]{36}$/);
    expect(now).to.not.equal(thread);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    await api.post(`/session/${id}/close`);
  });

  it('readiness: its model provider with its key is configured, without the key needs_auth; signed out, codex login status says so', async function () {
    const { api } = city;
    const bare = tempDir('ctl-codex-bare-');
    mkdirSync(join(bare, '.codex'));
    try {
      for (const body of [
        { name: 'codex-no-key', env: { HOME: home, CODEX_HOME: join(home, 'codex') } },
        { name: 'codex-signed-out', env: { HOME: bare } },
      ]) {
        const created = await api.post('/providers', { ...body, base: 'builtin:codex', command: CODEX });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
      }
      const reply = await api.get<{ providers: Record<string, { status: string; detail?: string }> }>(
        '/provider-readiness?providers=codex-local,codex-no-key,codex-signed-out&fresh=true',
      );
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      const { providers } = reply.body;
      expect(providers['codex-local']).to.include({ status: 'configured' });
      expect(providers['codex-local'].detail).to.match(/model provider mock, key in MOCK_KEY$/);
      expect(providers['codex-no-key']).to.deep.equal({
        display_name: 'Codex CLI',
        status: 'needs_auth',
        detail: 'model provider mock needs MOCK_KEY set',
      });
      expect(providers['codex-signed-out'].status).to.equal('needs_auth');
      expect(providers['codex-signed-out'].detail).to.match(/^Not logged in; run codex login$/);
      expect(readdirSync(join(bare, '.codex')), 'the probe wrote nothing into its home').to.deep.equal([]);
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  it('a codex command that is not installed: request.failed naming it', async function () {
    const { api } = city;
    const created = await api.post('/providers', {
      name: 'codex-missing',
      base: 'builtin:codex',
      command: '/nonexistent/codex',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const reply = await api.post<{ request_id: string }>('/sessions', { name: 'codex-missing' });
    expect(reply.status).to.equal(202);
    const result = await terminalOf(api, reply.body.request_id);
    expect(result.type).to.equal('request.failed');
    expect(result.payload.error_message).to.include('/nonexistent/codex');
  });
});
