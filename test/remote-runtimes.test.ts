import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import {
  createSession,
  deliver,
  send,
  session,
  sessionEvents,
  startSessionCity,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

/** Where the example agents (and the ACP SDK the ACP one imports) are installed on the host. */
const AGENTS = '/srv/agents';

interface RemoteRuntime {
  name: string;
  agent: string;
  /** Its program on the host, by what its command line holds. */
  program: string;
  reply: (text: string) => string;
}

const saidBack = (text: string) => `You said: ${text}`;

const RUNTIMES: RemoteRuntime[] = [
  { name: 'pipe, text protocol (echo.sh)', agent: 'r-echo', program: 'echo.sh', reply: (t) => `echo: ${t}` },
  { name: 'pipe, stream-json protocol', agent: 'r-stream', program: 'stream-json-agent.mjs', reply: saidBack },
  { name: 'ACP', agent: 'r-acp', program: 'acp-agent.mjs', reply: saidBack },
  {
    name: 'tmux, read by screen rules (one control client)',
    agent: 'r-tui',
    program: 'tui-agent.mjs',
    reply: saidBack,
  },
];

// The session runtimes' shared behaviours with each program on a host over OpenSSH: started there (the host's process
// table), a message a turn answered through the controller, a kill then a message that wakes it there again, and a
// close that leaves nothing on the host. Codex's exec runtime (the real Codex, its model server tunnelled to the host)
// is in remote-real-cli.test.ts.
describe('session runtimes on a host over OpenSSH (a real supervisor, a network-namespace host)', function () {
  this.timeout(180_000);
  let hosts: TestHosts;
  let host: TestHost;
  let city: SessionCity;
  let counter = 0;

  const onHost = (program: string) => host.processes().filter((p) => p.args.includes(`${AGENTS}/${program}`));

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    hosts = await makeHosts(1, { slots: 8 });
    [host] = hosts.hosts as [TestHost];
    host.put(join(packageRoot, 'examples', 'agents'), AGENTS);
    for (const pkg of ['@agentclientprotocol/sdk', 'zod'])
      host.put(join(packageRoot, 'node_modules', pkg), `${AGENTS}/node_modules/${pkg}`);
    const agent = (name: string, provider: string) =>
      `[[agent]]\nname = "${name}"\nprovider = "${provider}"\nhosts = ["${host.name}"]\nmin_active_sessions = 0\n`;
    city = await startSessionCity(
      'remote-runtimes',
      `
${host.tomlTable()}
[providers.h-echo]
command = "${AGENTS}/echo.sh"
ready_prompt_prefix = "ready>"
pending_pattern = '^\\? (.*)$'
env = { ECHO_READY = "ready>" }

[providers.h-stream]
command = "node ${AGENTS}/stream-json-agent.mjs"
protocol = "stream-json"

[providers.h-acp]
command = "node ${AGENTS}/acp-agent.mjs"
protocol = "acp"

[providers.h-tui]
command = "node ${AGENTS}/tui-agent.mjs"
runtime = "tmux"
screen_rules = "tui-agent"

${agent('r-echo', 'h-echo')}
${agent('r-stream', 'h-stream')}
${agent('r-acp', 'h-acp')}
${agent('r-tui', 'h-tui')}
`,
    );
  });

  before(async function () {
    // Sessions are placed only on a host that has answered its first check.
    if (!city) return;
    await waitUntil('the host up', async () => {
      const reply = await city.api.get<{ state: string }>(`/hosts/${host.name}`);
      return reply.body.state === 'up';
    });
  });

  after(async function () {
    await city?.sup.cleanup();
    await hosts?.cleanup();
  });

  it('interrupts a turn and answers a question of a program on the host (text protocol)', async function () {
    const { api } = city;
    const id = await createSession(api, { kind: 'agent', name: 'r-echo' });
    // Interrupt: SIGINT to its group on the host, by a command over the host's connection.
    await send(api, id, 'sleep 30');
    await waitUntil('the sleep in progress', async () => (await session(api, id)).activity === 'in-turn');
    expect((await api.post<{ status: string }>(`/session/${id}/stop`)).body).to.deep.equal({ status: 'ok', id });
    await waitForTurn(api, id, 'assistant', 'interrupted');
    // Respond: the question it asks there is pending here, and the answer reaches it there.
    await deliver(api, id, 'ask what is your name?');
    const pending = await waitUntil('the question', async () => (await session(api, id)).pending);
    expect(pending).to.include({ kind: 'question', prompt: 'what is your name?' });
    expect((await api.post(`/session/${id}/respond`, { action: 'answer', text: 'Ada' })).status).to.equal(202);
    await waitForTurn(api, id, 'assistant', 'answer: Ada');
    await api.post(`/session/${id}/close`);
  });

  for (const runtime of RUNTIMES) {
    describe(runtime.name, function () {
      it('starts on the host, and a message is a turn answered through the controller', async function () {
        const { api } = city;
        const id = await createSession(api, { kind: 'agent', name: runtime.agent });
        const view = await session(api, id);
        expect(view).to.include({ state: 'active', running: true });
        expect((view as unknown as { host: string }).host).to.equal(host.name);
        await waitUntil('its program on the host', () => onHost(runtime.program).length > 0);
        const text = `hello ${++counter}`;
        await deliver(api, id, text);
        await waitForTurn(api, id, 'assistant', runtime.reply(text));
        await api.post(`/session/${id}/close`);
        await waitUntil('its program gone from the host', () => onHost(runtime.program).length === 0);
      });

      it('kill ends it there; a message wakes it there again and is answered; close leaves nothing there', async function () {
        const { api } = city;
        const id = await createSession(api, { kind: 'agent', name: runtime.agent });
        await waitUntil('its program on the host', () => onHost(runtime.program).length > 0);
        expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
        await waitUntil('asleep', async () => (await session(api, id)).state === 'asleep');
        await waitUntil('its program gone from the host', () => onHost(runtime.program).length === 0);
        await waitUntil('session.stopped', async () => (await sessionEvents(api, 'session.stopped', id)).length === 1);
        const text = `after the kill ${++counter}`;
        await deliver(api, id, text);
        await waitForTurn(api, id, 'assistant', runtime.reply(text));
        expect(onHost(runtime.program).length).to.be.above(0);
        expect((await api.post(`/session/${id}/close`)).status).to.equal(200);
        expect(await session(api, id)).to.include({ state: 'closed', running: false });
        await waitUntil('its program gone from the host', () => onHost(runtime.program).length === 0);
      });
    });
  }
});
