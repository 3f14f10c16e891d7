import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { startScriptedClaude, type ScriptedClaude } from './helpers/claude-city.js';
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
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** The real Claude Code: the dev dependency, or the version CTL_TEST_CLAUDE_VERSION names (helpers/real-clis.ts). */
let CLAUDE: string;

interface RawEntry {
  seq: number;
  kind: string;
  text?: string;
  turn?: number;
  subtype?: string;
  usage?: Record<string, number>;
  is_error?: boolean;
  request_id?: string;
  action?: string;
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
 * Claude Code itself (2.1.332 as pinned; see docs/agent-clis.md), offline: its model is the scripted server (test/helpers/model-server.ts), which
 * echoes, asks for a Bash call on `run:`, streams slowly on `slow:` and fails on `rate-limit`. Each session is a
 * real `claude -p --input-format stream-json …` process (~300 MB): the tests run them one at a time.
 */
describe('sessions of the real Claude Code (stream-json, against a scripted model server)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let claude: ScriptedClaude;
  let model: ModelServer;
  let home: string;
  let work: string;
  const seenPids = new Set<number>();

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_CLAUDE_VERSION is installed on first use
    claude = await startScriptedClaude();
    CLAUDE = claude.cli.bin;
    model = claude.model;
    home = claude.home;
    work = tempDir('ctl-claude-work-');
    city = await startSessionCity('claude');
    // The contract point: a provider created over the API, based on the preset, with its command and env.
    const created = await city.api.post('/providers', claude.providerBody('claude-local'));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
  });

  afterEach(function () {
    closeAllStreams();
  });

  after(async function () {
    await city?.sup.cleanup();
    await claude?.close();
    for (const pid of seenPids) expect(isAlive(pid), `claude ${pid} outlived its city`).to.equal(false);
    rmSync(work, { recursive: true, force: true });
  });

  async function raw(id: string): Promise<RawEntry[]> {
    const reply = await city.api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
    expect(reply.status).to.equal(200);
    return reply.body.messages;
  }

  async function start(options?: Record<string, string>): Promise<string> {
    const id = await createSession(city.api, { name: 'claude-local', ...(options ? { options } : {}) });
    const view = await session(city.api, id);
    expect(view.running).to.equal(true);
    seenPids.add(view.pid!);
    return id;
  }

  async function close(id: string): Promise<void> {
    const pid = (await session(city.api, id)).pid;
    const reply = await city.api.post(`/session/${id}/close`);
    expect(reply.status, JSON.stringify(reply.body)).to.be.oneOf([200, 202]);
    if (pid) await waitUntil(`claude ${pid} to end`, () => !isAlive(pid));
  }

  it('a session talks: each reply is an assistant turn on the transcript and the stream, with usage stored', async function () {
    const { api } = city;
    // Its options, as Claude Code's --model and --effort.
    const id = await start({ model: 'claude-opus-4-5', effort: 'high' });
    const stream = await SseStreamReader.open(api.url(`/session/${id}/stream`));
    await deliver(api, id, 'hello there');
    await stream.until((frame) => frame.event === 'turn' && frame.data.includes('You said: hello there'), 30_000);
    await waitForTurn(api, id, 'assistant', 'You said: hello there', 30_000);
    await deliver(api, id, 'and again');
    await waitForTurn(api, id, 'assistant', 'You said: and again', 30_000);
    expect((await turns(api, id)).map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'hello there'],
      ['assistant', 'You said: hello there'],
      ['user', 'and again'],
      ['assistant', 'You said: and again'],
    ]);
    const view = await session(api, id);
    expect(view.provider_session_key, "Claude Code's session id, kept to resume").to.match(/^[0-9a-f-]{36}$/);
    // Its `result` line (the turn's end, with usage) follows the reply line by some milliseconds (2.1.332: ~25).
    const ends = await waitUntil('both turns to end', async () => {
      const found = (await raw(id)).filter((e) => e.kind === 'turn_end');
      return found.length >= 2 && found;
    });
    expect(ends).to.have.length(2);
    for (const end of ends) {
      expect(end.subtype).to.equal('success');
      expect(end.usage?.input_tokens, 'usage from its result line').to.be.a('number');
      expect(end.usage?.output_tokens).to.be.a('number');
    }
    // The model server saw both messages from one process (the second request carries the first turn).
    const texts = model.requests.filter((r) => r.api === 'messages').map((r) => r.userText);
    expect(texts).to.include.members(['hello there', 'and again']);
    // What it sent is the chosen model, at the chosen effort.
    const sent = model.requests.filter((r) => r.userText === 'hello there' || r.userText === 'and again');
    expect(sent.map((r) => r.body.model)).to.deep.equal(['claude-opus-4-5', 'claude-opus-4-5']);
    expect(sent.map((r) => (r.body.output_config as { effort?: string } | undefined)?.effort)).to.deep.equal([
      'high',
      'high',
    ]);
    // The view: the model it reported, both turns' tokens, and the last turn's prompt (one model call, so its
    // result's usage) against the window Claude Code reported for the model.
    const counted = await waitUntil('both turns counted', async () => {
      const v = (await api.get<Counted>(`/session/${id}`)).body;
      return v.usage?.turns === 2 ? v : undefined;
    });
    const last = ends[1].usage!;
    expect(counted.model).to.equal('claude-opus-4-5');
    expect(counted.usage!.input_tokens).to.equal(ends[0].usage!.input_tokens + last.input_tokens);
    expect(counted.context_tokens).to.equal(
      last.input_tokens + (last.cache_read_input_tokens ?? 0) + (last.cache_creation_input_tokens ?? 0),
    );
    expect(counted.context_window).to.be.a('number').and.above(0);
    expect(counted.context_pct).to.equal(Math.round((100 * counted.context_tokens!) / counted.context_window!));
    await close(id);
  });

  it('a tool call that needs approval is pending until respond: allow runs it, deny reaches Claude Code as a denial', async function () {
    const { api } = city;
    const id = await start();
    const allowed = join(work, 'allowed.txt');
    await deliver(api, id, `run: touch ${allowed} && echo made`);
    const first = await waitUntil('the permission request', async () => (await session(api, id)).pending, 30_000);
    expect(first.kind).to.equal('tool-approval');
    expect(first.prompt).to.match(/^Allow Bash\? .*touch/);
    const listed = await api.get<{ pending: { request_id: string } }>(`/session/${id}/pending`);
    expect(listed.body.pending.request_id).to.equal(first.request_id);
    expect(existsSync(allowed), 'nothing runs before the answer').to.equal(false);
    expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
    await waitForTurn(api, id, 'assistant', 'Tool said: made', 30_000);
    expect(existsSync(allowed)).to.equal(true);
    // The request was answered: answering it again is a 409.
    expectProblem(
      await api.post(`/session/${id}/respond`, { action: 'allow', request_id: first.request_id }),
      409,
      'conflict-wrong-state',
    );

    const denied = join(work, 'denied.txt');
    await deliver(api, id, `run: touch ${denied}`);
    const second = await waitUntil(
      'the second permission request',
      async () => {
        const pending = (await session(api, id)).pending;
        return pending && pending.request_id !== first.request_id ? pending : undefined;
      },
      30_000,
    );
    expect((await api.post(`/session/${id}/respond`, { action: 'deny', text: 'not that one' })).status).to.equal(202);
    // The denial is the tool's result Claude Code sends back to the model.
    await waitForTurn(api, id, 'assistant', /^Tool said: .*not that one/, 30_000);
    expect(existsSync(denied)).to.equal(false);
    const cleared = (await sessionEvents(api, 'session.pending_cleared', id)).map((e) => e.payload);
    expect(cleared).to.deep.include.members([
      { session_id: id, request_id: first.request_id, action: 'allow' },
      { session_id: id, request_id: second.request_id, action: 'deny' },
    ]);
    await close(id);
  });

  it('stop interrupts the turn (its interrupt control request); the session answers the next message', async function () {
    const { api } = city;
    const id = await start();
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    await deliver(api, id, `slow: ${words}`);
    await waitUntil('the turn to be under way', async () => (await session(api, id)).activity === 'in-turn', 30_000);
    const stopped = await api.post<{ status: string }>(`/session/${id}/stop`);
    expect(stopped.body).to.deep.include({ status: 'ok' });
    const end = await waitUntil(
      'the interrupted turn to end',
      async () => (await raw(id)).find((e) => e.kind === 'turn_end'),
      30_000,
    );
    expect(end.subtype).to.equal('error_during_execution');
    expect(await sessionEvents(api, 'session.turn_failed', id), 'asked for, not a failure').to.deep.equal([]);
    await deliver(api, id, 'still there?');
    await waitForTurn(api, id, 'assistant', 'You said: still there?', 30_000);
    expect((await session(api, id)).running).to.equal(true);
    await close(id);
  });

  it('permission-mode: live where Claude Code allows it (acceptEdits), else at the next start (bypassPermissions)', async function () {
    const { api } = city;
    const id = await start();
    const pid = (await session(api, id)).pid;
    const mode = (permission_mode: string) =>
      api.post<{ permission_mode: string; reason: string }>(`/session/${id}/permission-mode`, { permission_mode });
    // acceptEdits: its set_permission_mode control request, answered success by the running program.
    const live = await mode('acceptEdits');
    expect(live.status, JSON.stringify(live.body)).to.equal(200);
    expect(live.body).to.include({ permission_mode: 'acceptEdits', reason: 'permission mode acceptEdits' });
    expect((await session(api, id)).pid, 'the same program').to.equal(pid);
    // bypassPermissions: Claude Code refuses it live (not launched with --dangerously-skip-permissions), so it
    // takes effect when the program next starts, and the session says so.
    const later = await mode('bypassPermissions');
    expect(later.body.reason).to.equal('permission mode bypassPermissions (takes effect when the program next starts)');
    expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
    await waitUntil('the program to end', () => !isAlive(pid!));
    const made = join(work, 'bypassed.txt');
    await deliver(api, id, `run: touch ${made} && echo made`);
    await waitForTurn(api, id, 'assistant', 'Tool said: made', 30_000);
    seenPids.add((await session(api, id)).pid!);
    expect(existsSync(made)).to.equal(true);
    expect(await sessionEvents(api, 'session.pending', id), 'nothing asked').to.deep.equal([]);
    expectProblem(await mode('yolo'), 422, 'validation-failed');
    await close(id);
  });

  it('killed and woken by a message, it resumes the conversation (--resume): the model sees the earlier turns', async function () {
    const { api } = city;
    const id = await start();
    await deliver(api, id, 'remember the word teapot');
    await waitForTurn(api, id, 'assistant', 'You said: remember the word teapot', 30_000);
    const before = await session(api, id);
    expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
    await waitUntil('the program to end', () => !isAlive(before.pid!));
    await deliver(api, id, 'what was the word?');
    await waitForTurn(api, id, 'assistant', 'You said: what was the word?', 30_000);
    const after = await session(api, id);
    seenPids.add(after.pid!);
    expect(after.pid).to.not.equal(before.pid);
    expect(after.provider_session_key).to.equal(before.provider_session_key);
    expect(processesMentioning(before.provider_session_key!), 'started with --resume <key>').to.not.be.empty;
    const request = model.requests.filter((r) => r.userText === 'what was the word?').at(-1)!;
    expect(JSON.stringify(request.body.messages), 'the earlier turn, resumed').to.include('remember the word teapot');
    await close(id);
  });

  it('a conversation Claude Code no longer has: the turn fails saying so, no crash, and the next message starts afresh', async function () {
    const { api } = city;
    const id = await start();
    await deliver(api, id, 'first words');
    await waitForTurn(api, id, 'assistant', 'You said: first words', 30_000);
    const before = await session(api, id);
    expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
    await waitUntil('the program to end', () => !isAlive(before.pid!));
    // Its own store of conversations is gone (another HOME, a cleaned-up machine).
    rmSync(join(home, '.claude', 'projects'), { recursive: true, force: true });
    await deliver(api, id, 'are you there?');
    const [failed] = await waitUntil(
      'session.turn_failed',
      async () => {
        const events = await sessionEvents(api, 'session.turn_failed', id);
        return events.length > 0 ? events : undefined;
      },
      30_000,
    );
    expect(failed.payload.error).to.include(`No conversation found with session ID: ${before.provider_session_key}`);
    await waitUntil('the session to be asleep', async () => (await session(api, id)).running === false);
    const updated = (await sessionEvents(api, 'session.updated', id)).map((e) => e.payload.reason);
    expect(updated.some((r) => String(r).startsWith(`could not resume conversation ${before.provider_session_key}`))).to
      .be.true;
    expect(await sessionEvents(api, 'session.crashed', id), 'not a crash').to.deep.equal([]);
    await deliver(api, id, 'start again');
    await waitForTurn(api, id, 'assistant', 'You said: start again', 30_000);
    const after = await session(api, id);
    seenPids.add(after.pid!);
    expect(after.provider_session_key).to.match(/^[0-9a-f-]{36}$/);
    expect(after.provider_session_key, 'a new conversation').to.not.equal(before.provider_session_key);
    await close(id);
  });

  it('a rate limit ends the turn with the error recorded and an event, not a crash; the next message is answered', async function () {
    const { api } = city;
    const id = await start();
    await deliver(api, id, 'rate-limit me');
    const [failed] = await waitUntil(
      'session.turn_failed',
      async () => {
        const events = await sessionEvents(api, 'session.turn_failed', id);
        return events.length > 0 ? events : undefined;
      },
      30_000,
    );
    expect(failed.payload).to.include({ session_id: id, category: 'rate_limited', status: 429, turn: 1 });
    expect(failed.payload.error).to.match(/429/);
    const entries = await raw(id);
    expect(entries.find((e) => e.kind === 'error')?.text, 'the error, in the transcript').to.match(/429/);
    expect(entries.find((e) => e.kind === 'turn_end')).to.deep.include({ is_error: true });
    expect(
      (await turns(api, id)).filter((t) => t.role === 'assistant'),
      'no reply made up',
    ).to.deep.equal([]);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    await deliver(api, id, 'better now?');
    await waitForTurn(api, id, 'assistant', 'You said: better now?', 30_000);
    expect((await session(api, id)).state).to.equal('active');
    await close(id);
  });

  it('a model server that is down fails the turn as provider_unavailable; the session stays up for the next one', async function () {
    const { api } = city;
    model.failWith(503);
    try {
      const id = await start();
      await deliver(api, id, 'anyone there?');
      const [failed] = await waitUntil(
        'session.turn_failed',
        async () => {
          const events = await sessionEvents(api, 'session.turn_failed', id);
          return events.length > 0 ? events : undefined;
        },
        30_000,
      );
      expect(failed.payload).to.include({ category: 'provider_unavailable', status: 503 });
      expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
      model.failWith(undefined);
      await deliver(api, id, 'back again');
      await waitForTurn(api, id, 'assistant', 'You said: back again', 30_000);
      await close(id);
    } finally {
      model.failWith(undefined);
    }
  });

  it('readiness runs `claude auth status` as the provider would: configured with its API key, needs_auth without; no file left in its HOME', async function () {
    const { api } = city;
    const bareHome = tempDir('ctl-claude-bare-home-');
    try {
      const created = await api.post('/providers', {
        name: 'claude-signed-out',
        base: 'builtin:claude',
        command: CLAUDE,
        env: { HOME: bareHome },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const reply = await api.get<{ providers: Record<string, { status: string; detail?: string }> }>(
        '/provider-readiness?providers=claude-local,claude-signed-out&fresh=true',
      );
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body.providers['claude-local'].status).to.equal('configured');
      expect(reply.body.providers['claude-local'].detail).to.match(/signed in \(api_key\)/);
      expect(reply.body.providers['claude-signed-out'].status).to.equal('needs_auth');
      // The probe ran in a scratch HOME: the provider's own HOME got nothing (claude would create .claude.json).
      expect(readdirSync(bareHome)).to.deep.equal([]);
    } finally {
      rmSync(bareHome, { recursive: true, force: true });
    }
  });

  it('interactive in tmux with a seeded home: read off its screen (and its session status file), nudged twice, a permission answered', async function () {
    const { api, dir } = city;
    const tmuxHome = tempDir('ctl-claude-tmux-home-');
    const key = 'sk-ant-test-0123456789abcdefghijklmnop';
    // What a person's first run would have asked: onboarding done, this key approved, the city's folder trusted.
    writeFileSync(
      join(tmuxHome, '.claude.json'),
      JSON.stringify({
        hasCompletedOnboarding: true,
        customApiKeyResponses: { approved: [key.slice(-20)], rejected: [] },
        projects: { [dir]: { hasTrustDialogAccepted: true } },
      }),
    );
    try {
      const created = await api.post('/providers', {
        name: 'claude-tmux',
        // Since 2.1.3xx its interactive default is auto mode, which runs the Bash call below unasked: ask.
        command: `${CLAUDE} --permission-mode default`,
        runtime: 'tmux',
        screen_rules: 'claude',
        env: {
          HOME: tmuxHome,
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_API_KEY: key,
          DISABLE_TELEMETRY: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
          CLAUDE_CODE_MAX_RETRIES: '0',
        },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const id = await createSession(api, { name: 'claude-tmux' });
      const view = await session(api, id);
      seenPids.add(view.pid!);
      expect(view.attach?.target).to.equal(`ctl-${id}`);
      await deliver(api, id, 'hello from tmux');
      await waitForTurn(api, id, 'assistant', 'You said: hello from tmux', 30_000);
      await deliver(api, id, 'and once more');
      await waitForTurn(api, id, 'assistant', 'You said: and once more', 30_000);
      const made = join(work, 'tmux-made.txt');
      await deliver(api, id, `run: touch ${made}`);
      const asked = await waitUntil('the permission prompt', async () => (await session(api, id)).pending, 30_000);
      expect(asked.kind).to.equal('tool-approval');
      expect(existsSync(made)).to.equal(false);
      const answered = await api.post(`/session/${id}/respond`, { action: 'allow' });
      expect(answered.status, JSON.stringify(answered.body)).to.equal(202);
      await waitUntil('the command to have run', () => existsSync(made), 30_000);
      await close(id);
    } finally {
      rmSync(tmuxHome, { recursive: true, force: true });
    }
  });

  it('a claude command that is not installed: request.failed naming it', async function () {
    const { api } = city;
    const created = await api.post('/providers', {
      name: 'claude-missing',
      base: 'builtin:claude',
      command: '/nonexistent/claude',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const reply = await api.post<{ request_id: string }>('/sessions', { name: 'claude-missing' });
    expect(reply.status).to.equal(202);
    const result = await terminalOf(api, reply.body.request_id);
    expect(result.type).to.equal('request.failed');
    expect(result.payload.error_message).to.include('/nonexistent/claude');
  });
});
