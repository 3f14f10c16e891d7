import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { startScriptedCodex, type ScriptedCodex } from './helpers/scripted-codex.js';
import { isAlive } from './helpers/processes.js';
import {
  createSession,
  deliver,
  send,
  session,
  sessionEvents,
  startSessionCity,
  turns,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { hasTmux } from './helpers/tmux-installed.js';
import { waitUntil } from './helpers/wait.js';

const ACP_AGENT = join(packageRoot, 'examples', 'agents', 'acp-agent.mjs');
const TUI_AGENT = join(packageRoot, 'examples', 'agents', 'tui-agent.mjs');
/** Codex's exec mode has no example agent: the real Codex (a dev dependency) against the scripted model server. */
const CODEX = join(packageRoot, 'node_modules', '.bin', 'codex');

interface RawEntry {
  kind: string;
  text?: string;
  turn?: number;
  message_id?: string;
}

/** One session runtime, the provider that runs it here, and how its program answers a message. */
interface RuntimeCase {
  name: string;
  provider: string;
  /** Why this machine cannot run it, if it cannot. */
  missing?: () => string | undefined;
  /** The reply to `text`. */
  reply: (text: string) => string;
}

const saidBack = (text: string) => `You said: ${text}`;

const RUNTIMES: RuntimeCase[] = [
  { name: 'pipe, text protocol (echo.sh)', provider: 'echo', reply: (text) => `echo: ${text}` },
  { name: 'pipe, stream-json protocol (stream-json-agent.mjs)', provider: 'pretend-claude', reply: saidBack },
  { name: 'ACP (acp-agent.mjs)', provider: 'acp', reply: saidBack },
  {
    name: 'tmux, read by screen rules (tui-agent.mjs)',
    provider: 'tui',
    missing: () => (hasTmux() ? undefined : 'tmux is not installed (.ci/run installs it)'),
    reply: saidBack,
  },
  {
    name: 'codex exec, a process per turn (the real Codex)',
    provider: 'codex-local',
    missing: () => (existsSync(CODEX) ? undefined : `${CODEX} is missing (npm ci installs it)`),
    reply: saidBack,
  },
];

/**
 * One conformance suite for the session runtimes: the same behaviours — start, a turn, messages in order, kill
 * and wake, close — run against each, with the shipped example agents (and Codex for its exec runtime), as the
 * two bead stores share one suite. What one runtime alone does (questions, resume, screens) is in its own file.
 */
describe('session runtimes: one behaviour, every runtime', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let codex: ScriptedCodex;
  let home: string;
  let counter = 0;

  before(async function () {
    codex = await startScriptedCodex({ model: 'scripted' });
    ({ home } = codex);
    city = await startSessionCity(
      'runtimes',
      `
[providers.acp]
command = "${process.execPath} ${ACP_AGENT}"
protocol = "acp"
env = { ACP_AGENT_STATE = "${home}" }

[providers.tui]
command = "${process.execPath} ${TUI_AGENT}"
runtime = "tmux"
screen_rules = "tui-agent"

${codex.providerToml('codex-local')}`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    await codex?.close();
  });

  async function raw(id: string): Promise<RawEntry[]> {
    const reply = await city.api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
    expect(reply.status).to.equal(200);
    return reply.body.messages;
  }

  async function idle(id: string) {
    return waitUntil(`${id} to be idle`, async () => {
      const view = await session(city.api, id);
      return view.activity === 'idle' && view.queued === 0 ? view : undefined;
    });
  }

  for (const runtime of RUNTIMES) {
    describe(runtime.name, function () {
      before(function () {
        const missing = runtime.missing?.();
        if (missing) {
          // A machine without the program cannot run this runtime at all.
          this.skip();
        }
      });

      it('starts: the create request ends when the program is ready; active, running, session.woke', async function () {
        const { api } = city;
        const id = await createSession(api, { name: runtime.provider });
        expect(await session(api, id)).to.include({ state: 'active', running: true, provider: runtime.provider });
        expect(await sessionEvents(api, 'session.woke', id)).to.have.length(1);
        await api.post(`/session/${id}/close`);
      });

      it('a message is a turn: the message, the reply, the turn end, one turn number; idle after', async function () {
        const { api } = city;
        const id = await createSession(api, { name: runtime.provider });
        const text = `hello ${++counter}`;
        const delivered = await deliver(api, id, text);
        await waitForTurn(api, id, 'assistant', runtime.reply(text));
        const view = await idle(id);
        expect(view.last_output ?? '').to.include(runtime.reply(text));
        const entries = await waitUntil('the turn to end in the transcript', async () => {
          const all = await raw(id);
          return all.some((e) => e.kind === 'turn_end') ? all : undefined;
        });
        const user = entries.find((e) => e.kind === 'user')!;
        expect(user).to.include({ text, message_id: delivered.payload.message_id });
        const ofTurn = entries.filter((e) => e.turn === user.turn).map((e) => e.kind);
        expect(ofTurn[0]).to.equal('user');
        expect(ofTurn).to.include('assistant');
        expect(ofTurn.at(-1)).to.equal('turn_end');
        await api.post(`/session/${id}/close`);
      });

      it('messages sent together are delivered and answered in order, a turn each', async function () {
        const { api } = city;
        const id = await createSession(api, { name: runtime.provider });
        const first = `first ${++counter}`;
        const second = `second ${counter}`;
        await send(api, id, first);
        await send(api, id, second);
        await waitForTurn(api, id, 'assistant', runtime.reply(second), 30_000);
        await idle(id);
        const said = (await turns(api, id)).map((t) => `${t.role}: ${t.text}`);
        const at = (line: string) => said.indexOf(line);
        // Each message before its reply, and both in the order sent (a program that takes turns while busy —
        // stream-json — may hear the second before it answers the first).
        expect(at(`user: ${first}`), said.join('\n')).to.be.greaterThan(-1);
        expect(at(`user: ${first}`)).to.be.lessThan(at(`assistant: ${runtime.reply(first)}`));
        expect(at(`user: ${second}`)).to.be.lessThan(at(`assistant: ${runtime.reply(second)}`));
        expect(at(`user: ${first}`)).to.be.lessThan(at(`user: ${second}`));
        expect(at(`assistant: ${runtime.reply(first)}`)).to.be.lessThan(at(`assistant: ${runtime.reply(second)}`));
        const userTurns = (await raw(id)).filter((e) => e.kind === 'user').map((e) => e.turn);
        expect(userTurns).to.deep.equal([1, 2]);
        await api.post(`/session/${id}/close`);
      });

      it('kill: the program ends, the session sleeps (session.stopped); a message wakes it and is answered', async function () {
        const { api } = city;
        const id = await createSession(api, { name: runtime.provider });
        const pid = (await session(api, id)).pid;
        expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
        const asleep = await waitUntil('asleep', async () => {
          const view = await session(api, id);
          return view.state === 'asleep' && !view.running ? view : undefined;
        });
        expect(asleep.pid).to.equal(undefined);
        if (pid !== undefined) await waitUntil('the program to be gone', async () => !isAlive(pid));
        await waitUntil('session.stopped', async () => (await sessionEvents(api, 'session.stopped', id)).length === 1);
        const text = `after the kill ${++counter}`;
        await deliver(api, id, text);
        await waitForTurn(api, id, 'assistant', runtime.reply(text));
        expect(await session(api, id)).to.include({ state: 'active', running: true });
        await api.post(`/session/${id}/close`);
      });

      it('close: the program is gone, the session closed (session.closed), and it takes no message', async function () {
        const { api } = city;
        const id = await createSession(api, { name: runtime.provider });
        const pid = (await session(api, id)).pid;
        expect((await api.post(`/session/${id}/close`)).status).to.equal(200);
        expect(await session(api, id)).to.include({ state: 'closed', running: false });
        if (pid !== undefined) await waitUntil('the program to be gone', async () => !isAlive(pid));
        expect(await sessionEvents(api, 'session.closed', id)).to.have.length(1);
        expect((await api.post(`/session/${id}/messages`, { message: 'anyone?' })).status).to.equal(409);
      });
    });
  }
});
