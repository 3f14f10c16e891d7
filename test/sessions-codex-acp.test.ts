import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import {
  createCliSession,
  expectAnswer,
  expectLoadAfterRestart,
  expectPermissionThroughRespond,
  startCliCity,
  TURN_MS,
} from './helpers/acp-cli-sessions.js';
import type { ModelServer } from './helpers/model-server.js';
import { processesMentioning } from './helpers/processes.js';
import { startScriptedCodex, type ScriptedCodex } from './helpers/scripted-codex.js';
import { session, type SessionCity } from './helpers/sessions.js';
import { closeAllStreams } from './helpers/sse.js';
import { waitUntil } from './helpers/wait.js';

/**
 * Codex's ACP adapter (@zed-industries/codex-acp 0.16.0 as pinned, or CTL_TEST_CODEX_ACP_VERSION) as the
 * `codex-acp` preset runs it — its npm launcher, a Node wrapper around the native binary — offline, against the
 * scripted model server's Responses API. Its CODEX_HOME config names the server as its model provider, asks
 * before every command that is not known safe (`approval_policy = "untrusted"`) and runs them unsandboxed
 * (Codex's sandbox needs bubblewrap, which CI machines lack). The session is an agent's: its prompt goes to
 * Codex as developer instructions.
 */
describe('sessions of the real Codex ACP adapter (against a scripted model server)', function () {
  this.timeout(3 * 60_000);
  const CITY = 'codex-acp';
  const PROMPT = 'You are the coder agent: "close" each bead with ctl.';
  let city: SessionCity;
  let codex: ScriptedCodex;
  let model: ModelServer;
  let bin: string;
  let id: string;

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_CODEX_ACP_VERSION is installed on first use
    codex = await startScriptedCodex({ acp: true, approvalPolicy: 'untrusted' });
    ({ model } = codex);
    bin = codex.cli.bin;
    city = await startCliCity(CITY, codex.providerBody('codex-acp-local'));
    mkdirSync(join(city.dir, 'agents', 'coder'), { recursive: true });
    writeFileSync(join(city.dir, 'agents', 'coder', 'prompt.md'), `${PROMPT}\n`);
    writeFileSync(
      join(city.dir, 'agents', 'coder', 'agent.toml'),
      'provider = "codex-acp-local"\nmin_active_sessions = 0\nmax_active_sessions = 1\n',
    );
    await waitUntil('the agent to be known', async () => (await city.api.get('/agent/coder')).status === 200);
    id = await createCliSession(city, { kind: 'agent', name: 'coder' });
  });

  afterEach(function () {
    closeAllStreams();
  });

  after(async function () {
    await city?.sup.cleanup();
    // The launcher, and the native binary it runs (in the package beside it).
    const packages = join(dirname(bin), '..', '@zed-industries');
    expect(processesMentioning(packages), 'no codex-acp left behind').to.deep.equal([]);
    expect(processesMentioning(bin), 'no launcher left behind').to.deep.equal([]);
    await codex?.close();
  });

  it('answers a message; the agent’s prompt is its developer instructions, never a turn', async function () {
    await expectAnswer(city, model, id);
    expect((await session(city.api, id)).provider_session_key).to.match(/^[0-9a-f-]{36}$/);
    const request = model.requests.find((r) => r.userText === 'hello there')!;
    expect(request.api, 'OpenAI Responses').to.equal('responses');
    const items = request.body.input as { role?: string; content?: { text?: string }[] }[];
    const developer = items.filter((i) => i.role === 'developer').flatMap((i) => (i.content ?? []).map((c) => c.text));
    expect(developer).to.include(`${PROMPT}\n`);
    expect(model.requests.map((r) => r.userText)).to.not.include(`${PROMPT}\n`);
  });

  it('a command asks permission: pending until respond; allow runs it, deny does not', async function () {
    await expectPermissionThroughRespond(city, id, city.dir);
  });

  it('after its controller is killed, the next adapter loads the conversation (session/load)', async function () {
    this.timeout(3 * TURN_MS);
    await expectLoadAfterRestart(city, CITY, model, id);
  });
});
