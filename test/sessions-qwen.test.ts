import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startAgentSessionOfCli, type AgentSessionOfCli } from './helpers/gemini-family-sessions.js';
import type { ModelServer } from './helpers/model-server.js';
import { descendantsOf, isAlive } from './helpers/processes.js';
import { deliver, session, sessionEvents, turns, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

/**
 * Qwen Code itself (0.24.4 as pinned; see docs/agent-clis.md) in its ACP mode (`qwen --acp`, the `qwen` preset),
 * offline: its model is the scripted server's OpenAI Chat Completions API (test/helpers/model-server.ts) at
 * OPENAI_BASE_URL, which echoes and asks for `run_shell_command` on `run:`. One agent session, one Qwen Code
 * process (~15 s to start on a busy machine), carries the tests in order; the last restarts it.
 */
describe('an agent session of the real Qwen Code (ACP, against a scripted model server)', function () {
  this.timeout(90_000);
  const prompt = 'You are the coder agent of this city: close each bead with ctl when it is done.';
  let cli: AgentSessionOfCli;
  let city: SessionCity;
  let model: ModelServer;
  let work: string;
  let id: string;
  let seenPids: Set<number>;

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_QWEN_VERSION is installed on first use
    cli = await startAgentSessionOfCli({
      cli: 'qwen',
      cityName: 'qwen',
      settingsDir: '.qwen',
      // Its background memory agent (model calls of its own after each turn) is off: the requests a test reads
      // are the session's.
      settings: {
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { enableAutoUpdate: false },
        memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false },
      },
      provider: (server, cliHome) => ({
        env: {
          HOME: cliHome,
          OPENAI_BASE_URL: `${server.url}/v1`,
          OPENAI_API_KEY: 'test-key',
          OPENAI_MODEL: 'scripted',
        },
      }),
      prompt,
    });
    ({ city, model, work, id, seenPids } = cli);
  });

  after(async function () {
    await cli?.close();
  });

  const raw = () => cli.raw();

  /** The messages the model was sent with the turn whose user text is `text`. */
  function sentWith(text: string): { role: string; content: unknown }[] {
    const request = model.requests.filter((r) => r.api === 'chat' && r.userText === text).at(-1);
    expect(request, `a request for ${JSON.stringify(text)}`).to.not.equal(undefined);
    return request!.body.messages as { role: string; content: unknown }[];
  }

  it("answers, its agent's prompt appended to Qwen Code's system prompt and never a turn of its own", async function () {
    const { api } = city;
    await deliver(api, id, 'hello there');
    await waitForTurn(api, id, 'assistant', 'You said: hello there', 60_000);
    expect((await turns(api, id)).map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'hello there'],
      ['assistant', 'You said: hello there'],
    ]);
    const view = await session(api, id);
    expect(view.provider_session_key, "Qwen Code's session id, kept to load it").to.match(/^[0-9a-f-]{36}$/);
    const [system, ...rest] = sentWith('hello there');
    expect(system.role).to.equal('system');
    expect(String(system.content).trimEnd().endsWith(prompt), 'the end of its system prompt').to.equal(true);
    expect(JSON.stringify(rest)).to.not.include(prompt);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    // Its launcher and one Node below it: the preset keeps Qwen Code from starting another for a larger heap.
    expect(descendantsOf(view.pid!).filter((p) => /qwen-code/.test(p.cmdline))).to.have.length(1);
  });

  it('a command asks for permission: allow through respond runs it, deny does not', async function () {
    const { api } = city;
    const allowed = join(work, 'allowed.txt');
    await deliver(api, id, `run: touch ${allowed}`);
    const first = await waitUntil('the permission request', async () => (await session(api, id)).pending, 60_000);
    expect(first.kind).to.equal('tool-approval');
    expect(first.prompt).to.include(`touch ${allowed}`);
    expect(existsSync(allowed), 'nothing runs before the answer').to.equal(false);
    expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
    await waitForTurn(api, id, 'assistant', /^Tool said: Command: touch/, 60_000);
    expect(existsSync(allowed)).to.equal(true);

    const denied = join(work, 'denied.txt');
    await deliver(api, id, `run: touch ${denied}`);
    const second = await waitUntil(
      'the second permission request',
      async () => {
        const pending = (await session(api, id)).pending;
        return pending && pending.request_id !== first.request_id ? pending : undefined;
      },
      60_000,
    );
    expect((await api.post(`/session/${id}/respond`, { action: 'deny' })).status).to.equal(202);
    // Qwen Code fails the call and ends the turn without asking the model again.
    await waitUntil(
      'the denied call to fail',
      async () => (await raw()).find((e) => e.kind === 'tool_result' && /canceled by the user/.test(e.text ?? '')),
      60_000,
    );
    await waitUntil('the denied turn to end', async () => (await session(api, id)).activity !== 'in-turn', 60_000);
    expect(existsSync(denied)).to.equal(false);
    const cleared = (await sessionEvents(api, 'session.pending_cleared', id)).map((e) => e.payload);
    expect(cleared).to.deep.include.members([
      { session_id: id, request_id: first.request_id, action: 'allow' },
      { session_id: id, request_id: second.request_id, action: 'deny' },
    ]);
  });

  it('after a controller restart, the session loads its conversation (ACP session/load) and goes on', async function () {
    this.timeout(180_000);
    const { api, sup } = city;
    const key = (await session(api, id)).provider_session_key!;
    const before = (await session(api, id)).pid!;
    const controller = (await sup.city('qwen'))!.pid!;
    process.kill(controller, 'SIGKILL');
    await waitUntil(
      'a new controller',
      async () => {
        const info = await sup.city('qwen');
        return info?.running === true && info.pid !== controller;
      },
      // A new controller is running once its sessions have started again: this one's CLI included.
      90_000,
    );
    await waitUntil('its Qwen Code to end with its controller', () => !isAlive(before));
    await deliver(api, id, 'after the restart');
    await waitForTurn(api, id, 'assistant', 'You said: after the restart', 60_000);
    const view = await session(api, id);
    seenPids.add(view.pid!);
    expect(view.provider_session_key, 'the same conversation').to.equal(key);
    // The model is sent the conversation before the restart (its replay over ACP is not a new turn of ours).
    const sent = JSON.stringify(sentWith('after the restart'));
    expect(sent).to.include('hello there');
    expect(sent).to.include(`touch ${join(work, 'allowed.txt')}`);
    expect((await turns(api, id)).filter((t) => t.text === 'hello there')).to.have.length(1);
    const notes = (await raw()).filter((e) => /could not load|cannot load/.test(e.text ?? ''));
    expect(notes, 'no note of a conversation lost').to.deep.equal([]);
  });
});
