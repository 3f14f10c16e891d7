import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { startScriptedClaude, type ScriptedClaude } from './helpers/claude-city.js';
import { isAlive } from './helpers/processes.js';
import { createSession, session, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface RawEntry {
  seq: number;
  kind: string;
  text?: string;
  name?: string;
  tool_use_id?: string;
  status?: string;
  parent_tool_use_id?: string;
}

/** A loopback chat adapter: the replies the city posts to it. */
async function startAdapter(): Promise<{ url: string; posted: { text: string }[]; server: Server }> {
  const posted: { text: string }[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      posted.push(JSON.parse(raw) as { text: string });
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/outbound`, posted, server };
}

const room = { scope_id: 'chat.example', provider: 'chat', account_id: 'bot', conversation_id: '#work', kind: 'room' };

/**
 * The real Claude Code (the dev dependency) delegating to a subagent, offline: the scripted model server answers
 * `delegate: run: echo hi` with a call of Claude Code's Agent tool (in the foreground); the subagent it starts is
 * asked the same way for `echo hi` through Bash and reports `Tool said: hi`; the main agent then answers
 * `Delegated work is done.`. One real `claude` process (~300 MB).
 */
describe('subagents of the real Claude Code (stream-json, against a scripted model server)', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let claude: ScriptedClaude;
  let adapter: Awaited<ReturnType<typeof startAdapter>>;
  let pid: number | undefined;
  /** The session of the first test, which the second goes on talking to. */
  let sessionId: string | undefined;

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_CLAUDE_VERSION is installed on first use
    claude = await startScriptedClaude();
    adapter = await startAdapter();
    city = await startSessionCity('delegates');
    const created = await city.api.post('/providers', claude.providerBody('claude-local'));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
  });

  after(async function () {
    await city?.sup.cleanup();
    await claude?.close();
    await new Promise<void>((resolve) => (adapter ? adapter.server.close(() => resolve()) : resolve()));
    if (pid) expect(isAlive(pid), `claude ${pid} outlived its city`).to.equal(false);
  });

  it("keeps a subagent's turns under /agents: the conversation, last_output and the chat reply are the main agent's", async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'claude-local' });
    pid = (await session(api, id)).pid;
    // A session that started no subagent lists none.
    expect((await api.get(`/session/${id}/agents`)).body).to.deep.equal({ agents: [] });

    expect(
      (await api.post('/extmsg/adapters', { provider: 'chat', account_id: 'bot', callback_url: adapter.url })).status,
    ).to.equal(201);
    expect((await api.post('/extmsg/bind', { conversation: room, session_id: id })).status).to.equal(200);
    const inbound = await api.post('/extmsg/inbound', {
      provider: 'chat',
      account_id: 'bot',
      message: {
        provider_message_id: 'm-1',
        conversation: room,
        actor: { id: 'u1', display_name: 'Ada', is_bot: false },
        text: 'delegate: run: echo hi',
        received_at: new Date().toISOString(),
      },
    });
    expect(inbound.status, JSON.stringify(inbound.body)).to.equal(200);

    // The chat hears the main agent's answer, and only it.
    const reply = await waitUntil('the reply at the adapter', async () => adapter.posted[0], 60_000);
    expect(reply.text).to.equal('Delegated work is done.');
    expect((await session(api, id)).last_output).to.equal('Delegated work is done.');

    // The main conversation: the message, the Agent call, its result (the subagent's report), the answer.
    const raw = (await api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`)).body
      .messages;
    const spoken = raw.filter((e) => ['user', 'assistant', 'tool_call', 'tool_result'].includes(e.kind));
    expect(spoken.map((e) => e.kind)).to.deep.equal(['user', 'tool_call', 'tool_result', 'assistant']);
    const call = spoken[1];
    expect(call).to.include({ name: 'Agent' });
    expect(spoken[2].tool_use_id).to.equal(call.tool_use_id);
    expect(spoken[2].text).to.include('Tool said: hi');
    expect(spoken[3].text).to.equal('Delegated work is done.');
    expect(raw.some((e) => e.text?.startsWith('Bash '))).to.equal(false);

    // The subagent, under the call that started it, with its own turns.
    const listed = await api.get<{ agents: { agent_id: string; parent_tool_use_id: string }[] }>(
      `/session/${id}/agents`,
    );
    expect(listed.status).to.equal(200);
    expect(listed.body.agents).to.have.length(1);
    const [agent] = listed.body.agents;
    expect(agent.parent_tool_use_id).to.equal(call.tool_use_id);
    const shown = await waitUntil('the subagent to be reported done', async () => {
      const got = await api.get<{ messages: RawEntry[]; status: string }>(`/session/${id}/agents/${agent.agent_id}`);
      return got.body.status === 'completed' ? got.body : undefined;
    });
    expect(shown.messages.map((m) => [m.kind, m.kind === 'turn_end' ? m.status : m.text])).to.deep.equal([
      ['start', 'run: echo hi'],
      ['user', 'run: echo hi'],
      ['tool_call', 'Bash {"command":"echo hi","description":"Run the command the test asked for"}'],
      ['tool_result', 'hi'],
      ['assistant', 'Tool said: hi'],
      ['turn_end', 'completed'],
    ]);
    expect(shown.messages.every((m) => m.parent_tool_use_id === call.tool_use_id)).to.equal(true);

    expectProblem(await api.get(`/session/${id}/agents/a0000000000000000`), 404, 'agent-not-found');
    expectProblem(await api.get(`/session/nope/agents`), 404, 'session-not-found');

    // The CLI shows them.
    const cliList = await city.sup.ctl(['--city', 'delegates', 'session', 'agents', id]);
    expect(cliList.code, cliList.stderr).to.equal(0);
    expect(cliList.stdout).to.match(
      new RegExp(`${agent.agent_id}\\s+${call.tool_use_id}\\s+completed\\s+Delegated task`),
    );
    const cliOne = await city.sup.ctl(['--city', 'delegates', 'session', 'agents', id, agent.agent_id]);
    expect(cliOne.code, cliOne.stderr).to.equal(0);
    expect(cliOne.stdout).to.include('Status: completed').and.include('assistant Tool said: hi');
    const cliMissing = await city.sup.ctl(['--city', 'delegates', 'session', 'agents', id, 'nope']);
    expect(cliMissing.code).to.equal(1);
    expect(cliMissing.stderr.trim().split('\n')).to.have.length(1);
    sessionId = id;
  });

  it('a subagent in the background: the turn Claude Code begins when it is done is a turn, answered to the chat', async function () {
    const { api } = city;
    const id = sessionId!;
    const before = adapter.posted.length;
    const inbound = await api.post('/extmsg/inbound', {
      provider: 'chat',
      account_id: 'bot',
      message: {
        provider_message_id: 'm-2',
        conversation: room,
        actor: { id: 'u1', display_name: 'Ada', is_bot: false },
        text: 'delegate in background: run: echo later',
        received_at: new Date().toISOString(),
      },
    });
    expect(inbound.status, JSON.stringify(inbound.body)).to.equal(200);
    // The message's turn ends as soon as the subagent is launched; the answer comes in Claude Code's own turn.
    await waitUntil('both replies at the adapter', async () => adapter.posted.length >= before + 2, 60_000);
    expect(adapter.posted.slice(before).map((p) => p.text)).to.deep.equal([
      'Delegated work is done.',
      'The subagent reported: Tool said: later',
    ]);
    const lines = (await session(api, id)).last_output!.split('\n');
    expect(lines.at(-1)).to.equal('The subagent reported: Tool said: later');
    expect(lines).to.not.include('Tool said: later');

    const raw = (
      await api.get<{ messages: (RawEntry & { turn?: number })[] }>(`/session/${id}/transcript?format=raw&tail=1000`)
    ).body.messages;
    const own = raw.find((e) => e.kind === 'notice' && e.text === 'the program began a turn of its own');
    expect(own, 'a notice opens the turn Claude Code began').to.not.equal(undefined);
    const ends = raw.filter((e) => e.kind === 'turn_end').map((e) => e.turn);
    expect(ends).to.include(own!.turn);
    expect(new Set(ends).size, 'each turn ends once').to.equal(ends.length);

    const agents = (await api.get<{ agents: { agent_id: string }[] }>(`/session/${id}/agents`)).body.agents;
    expect(agents).to.have.length(2);
    const later = await api.get<{ messages: RawEntry[]; status: string }>(
      `/session/${id}/agents/${agents[1].agent_id}`,
    );
    expect(later.body.status).to.equal('completed');
    expect(later.body.messages.map((m) => m.text)).to.include('Tool said: later');
  });
});
