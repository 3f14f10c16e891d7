import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import {
  createSession,
  deliver,
  session,
  sessionEvents,
  startSessionCity,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// `POST …/session/{id}/reset`: the same session on a fresh conversation, per kind of provider — a plain stdin
// program started again, Claude Code's stream-json without --resume, an ACP agent with session/new — a running
// program restarted at once, a dormant one starting fresh at its next start; a `reset` entry in the transcript
// where it happened and `session.reset` saying so. Over real HTTP and the real CLI.

const ACP_AGENT = join(packageRoot, 'examples', 'agents', 'acp-agent.mjs');

interface Entry {
  seq: number;
  kind: string;
  text?: string;
  resumed?: string;
  requested?: boolean;
  previous_conversation?: string;
}

interface Reset {
  status: string;
  id: string;
  restarted: boolean;
  transcript_seq: number;
  previous_conversation?: string;
}

describe('session reset: a fresh conversation for the same session', function () {
  this.timeout(60_000);
  let city: SessionCity;
  const ctl = (...args: string[]) => city.sup.ctl(['--city', 'reset', ...args]);

  before(async function () {
    const acpState = tempDir('ctl-acp-state-');
    city = await startSessionCity(
      'reset',
      `
[providers.acp]
command = "${process.execPath} ${ACP_AGENT}"
protocol = "acp"
env = { ACP_AGENT_STATE = "${acpState}" }

[[agent]]
name = "greeter"
provider = "echo"
prompt = "You are the greeter."
`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  async function entries(id: string): Promise<Entry[]> {
    const reply = await city.api.get<{ messages: Entry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
    expect(reply.status).to.equal(200);
    return reply.body.messages;
  }

  async function reset(id: string): Promise<Reset> {
    const reply = await city.api.post<Reset>(`/session/${id}/reset`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body;
  }

  /** The starts of its program, as the transcript says: which conversation each resumed (none: a new one). */
  async function starts(id: string): Promise<(string | undefined)[]> {
    return (await entries(id)).filter((e) => e.kind === 'start').map((e) => e.resumed);
  }

  it('a plain stdin program is started again: its old program ends, the transcript marks the place, session.reset', async function () {
    const id = await createSession(city.api, { name: 'echo' });
    await deliver(city.api, id, 'before the reset');
    const pid = (await session(city.api, id)).pid;
    const done = await reset(id);
    expect(done).to.include({ status: 'reset', id, restarted: true });
    expect(done.previous_conversation).to.equal(undefined);
    await waitUntil('a new program, ready', async () => {
      const view = await session(city.api, id);
      return view.state === 'active' && view.pid !== undefined && view.pid !== pid;
    });
    // The old program's end, then the reset, then the new start: in that order, the reset at the seq it names.
    const all = await entries(id);
    const at = all.findIndex((e) => e.seq === done.transcript_seq);
    expect(all[at]).to.include({ kind: 'reset' });
    expect(all[at].text).to.match(/^conversation reset: a new conversation begins here/);
    expect(all.slice(0, at).some((e) => e.kind === 'exit' && e.requested === true)).to.equal(true);
    expect(all.slice(at + 1).some((e) => e.kind === 'start')).to.equal(true);
    // People see it in the conversation as ctl's line.
    const conversation = await city.api.get<{ turns: { seq: number; role: string }[] }>(`/session/${id}/transcript`);
    expect(conversation.body.turns.find((t) => t.seq === done.transcript_seq)?.role).to.equal('system');
    const [event] = await sessionEvents(city.api, 'session.reset', id);
    expect(event?.payload).to.include({ session_id: id, restarted: true, transcript_seq: done.transcript_seq });
    await deliver(city.api, id, 'after the reset');
    await waitForTurn(city.api, id, 'assistant', /after the reset/);
  });

  it('stream-json (Claude Code): the program starts without --resume; the new conversation knows nothing of the old', async function () {
    const id = await createSession(city.api, { name: 'pretend-claude', message: 'remember the lighthouse' });
    await waitForTurn(city.api, id, 'assistant', 'You said: remember the lighthouse');
    const key = (await session(city.api, id)).provider_session_key;
    expect(key).to.be.a('string');
    const done = await reset(id);
    expect(done).to.include({ restarted: true, previous_conversation: key });
    await deliver(city.api, id, 'a new beginning');
    await deliver(city.api, id, 'recall');
    await waitForTurn(city.api, id, 'assistant', 'You first said: a new beginning');
    expect(await starts(id)).to.deep.equal([undefined, undefined]);
    const now = (await session(city.api, id)).provider_session_key;
    expect(now).to.be.a('string').and.not.equal(key);
    const [event] = await sessionEvents(city.api, 'session.reset', id);
    expect(event?.payload).to.include({ previous_conversation: key, restarted: true });
  });

  it('a dormant session is not started: its key is dropped and its next start begins a new conversation', async function () {
    const id = await createSession(city.api, { name: 'pretend-claude', message: 'the old words' });
    await waitForTurn(city.api, id, 'assistant', 'You said: the old words');
    await city.api.post(`/session/${id}/kill`);
    await waitUntil('asleep', async () => (await session(city.api, id)).state === 'asleep');
    const done = await reset(id);
    expect(done.restarted).to.equal(false);
    const view = await session(city.api, id);
    expect(view).to.include({ state: 'asleep', running: false });
    expect(view.provider_session_key).to.equal(undefined);
    await deliver(city.api, id, 'recall');
    await waitForTurn(city.api, id, 'assistant', 'You first said: recall');
    expect(await starts(id)).to.deep.equal([undefined, undefined]);
  });

  it('ACP: a new session (session/new), not session/load of the old one', async function () {
    const id = await createSession(city.api, { name: 'acp', message: 'acp words' });
    await waitForTurn(city.api, id, 'assistant', 'You said: acp words');
    const key = (await session(city.api, id)).provider_session_key;
    expect(key).to.be.a('string');
    expect((await reset(id)).previous_conversation).to.equal(key);
    await deliver(city.api, id, 'recall');
    await waitForTurn(city.api, id, 'assistant', 'You first said: recall');
    expect(await starts(id)).to.deep.equal([undefined, undefined]);
    expect((await session(city.api, id)).provider_session_key).to.not.equal(key);
  });

  it("an agent's session begins the new conversation with its agent's prompt again", async function () {
    const id = await waitUntil('the greeter’s session', async () => {
      const list = await city.api.get<{ items: { id: string; template: string; state: string }[] }>('/sessions');
      return list.body.items.find((s) => s.template === 'greeter' && s.state === 'active')?.id;
    });
    await waitForTurn(city.api, id, 'user', 'You are the greeter.');
    const done = await reset(id);
    await waitUntil('the prompt given again, after the reset', async () => {
      const after = (await entries(id)).filter((e) => e.seq > done.transcript_seq);
      return after.some((e) => e.kind === 'user' && e.text === 'You are the greeter.');
    });
  });

  it('ctl session reset; 404 for no such session, 409 for a closed one (one line, exit 1 in the CLI)', async function () {
    const id = await createSession(city.api, { name: 'echo', alias: 'resettable' });
    const said = expectSuccess(await ctl('session', 'reset', 'resettable'));
    expect(said).to.have.length(1);
    expect(said[0]).to.match(new RegExp(`^Reset ${id}: restarted on a new conversation \\(transcript entry \\d+\\)$`));
    const json = JSON.parse(expectSuccess(await ctl('session', 'reset', id, '--json'))[0]) as Reset;
    expect(json).to.include({ status: 'reset', id });
    expect(await sessionEvents(city.api, 'session.reset', id)).to.have.length(2);

    expectProblem(await city.api.post('/session/nobody/reset'), 404, 'session-not-found');
    expectFailure(await ctl('session', 'reset', 'nobody'), 'session reset', 'not found');
    await city.api.post(`/session/${id}/close`);
    expectProblem(await city.api.post(`/session/${id}/reset`), 409, 'conflict-wrong-state');
    expectFailure(await ctl('session', 'reset', id), 'session reset', 'closed');
    expect(await sessionEvents(city.api, 'session.reset', id)).to.have.length(2);
  });
});
