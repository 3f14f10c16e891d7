import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { rootOnlyRefusal } from '../controller/sessions/defaults-file.js';
import { startAgentSessionOfCli, type AgentSessionOfCli } from './helpers/gemini-family-sessions.js';
import type { ModelServer } from './helpers/model-server.js';
import { descendantsOf, isAlive } from './helpers/processes.js';
import { deliver, session, sessionEvents, turns, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

/**
 * Gemini CLI itself (0.61.0 as pinned; see docs/agent-clis.md) in its ACP mode (`gemini --acp`, the `gemini`
 * preset), offline: its model is the scripted server's Gemini API (test/helpers/model-server.ts) at
 * GOOGLE_GEMINI_BASE_URL, which echoes and asks for `run_shell_command` on `run:`. One agent session, one
 * Gemini CLI process (~10 s to start on a busy machine), carries the tests in order; the last two restart it.
 */

/**
 * A supervisor root where Gemini CLI reads the session's system defaults file (ctl's, with its session clean-up
 * off): it reads one only where root alone can change it and every directory above it, so never under the
 * temporary directory (1777), and only when the tests run as root. Else the reason, and no root.
 */
function rootOwnedRoot(): { root?: string; refused?: string } {
  const parent = join(homedir(), '.cache', 'ctl', 'test-roots');
  try {
    mkdirSync(parent, { recursive: true, mode: 0o755 });
    const root = mkdtempSync(join(parent, 'gemini-'));
    const refused = rootOnlyRefusal(root);
    if (refused === undefined) return { root };
    rmSync(root, { recursive: true, force: true });
    return { refused };
  } catch (err) {
    return { refused: String(err) };
  }
}
describe('an agent session of the real Gemini CLI (ACP, against a scripted model server)', function () {
  this.timeout(90_000);
  const prompt = 'You are the coder agent of this city: close each bead with ctl when it is done.';
  let cli: AgentSessionOfCli;
  let city: SessionCity;
  let model: ModelServer;
  let home: string;
  let work: string;
  let id: string;
  let seenPids: Set<number>;
  const { root, refused } = rootOwnedRoot();

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_GEMINI_VERSION is installed on first use
    cli = await startAgentSessionOfCli({
      cli: 'gemini',
      cityName: 'gemini',
      settingsDir: '.gemini',
      // The API key route, its auth type chosen (with GOOGLE_GEMINI_BASE_URL alone Gemini CLI picks its "gateway"
      // auth); nothing sent anywhere else.
      settings: {
        security: { auth: { selectedType: 'gemini-api-key' } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      },
      provider: (server, cliHome) => ({
        // A pinned model: without one, each turn first asks a router model which model to use.
        args_append: ['--model', 'gemini-2.5-pro'],
        env: { HOME: cliHome, GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: 'test-key' },
      }),
      prompt,
      root,
    });
    ({ city, model, home, work, id, seenPids } = cli);
  });

  after(async function () {
    await cli?.close();
  });

  const raw = () => cli.raw();

  /** What the model was sent with the turn whose user text is `text`, as one string. */
  function sentWith(text: string): string {
    const request = model.requests.filter((r) => r.api === 'gemini' && r.userText === text).at(-1);
    expect(request, `a request for ${JSON.stringify(text)}`).to.not.equal(undefined);
    return JSON.stringify(request!.body);
  }

  it("answers, its agent's prompt read as a GEMINI.md context file and never a turn of its own", async function () {
    const { api } = city;
    await deliver(api, id, 'hello there');
    await waitForTurn(api, id, 'assistant', 'You said: hello there', 60_000);
    expect((await turns(api, id)).map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'hello there'],
      ['assistant', 'You said: hello there'],
    ]);
    const view = await session(api, id);
    expect(view.provider_session_key, "Gemini CLI's session id, kept to load it").to.match(/^[0-9a-f-]{36}$/);
    // Gemini CLI hands its context files to the model in the first message's `<session_context>`.
    const sent = sentWith('hello there');
    expect(sent).to.include(JSON.stringify(prompt).slice(1, -1));
    expect(sent).to.match(/Context from: [^"]*\/context\/GEMINI\.md/);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    // One Node process: the preset keeps Gemini CLI from starting a second one for a larger heap.
    expect(descendantsOf(view.pid!).filter((p) => /gemini/.test(p.cmdline))).to.deep.equal([]);
  });

  it('a command asks for permission: allow through respond runs it, deny does not', async function () {
    const { api } = city;
    // A command that changes something: Gemini CLI lets read-only ones (echo, ls) run without asking.
    const allowed = join(work, 'allowed.txt');
    await deliver(api, id, `run: touch ${allowed}`);
    const first = await waitUntil('the permission request', async () => (await session(api, id)).pending, 60_000);
    expect(first.kind).to.equal('tool-approval');
    expect(first.prompt).to.include(`touch ${allowed}`);
    expect(existsSync(allowed), 'nothing runs before the answer').to.equal(false);
    expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
    await waitForTurn(api, id, 'assistant', /^Tool said: /, 60_000);
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
    // Gemini CLI tells the model the call was cancelled, and the model answers that.
    await waitForTurn(api, id, 'assistant', /^Tool said: .*canceled by the user/, 60_000);
    expect(existsSync(denied)).to.equal(false);
    const cleared = (await sessionEvents(api, 'session.pending_cleared', id)).map((e) => e.payload);
    expect(cleared).to.deep.include.members([
      { session_id: id, request_id: first.request_id, action: 'allow' },
      { session_id: id, request_id: second.request_id, action: 'deny' },
    ]);
  });

  /**
   * Dates back the files holding the conversation `key` that are named by a recent minute: Gemini CLI 0.61 names a
   * conversation's file by the minute it was opened, and a load in that same minute opens one of the same name
   * that empties it (docs/agent-clis.md). A real restart comes later than this test can wait.
   */
  function dateBackChats(key: string, minute: string): void {
    const chats = join(home, '.gemini', 'tmp');
    const files = readdirSync(chats, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith(`-${key.slice(0, 8)}.jsonl`),
    );
    const held = files.filter((f) => readFileSync(join(chats, f), 'utf8').includes('hello there'));
    expect(held, `the file holding its conversation, of ${files.join(', ')}`).to.have.length(1);
    if (held[0].includes('session-2026-01-01T')) return;
    const file = join(chats, held[0]);
    renameSync(file, file.replace(/session-[0-9T-]+-(?=[0-9a-f]{8}\.jsonl$)/, `session-2026-01-01T${minute}-`));
  }

  /** Kills the city's controller and waits for the new one (running once its sessions have started again). */
  async function restartController(): Promise<void> {
    const { api, sup } = city;
    const before = (await session(api, id)).pid!;
    const controller = (await sup.city('gemini'))!.pid!;
    process.kill(controller, 'SIGKILL');
    await waitUntil(
      'a new controller',
      async () => {
        const info = await sup.city('gemini');
        return info?.running === true && info.pid !== controller;
      },
      90_000,
    );
    await waitUntil('its Gemini CLI to end with its controller', () => !isAlive(before));
    seenPids.add((await session(api, id)).pid!);
  }

  /** The turn `text` answered in the same conversation, the model sent the turns named in `earlier`. */
  async function goesOnWith(key: string, text: string, earlier: string[]): Promise<void> {
    const { api } = city;
    await deliver(api, id, text);
    await waitForTurn(api, id, 'assistant', `You said: ${text}`, 60_000);
    expect((await session(api, id)).provider_session_key, 'the same conversation').to.equal(key);
    // The model is sent the conversation before the restart (its replay over ACP is not a new turn of ours).
    const sent = sentWith(text);
    for (const turn of earlier) expect(sent).to.include(turn);
    expect((await turns(api, id)).filter((t) => t.text === 'hello there')).to.have.length(1);
    const notes = (await raw()).filter((e) => /could not load|cannot load/.test(e.text ?? ''));
    expect(notes, 'no note of a conversation lost').to.deep.equal([]);
  }

  it('after a controller restart, the session loads its conversation (ACP session/load) and goes on', async function () {
    this.timeout(180_000);
    const key = (await session(city.api, id)).provider_session_key!;
    dateBackChats(key, '00-00');
    await restartController();
    await goesOnWith(key, 'after the restart', ['hello there', `touch ${join(work, 'allowed.txt')}`]);
  });

  it('after a second restart too: its clean-up off, Gemini CLI keeps the conversation a load left a file beside', async function () {
    if (refused !== undefined) {
      process.stdout.write(`      skipped: Gemini CLI reads no system defaults file of a test's here (${refused})\n`);
      this.skip();
    }
    this.timeout(180_000);
    const key = (await session(city.api, id)).provider_session_key!;
    // The program is handed the session's own system defaults file, its session clean-up off.
    const environ = readFileSync(`/proc/${(await session(city.api, id)).pid!}/environ`, 'utf8').split('\0');
    const named = environ.find((v) => v.startsWith('GEMINI_CLI_SYSTEM_DEFAULTS_PATH='))?.split('=')[1];
    expect(named, "a file of the session's own, in its city").to.satisfy(
      (path?: string) => path?.startsWith(`${city.dir}/.ctl/`) && path.endsWith('/program-defaults.json'),
    );
    expect(JSON.parse(readFileSync(named!, 'utf8'))).to.deep.equal({
      general: { sessionRetention: { enabled: false } },
    });
    dateBackChats(key, '00-01');
    await restartController();
    await goesOnWith(key, 'after the second restart', ['hello there', 'after the restart']);
  });
});
