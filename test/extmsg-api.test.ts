import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { packageRoot } from '../shared/paths.js';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import {
  ECHO_AGENT,
  createSession,
  startSessionCity,
  terminalOf,
  type Accepted,
  type SessionCity,
} from './helpers/sessions.js';
import { CSRF } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

interface Posted {
  message_id: string;
  conversation: { conversation_id: string };
  text: string;
  part: number;
  parts: number;
  session_id: string;
}

interface Transcript {
  items: { Sequence: number; Kind: string; Text: string; SourceSessionID: string }[];
  total: number;
  next_cursor?: string;
}

/** A loopback adapter: what the city POSTs to it, and how it answers (`refuse` times 500 first). */
class FakeAdapter {
  readonly posted: Posted[] = [];
  refuse = 0;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        if (this.refuse > 0) {
          this.refuse--;
          res.writeHead(500).end('not now');
          return;
        }
        this.posted.push(JSON.parse(raw) as Posted);
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/outbound`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const room = (id: string) => ({
  scope_id: 'chat.example',
  provider: 'chat',
  account_id: 'bot',
  conversation_id: id,
  kind: 'room',
});

const PEER_AGENT = join(packageRoot, 'test', 'fixtures', 'peer-agent.sh');

let counter = 0;
function inbound(conversation: ReturnType<typeof room>, text: string, id = `m-${++counter}`) {
  return {
    provider: 'chat',
    account_id: 'bot',
    message: {
      provider_message_id: id,
      conversation,
      actor: { id: 'u1', display_name: 'Ada', is_bot: false },
      text,
      received_at: new Date().toISOString(),
    },
  };
}

describe('external messaging (adapters, bindings, groups, transcripts)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let adapter: FakeAdapter;
  let session: string;

  before(async function () {
    adapter = new FakeAdapter();
    await adapter.start();
    city = await startSessionCity(
      'chatty',
      '\n[[agent]]\nname = "helper"\nprovider = "echo"\nmin_active_sessions = 0\n' +
        `\n[providers.gated-echo]\ncommand = "while [ ! -e gate-open ]; do sleep 0.1; done; exec ${ECHO_AGENT}"\nready_prompt_prefix = "ready>"\nenv = { ECHO_READY = "ready>" }\n` +
        ['alpha', 'beta']
          .map(
            (peer) =>
              `\n[providers.peer-of-${peer}]\ncommand = ${JSON.stringify(PEER_AGENT)}\nready_prompt_prefix = "ready>"\nenv = { PEER = "${peer}" }\n`,
          )
          .join(''),
    );
    session = await createSession(city.api, { name: 'echo', title: 'room bot' });
  });
  after(async () => {
    await city?.sup.cleanup();
    await adapter?.stop();
  });

  it('contract: a registered adapter, a bound conversation, an inbound message — the reply reaches the callback; the transcript has both', async function () {
    const { api } = city;
    const registered = await api.post('/extmsg/adapters', {
      provider: 'chat',
      account_id: 'bot',
      callback_url: adapter.url,
      capabilities: { MaxMessageLength: 0, SupportsAttachments: false, SupportsChildConversations: true },
    });
    expect(registered.status, JSON.stringify(registered.body)).to.equal(201);
    expect(registered.body).to.deep.equal({
      provider: 'chat',
      account_id: 'bot',
      name: 'chat-bot',
      status: 'registered',
    });
    // Registering again (an adapter restarting) updates it.
    expect(
      (await api.post('/extmsg/adapters', { provider: 'chat', account_id: 'bot', callback_url: adapter.url })).body,
    ).to.deep.include({ status: 'updated' });

    const bound = await api.post<{ SessionID: string; BindingGeneration: number; Status: string }>('/extmsg/bind', {
      conversation: room('#general'),
      session_id: session,
    });
    expect(bound.status, JSON.stringify(bound.body)).to.equal(200);
    expect(bound.body).to.deep.include({ SessionID: session, BindingGeneration: 1, Status: 'active' });

    const result = await api.post<{ Status: string; TargetSessionID: string; TranscriptEntry: { Sequence: number } }>(
      '/extmsg/inbound',
      inbound(room('#general'), 'hello there'),
    );
    expect(result.status, JSON.stringify(result.body)).to.equal(200);
    expect(result.body).to.deep.include({ Status: 'delivered', TargetSessionID: session });
    expect(result.body.TranscriptEntry.Sequence).to.equal(1);
    const reply = await waitUntil('the reply at the adapter', async () =>
      adapter.posted.find((p) => p.text === 'echo: hello there'),
    );
    expect(reply).to.deep.include({ session_id: session, part: 1, parts: 1 });
    expect(reply.conversation.conversation_id).to.equal('#general');

    const transcript = await api.get<Transcript>(
      '/extmsg/transcript?scope_id=chat.example&provider=chat&account_id=bot&conversation_id=%23general',
    );
    expect(transcript.body.items.map((r) => [r.Sequence, r.Kind, r.Text])).to.deep.equal([
      [1, 'inbound', 'hello there'],
      [2, 'outbound', 'echo: hello there'],
    ]);
    const events = await api.get<{ items: { type: string; payload: Record<string, unknown> }[] }>('/events?limit=200');
    const types = events.body.items.map((e) => e.type);
    expect(types).to.include.members(['extmsg.adapter_added', 'extmsg.bound', 'extmsg.inbound', 'extmsg.outbound']);
    expect(events.body.items.find((e) => e.type === 'extmsg.outbound')?.payload).to.deep.include({
      status: 'delivered',
      attempts: 1,
    });
  });

  it('records a message once however often it arrives; an unbound conversation is recorded and says so', async function () {
    const { api } = city;
    const before = adapter.posted.length;
    const first = await api.post<{ Status: string }>(
      '/extmsg/inbound',
      inbound(room('#general'), 'only once', 'dup-1'),
    );
    expect(first.body.Status).to.equal('delivered');
    const again = await api.post<{ Status: string; TranscriptEntry: { Sequence: number } }>(
      '/extmsg/inbound',
      inbound(room('#general'), 'only once', 'dup-1'),
    );
    expect(again.status).to.equal(200);
    expect(again.body.Status).to.equal('duplicate');
    await waitUntil('the one reply', async () => adapter.posted.some((p) => p.text === 'echo: only once'));
    const transcript = await api.get<Transcript>('/extmsg/transcript?conversation_id=%23general');
    expect(transcript.body.items.filter((r) => r.Text === 'only once')).to.have.length(1);
    expect(adapter.posted.slice(before).filter((p) => p.text === 'echo: only once')).to.have.length(1);

    const lonely = await api.post<{ Status: string; Reason: string; TargetSessionID: string }>(
      '/extmsg/inbound',
      inbound(room('#empty'), 'anyone?'),
    );
    expect(lonely.status).to.equal(200);
    expect(lonely.body).to.deep.include({ Status: 'unbound', TargetSessionID: '' });
    expect(lonely.body.Reason).to.match(/bound to no session or agent/);
    expect((await api.get<Transcript>('/extmsg/transcript?conversation_id=%23empty')).body.total).to.equal(1);
  });

  it('attachments travel as {provider_id, url, mime_type} both ways; backfilled history is recorded as hydrated', async function () {
    const { api } = city;
    const register = (SupportsAttachments: boolean) =>
      api.post('/extmsg/adapters', {
        provider: 'chat',
        account_id: 'bot',
        callback_url: adapter.url,
        capabilities: { MaxMessageLength: 0, SupportsAttachments, SupportsChildConversations: false },
      });
    await register(true);
    expect((await api.post('/extmsg/bind', { conversation: room('#files'), session_id: session })).status).to.equal(
      200,
    );
    const png = { provider_id: 'F1', url: 'https://files.example/a.png', mime_type: 'image/png' };
    const message = inbound(room('#files'), 'look at this');
    const withFile = { ...message, message: { ...message.message, attachments: [png] } };
    const got = await api.post<{ Status: string; TranscriptEntry: { Attachments: unknown[]; Provenance: string } }>(
      '/extmsg/inbound',
      withFile,
    );
    expect(got.status, JSON.stringify(got.body)).to.equal(200);
    expect(got.body.Status).to.equal('delivered');
    expect(got.body.TranscriptEntry).to.deep.include({ Attachments: [png], Provenance: 'live' });
    // The session is told what is attached and where to fetch it.
    await waitUntil('the reply naming the file', async () =>
      adapter.posted.find((p) => p.text.startsWith('echo: look at this') && p.text.includes(png.url)),
    );
    const bad = { ...message, message: { ...message.message, provider_message_id: 'bad-1', attachments: ['x'] } };
    expect((await api.post('/extmsg/inbound', bad)).status).to.be.oneOf([400, 422]);

    const pdf = { provider_id: '', url: 'https://files.example/r.pdf', mime_type: 'application/pdf' };
    const out = await api.post<{ TranscriptEntry: { Attachments: unknown[] }; Receipt: { MessageID: string } }>(
      '/extmsg/outbound',
      { session_id: session, conversation: room('#files'), text: 'the report', attachments: [pdf] },
    );
    expect(out.status, JSON.stringify(out.body)).to.equal(200);
    expect(out.body.TranscriptEntry.Attachments).to.deep.equal([pdf]);
    const posted = adapter.posted.find((p) => p.message_id === out.body.Receipt.MessageID) as Posted & {
      attachments?: unknown[];
    };
    expect(posted.attachments).to.deep.equal([pdf]);
    await register(false);
    expectProblem(
      await api.post('/extmsg/outbound', {
        session_id: session,
        conversation: room('#files'),
        text: 'again',
        attachments: [pdf],
      }),
      422,
      'validation-failed',
    );

    // History from before the adapter was connected: in the transcript, marked hydrated, given to no session.
    const old = inbound(room('#files'), 'said last week');
    const hydrated = await api.post<{
      Status: string;
      TargetSessionID: string;
      TranscriptEntry: { Provenance: string };
    }>('/extmsg/inbound', { ...old, provenance: 'hydrated' });
    expect(hydrated.body).to.deep.include({ Status: 'hydrated', TargetSessionID: '' });
    expect(hydrated.body.TranscriptEntry.Provenance).to.equal('hydrated');
    const transcript = await api.get<{ items: { Text: string; Provenance: string }[] }>(
      '/extmsg/transcript?conversation_id=%23files',
    );
    expect(transcript.body.items.map((r) => [r.Text, r.Provenance])).to.deep.include.members([
      ['look at this', 'live'],
      ['said last week', 'hydrated'],
    ]);
    const inputs = await city.api.get<{ items: { text?: string }[] }>(`/session/${session}/transcript?format=raw`);
    expect(JSON.stringify(inputs.body)).to.not.include('said last week');
  });

  it('a binding with expires_at stops routing when it passes: it ends, says so, and the message is unbound', async function () {
    const { api } = city;
    expectProblem(
      await api.post('/extmsg/bind', {
        conversation: room('#brief'),
        session_id: session,
        expires_at: '2020-01-01T00:00:00Z',
      }),
      422,
      'validation-failed',
    );
    const soon = new Date(Date.now() + 1500).toISOString();
    const bound = await api.post<{ ExpiresAt: string }>('/extmsg/bind', {
      conversation: room('#brief'),
      session_id: session,
      expires_at: soon,
    });
    expect(bound.status, JSON.stringify(bound.body)).to.equal(200);
    expect(bound.body.ExpiresAt).to.equal(soon);
    expect(
      (await api.post<{ Status: string }>('/extmsg/inbound', inbound(room('#brief'), 'in time'))).body.Status,
    ).to.equal('delivered');
    const late = await waitUntil('the binding to expire', async () => {
      const r = await api.post<{ Status: string; Reason: string }>(
        '/extmsg/inbound',
        inbound(room('#brief'), 'too late'),
      );
      return r.body.Status === 'unbound' ? r.body : undefined;
    });
    expect(late.Reason).to.include(`expired at ${soon}`);
    const all = await api.get<{
      items: {
        Conversation: { conversation_id: string };
        Status: string;
        EndedAt?: string;
        Metadata: Record<string, string>;
      }[];
    }>('/extmsg/bindings?all=true');
    const ended = all.body.items.find((b) => b.Conversation.conversation_id === '#brief')!;
    expect(ended).to.deep.include({ Status: 'ended', EndedAt: soon });
    expect(ended.Metadata.ended_reason).to.equal('expired');
    const active = await api.get<{ items: { Conversation: { conversation_id: string } }[] }>('/extmsg/bindings');
    expect(active.body.items.map((b) => b.Conversation.conversation_id)).to.not.include('#brief');
    const events = await api.events('extmsg.unbound');
    expect(events.find((e) => e.subject === '#brief')?.payload).to.deep.include({ reason: 'expired', count: 1 });
  });

  it('bindings: a rebind needs replace and makes a new generation; agents bind too; unbind ends them', async function () {
    const { api } = city;
    const other = await createSession(api, { name: 'echo', title: 'other' });
    expectProblem(
      await api.post('/extmsg/bind', { conversation: room('#general'), session_id: other }),
      409,
      'conflict-wrong-state',
    );
    const moved = await api.post<{ SessionID: string; BindingGeneration: number }>('/extmsg/bind', {
      conversation: room('#general'),
      session_id: other,
      replace: true,
    });
    expect(moved.body).to.deep.include({ SessionID: other, BindingGeneration: 2 });
    const all = await api.get<{ items: { Status: string; BindingGeneration: number }[] }>('/extmsg/bindings?all=true');
    expect(all.body.items.filter((b) => b.Status === 'ended').map((b) => b.BindingGeneration)).to.include(1);
    // An agent binding: its session is started for the message when none runs.
    expect((await api.post('/extmsg/bind', { conversation: room('#help'), agent_name: 'helper' })).status).to.equal(
      200,
    );
    const toAgent = await api.post<{ Status: string; TargetAgentName: string; TargetSessionID: string }>(
      '/extmsg/inbound',
      inbound(room('#help'), 'help me'),
    );
    expect(toAgent.body).to.deep.include({ Status: 'delivered', TargetAgentName: 'helper' });
    await waitUntil('the agent to answer', async () =>
      adapter.posted.some((p) => p.text === 'echo: help me' && p.session_id === toAgent.body.TargetSessionID),
    );
    const unbound = await api.post<{ unbound: { Conversation: { conversation_id: string } }[] }>('/extmsg/unbind', {
      agent_name: 'helper',
    });
    expect(unbound.body.unbound.map((b) => b.Conversation.conversation_id)).to.deep.equal(['#help']);
    expect((await api.get<{ items: unknown[] }>(`/extmsg/bindings?session_id=${other}`)).body.items).to.have.length(1);

    expectProblem(
      await api.post('/extmsg/bind', { conversation: room('#x'), session_id: 'nope' }),
      404,
      'session-not-found',
    );
    expectProblem(
      await api.post('/extmsg/bind', { conversation: room('#x'), agent_name: 'nobody' }),
      404,
      'agent-not-found',
    );
    expectProblem(await api.post('/extmsg/bind', { conversation: room('#x') }), 422, 'validation-failed');
    expectProblem(
      await api.post('/extmsg/bind', { conversation: { ...room('#x'), kind: 'thread' }, session_id: other }),
      422,
      'validation-failed',
    );
  });

  it('outbound: split by the adapter’s MaxMessageLength, never cut; idempotent by key; retried until the adapter takes it', async function () {
    const { api } = city;
    await api.post('/extmsg/adapters', {
      provider: 'chat',
      account_id: 'bot',
      callback_url: adapter.url,
      capabilities: { MaxMessageLength: 20, SupportsAttachments: false, SupportsChildConversations: false },
    });
    const text = 'the quick brown fox jumps over the lazy dog and keeps running';
    const sent = await api.post<{ Receipt: { MessageID: string; Delivered: boolean; Metadata: { parts: string } } }>(
      '/extmsg/outbound',
      {
        session_id: session,
        conversation: room('#general'),
        text,
        idempotency_key: 'k-1',
      },
    );
    expect(sent.status, JSON.stringify(sent.body)).to.equal(200);
    expect(sent.body.Receipt.Delivered).to.equal(true);
    const parts = adapter.posted.filter((p) => p.message_id.startsWith(sent.body.Receipt.MessageID));
    expect(parts.length).to.equal(Number(sent.body.Receipt.Metadata.parts)).and.be.greaterThan(2);
    expect(parts.every((p) => p.text.length <= 20)).to.equal(true);
    expect(parts.map((p) => p.text).join(' ')).to.equal(text);
    const repeat = await api.post<{ Receipt: { MessageID: string } }>('/extmsg/outbound', {
      session_id: session,
      conversation: room('#general'),
      text,
      idempotency_key: 'k-1',
    });
    expect(repeat.body.Receipt.MessageID).to.equal(sent.body.Receipt.MessageID);
    expect(adapter.posted.filter((p) => p.message_id.startsWith(sent.body.Receipt.MessageID))).to.have.length(
      parts.length,
    );

    adapter.refuse = 2;
    const late = await api.post<{
      Receipt: { Delivered: boolean; FailureKind: string; RetryAfter: number; MessageID: string };
    }>('/extmsg/outbound', {
      session_id: session,
      conversation: room('#general'),
      text: 'eventually',
    });
    expect(late.body.Receipt).to.deep.include({ Delivered: false, FailureKind: 'retrying' });
    expect(late.body.Receipt.RetryAfter).to.be.greaterThan(0);
    await waitUntil('the retried delivery', async () =>
      adapter.posted.some((p) => p.message_id === late.body.Receipt.MessageID),
    );
    const outcomes = (
      await api.get<{ items: { seq: number; type: string; payload: { message_id: string; status: string } }[] }>(
        '/events?type=extmsg.outbound&limit=100',
      )
    ).body.items
      .filter((e) => e.payload.message_id === late.body.Receipt.MessageID)
      .sort((a, b) => a.seq - b.seq)
      .map((e) => e.payload.status);
    expect(outcomes).to.deep.equal(['retrying', 'retrying', 'delivered']);

    expectProblem(
      await api.post('/extmsg/outbound', {
        session_id: session,
        conversation: { ...room('#general'), provider: 'nochat', account_id: 'x' },
        text: 'hi',
      }),
      404,
      'adapter-not-found',
    );
    expectProblem(
      await api.post('/extmsg/outbound', { session_id: 'nope', conversation: room('#general'), text: 'hi' }),
      404,
      'session-not-found',
    );
    expectProblem(
      await api.post('/extmsg/adapters', {
        provider: 'evil',
        account_id: 'x',
        callback_url: 'http://169.254.169.254/latest',
      }),
      422,
      'validation-failed',
    );
    expectProblem(
      await api.post('/extmsg/adapters', {
        provider: 'evil',
        account_id: 'x',
        callback_url: 'http://example.com/hook',
      }),
      422,
      'validation-failed',
    );
    expectProblem(
      await api.post('/extmsg/inbound', inbound({ ...room('#general') }, 'x'.repeat(40_000))),
      422,
      'validation-failed',
    );
    expectProblem(
      await api.post('/extmsg/inbound', {
        ...inbound(room('#general'), 'hi'),
        provider: 'ghost',
        account_id: 'none',
        message: {
          ...inbound(room('#general'), 'hi').message,
          conversation: { ...room('#general'), provider: 'ghost', account_id: 'none' },
        },
      }),
      404,
      'adapter-not-found',
    );
    await api.post('/extmsg/adapters', {
      provider: 'chat',
      account_id: 'bot',
      callback_url: adapter.url,
      capabilities: { MaxMessageLength: 0, SupportsAttachments: false, SupportsChildConversations: true },
    });
    // A retried registration with its Idempotency-Key answers as the first; another body under the key is refused.
    const keyed = { provider: 'keyed', account_id: 'x', callback_url: adapter.url };
    const once = await api.post('/extmsg/adapters', keyed, { 'Idempotency-Key': 'reg-1' });
    const twice = await api.post('/extmsg/adapters', keyed, { 'Idempotency-Key': 'reg-1' });
    expect([once.status, twice.status]).to.deep.equal([201, 201]);
    expect(twice.body).to.deep.equal(once.body);
    expect(once.body).to.deep.include({ status: 'registered' });
    expectProblem(
      await api.post('/extmsg/adapters', { ...keyed, name: 'other' }, { 'Idempotency-Key': 'reg-1' }),
      422,
      'idempotency-mismatch',
    );
    await api.call('DELETE', '/extmsg/adapters', { provider: 'keyed', account_id: 'x' });
    // DELETE takes its adapter in the body.
    await api.post('/extmsg/adapters', { provider: 'tmp', account_id: 'x', callback_url: adapter.url });
    expect((await api.call('DELETE', '/extmsg/adapters', { provider: 'tmp', account_id: 'x' })).status).to.equal(200);
    expectProblem(
      await api.call('DELETE', '/extmsg/adapters', { provider: 'tmp', account_id: 'x' }),
      404,
      'adapter-not-found',
    );
  });

  it('groups: two sessions in one room, each addressed by its handle; untargeted messages go to the default', async function () {
    const { api } = city;
    const alpha = await createSession(api, { name: 'echo', title: 'alpha' });
    const beta = await createSession(api, { name: 'echo', title: 'beta' });
    const group = await api.post<{ ID: string; Mode: string }>('/extmsg/groups', {
      root_conversation: room('#team'),
      default_handle: 'alpha',
    });
    expect(group.status).to.equal(201);
    expect(group.body.Mode).to.equal('launcher');
    expect((await api.post<{ ID: string }>('/extmsg/groups', { root_conversation: room('#team') })).body.ID).to.equal(
      group.body.ID,
    );
    for (const [handle, id] of [
      ['alpha', alpha],
      ['beta', beta],
    ]) {
      const p = await api.post<{ Handle: string; SessionID: string }>('/extmsg/participants', {
        group_id: group.body.ID,
        handle,
        session_id: id,
      });
      expect(p.body).to.deep.include({ Handle: handle, SessionID: id });
    }
    const toBeta = await api.post<{ TargetSessionID: string; GroupRoute: { Match: string } }>(
      '/extmsg/inbound',
      inbound(room('#team'), '@beta: status please'),
    );
    expect(toBeta.body.TargetSessionID).to.equal(beta);
    expect(toBeta.body.GroupRoute.Match).to.equal('mention');
    await waitUntil('beta to answer', async () =>
      adapter.posted.some((p) => p.session_id === beta && p.text === 'echo: status please'),
    );
    const toDefault = await api.post<{ TargetSessionID: string; GroupRoute: { Match: string } }>(
      '/extmsg/inbound',
      inbound(room('#team'), 'anyone'),
    );
    expect(toDefault.body).to.deep.include({ TargetSessionID: alpha });
    expect(toDefault.body.GroupRoute.Match).to.equal('default');
    const fetched = await api.get<{ ID: string; LastAddressedHandle: string; Participants: unknown[] }>(
      '/extmsg/groups?conversation_id=%23team',
    );
    expect(fetched.body).to.deep.include({ ID: group.body.ID, LastAddressedHandle: 'beta' });
    expect(fetched.body.Participants).to.have.length(2);
    const removed = await api.call('DELETE', '/extmsg/participants', { group_id: group.body.ID, handle: 'beta' });
    expect(removed.status, JSON.stringify(removed.body)).to.equal(200);
    expectProblem(
      await api.call('DELETE', '/extmsg/participants', { group_id: group.body.ID, handle: 'beta' }),
      404,
      'extmsg-group-not-found',
    );
    expectProblem(await api.get('/extmsg/groups?conversation_id=%23nothing'), 404, 'extmsg-group-not-found');
  });

  it('sessions that address each other in a room stop at the group’s fan-out limits', async function () {
    const { api } = city;
    // alpha answers `@beta …`, beta answers `@alpha …`: without limits they would talk for ever.
    const alpha = await createSession(api, { name: 'peer-of-beta', title: 'loop alpha' });
    const beta = await createSession(api, { name: 'peer-of-alpha', title: 'loop beta' });
    const group = await api.post<{ ID: string }>('/extmsg/groups', {
      root_conversation: room('#loop'),
      default_handle: 'alpha',
    });
    await api.post('/extmsg/participants', { group_id: group.body.ID, handle: 'alpha', session_id: alpha });
    await api.post('/extmsg/participants', { group_id: group.body.ID, handle: 'beta', session_id: beta });
    const before = adapter.posted.length;
    await api.post('/extmsg/inbound', inbound(room('#loop'), 'start'));
    // alpha, beta, alpha, beta (four peer deliveries, two publishes each), and alpha's last reply goes only out.
    const loop = () => adapter.posted.slice(before).filter((p) => p.conversation.conversation_id === '#loop');
    await waitUntil('five replies in #loop', async () => loop().length >= 5).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(loop().map((p) => [p.session_id, p.text]))}`);
    });
    // Both sessions idle with nothing queued: the chain is over, and nothing more of it is on its way.
    await waitUntil('alpha and beta to be idle', async () => {
      for (const id of [alpha, beta]) {
        const view = (await api.get<{ activity?: string; queued: number }>(`/session/${id}`)).body;
        if (view.activity === 'in-turn' || view.queued > 0) return false;
      }
      return true;
    });
    expect(loop().map((p) => p.session_id)).to.deep.equal([alpha, beta, alpha, beta, alpha]);
    expect(loop()[0].text).to.equal('@beta start');
  });

  it('transcript pages by sequence in either order; acks move forward only; all of it survives a controller restart', async function () {
    const { api } = city;
    const conv = room('#log');
    for (let i = 1; i <= 25; i++) await api.post('/extmsg/inbound', inbound(conv, `line ${i}`, `log-${i}`));
    const q = 'scope_id=chat.example&provider=chat&account_id=bot&conversation_id=%23log';
    const first = await api.get<Transcript>(`/extmsg/transcript?${q}&limit=10`);
    expect(first.body.items.map((r) => r.Sequence)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(first.body.total).to.equal(25);
    expect(first.body.next_cursor).to.be.a('string');
    const second = await api.get<Transcript>(`/extmsg/transcript?${q}&limit=10&after_sequence=10`);
    expect(second.body.items[0].Sequence).to.equal(11);
    const newest = await api.get<Transcript>(`/extmsg/transcript?${q}&limit=3&order=desc`);
    expect(newest.body.items.map((r) => r.Sequence)).to.deep.equal([25, 24, 23]);
    expectProblem(await api.get(`/extmsg/transcript?${q}&limit=501`), 422, 'validation-failed');
    const ack = await api.post<{ acked_sequence: number }>('/extmsg/transcript/ack', {
      session_id: session,
      conversation: conv,
      sequence: 20,
    });
    expect(ack.body.acked_sequence).to.equal(20);
    expect(
      (
        await api.post<{ acked_sequence: number }>('/extmsg/transcript/ack', {
          session_id: session,
          conversation: conv,
          sequence: 5,
        })
      ).body.acked_sequence,
    ).to.equal(20);
    expectProblem(
      await api.post('/extmsg/transcript/ack', { session_id: session, conversation: conv, sequence: 99 }),
      422,
      'validation-failed',
    );

    // The controller goes and comes back: sequences go on, repeats are still repeats, bindings are kept.
    await fetch(`${city.sup.base}/v0/city/chatty/stop`, { method: 'POST', headers: CSRF });
    await waitUntil('the city to stop', async () => (await city.sup.city('chatty'))?.running === false);
    await fetch(`${city.sup.base}/v0/city/chatty/start`, { method: 'POST', headers: CSRF });
    await waitUntil('the city to run', async () => (await city.sup.city('chatty'))?.running === true);
    const repeat = await api.post<{ Status: string }>('/extmsg/inbound', inbound(conv, 'line 25', 'log-25'));
    expect(repeat.body.Status).to.equal('duplicate');
    const next = await api.post<{ TranscriptEntry: { Sequence: number } }>(
      '/extmsg/inbound',
      inbound(conv, 'line 26', 'log-26'),
    );
    expect(next.body.TranscriptEntry.Sequence).to.equal(26);
    expect((await api.get<{ items: unknown[] }>('/extmsg/bindings')).body.items.length).to.be.greaterThan(0);
    expect((await api.get<{ items: unknown[] }>('/extmsg/adapters')).body.items).to.have.length(1);
  });

  it('transcript pages over every conversation it lists: A1, A2, A3, B1 with limit 2 lists B1 too', async function () {
    const { api } = city;
    await api.post('/extmsg/adapters', { provider: 'chat', account_id: 'bot', callback_url: adapter.url });
    const paged = (id: string) => ({ ...room(id), scope_id: 'paging.example' });
    for (const [conv, text] of [
      ['#a', 'A1'],
      ['#a', 'A2'],
      ['#a', 'A3'],
      ['#b', 'B1'],
    ]) {
      expect((await api.post('/extmsg/inbound', inbound(paged(conv), text))).status).to.equal(200);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 5; pages++) {
      const page = await api.get<Transcript>(
        `/extmsg/transcript?scope_id=paging.example&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status, JSON.stringify(page.body)).to.equal(200);
      expect(page.body.total).to.equal(4);
      seen.push(...page.body.items.map((r) => r.Text));
      cursor = page.body.next_cursor;
      if (!cursor) break;
    }
    expect(seen).to.deep.equal(['A1', 'A2', 'A3', 'B1']);
    const newest = await api.get<Transcript>('/extmsg/transcript?scope_id=paging.example&limit=3&order=desc');
    expect(newest.body.items.map((r) => r.Text)).to.deep.equal(['B1', 'A3', 'A2']);
    const rest = await api.get<Transcript>(
      `/extmsg/transcript?scope_id=paging.example&limit=3&order=desc&cursor=${encodeURIComponent(newest.body.next_cursor!)}`,
    );
    expect(rest.body.items.map((r) => r.Text)).to.deep.equal(['A1']);
    expect(rest.body.next_cursor).to.equal(undefined);
    expectProblem(await api.get('/extmsg/transcript?scope_id=paging.example&cursor=12'), 400, 'invalid-cursor');
  });

  // The controller stops while the gated session is still being created: its program ends with the controller, and
  // its queue and its create wait on disk for the next controller, which starts it again and delivers them.
  it('a message queued for a session across a controller restart is answered to its conversation', async function () {
    const { api } = city;
    await api.post('/extmsg/adapters', { provider: 'chat', account_id: 'bot', callback_url: adapter.url });
    // A program that becomes ready only once the test says so: the message waits in the session's queue.
    const gate = join(city.dir, 'gate-open');
    const created = await api.post<Accepted>('/sessions', { name: 'gated-echo', title: 'gated' });
    expect(created.status, JSON.stringify(created.body)).to.equal(202);
    const gated = created.body.session_id;
    const conv = room('#restart');
    expect((await api.post('/extmsg/bind', { conversation: conv, session_id: gated })).status).to.equal(200);
    const sent = await api.post<{ Status: string }>('/extmsg/inbound', inbound(conv, 'across a restart'));
    expect(sent.body.Status).to.equal('delivered');
    await waitUntil('the message to be queued', async () => {
      const view = await api.get<{ queued: number }>(`/session/${gated}`);
      return view.body.queued === 1;
    });

    await fetch(`${city.sup.base}/v0/city/chatty/stop`, { method: 'POST', headers: CSRF });
    await waitUntil('the city to stop', async () => (await city.sup.city('chatty'))?.running === false);
    await fetch(`${city.sup.base}/v0/city/chatty/start`, { method: 'POST', headers: CSRF });
    await waitUntil('the city to run', async () => (await city.sup.city('chatty'))?.running === true);
    writeFileSync(gate, '');
    const reply = await waitUntil(
      'the reply at the adapter',
      async () => adapter.posted.find((p) => p.session_id === gated && p.conversation.conversation_id === '#restart'),
      30_000,
    );
    expect(reply.text).to.equal('echo: across a restart');
    // The create the first controller never finished ends with its result, not a failure.
    const result = await terminalOf(api, created.body.request_id);
    expect(result.type, JSON.stringify(result.payload)).to.equal('request.result.session.create');
  });

  it('the CLI: adapters, bind, bindings, transcript, unbind', async function () {
    const ctl = (...args: string[]) => city.sup.ctl(['--city', 'chatty', 'extmsg', ...args]);
    const conv = ['--provider', 'chat', '--account', 'bot', '--scope', 'chat.example', '--conversation', '#cli'];
    const adapters = expectSuccess(await ctl('adapters'));
    expect(adapters[0]).to.match(/^NAME\s+PROVIDER\s+ACCOUNT\s+STATE\s+PENDING\s+CALLBACK(\s+LAST ERROR)?$/);
    expect(expectSuccess(await ctl('bind', ...conv, '--agent', 'helper'))).to.deep.equal([
      'Bound #cli to agent helper (generation 1)',
    ]);
    const list = expectSuccess(await ctl('bindings'));
    expect(list.some((l) => /^chat:#cli\s+-\s+helper\s+1\s+active\s+/.test(l))).to.equal(true);
    await city.api.post('/extmsg/inbound', inbound(room('#cli'), 'from the cli test'));
    const transcript = await waitUntil('the reply in the transcript', async () => {
      const out = expectSuccess(await ctl('transcript', ...conv));
      return out.some((l) => /^2\s+out\s+/.test(l)) ? out : undefined;
    });
    expect(transcript[0]).to.match(/^SEQ\s+DIR\s+FROM\s+TEXT$/);
    expect(transcript[1]).to.match(/^1\s+in\s+Ada\s+from the cli test$/);
    expect(expectSuccess(await ctl('unbind', ...conv))).to.deep.equal(['Unbound #cli']);
    expectFailure(await ctl('bind', ...conv), 'extmsg bind', /--session or --agent is required/);
    const brief = ['--provider', 'chat', '--account', 'bot', '--scope', 'chat.example', '--conversation', '#cli-brief'];
    const until = expectSuccess(await ctl('bind', ...brief, '--agent', 'helper', '--for', '1h'));
    const at = /until (\S+)\)$/.exec(until[0])?.[1];
    expect(Date.parse(at!) - Date.now()).to.be.within(3_000_000, 3_600_000);
    expectFailure(await ctl('bind', ...brief, '--agent', 'helper', '--for', 'soon'), 'extmsg bind', /invalid --for/);
    expectFailure(await ctl('transcript', ...conv, '--limit', 'many'), 'extmsg transcript', /invalid --limit/);
  });
});
