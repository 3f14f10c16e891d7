import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startModelServer, type ModelServer } from './helpers/model-server.js';
import { isAlive } from './helpers/processes.js';
import { realCli } from './helpers/real-clis.js';
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
import { hasTmux } from './helpers/tmux-installed.js';
import { waitUntil } from './helpers/wait.js';

interface RawEntry {
  kind: string;
  text?: string;
  source?: string;
  hook?: string;
}

/**
 * The real Claude Code, interactive in tmux, read from its hooks: its session's settings file (`--settings`) has
 * hooks that run `ctl hook-event`, so its prompts, tool calls, permission prompts and turn ends reach its session
 * as they happen, with the screen rules (`rules/claude.toml`) left for what no hook says. One Claude Code process
 * (against the scripted model server) for the whole file.
 */
describe('Claude Code in tmux, read from its hooks (against a scripted model server)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let model: ModelServer;
  let home: string;
  let work: string;
  let id: string;
  let pid: number;

  async function raw(): Promise<RawEntry[]> {
    const reply = await city.api.get<{ messages: RawEntry[] }>(`/session/${id}/transcript?format=raw&tail=1000`);
    expect(reply.status).to.equal(200);
    return reply.body.messages;
  }

  before(async function () {
    if (!hasTmux()) this.skip();
    this.timeout(11 * 60_000); // a version named by CTL_TEST_CLAUDE_VERSION is installed on first use
    const cli = realCli('claude');
    process.stdout.write(`      claude ${cli.version} (${cli.source})\n`);
    model = await startModelServer();
    home = tempDir('ctl-claude-hooks-home-');
    work = tempDir('ctl-claude-hooks-work-');
    city = await startSessionCity('claude-hooks');
    const key = 'sk-ant-test-0123456789abcdefghijklmnop';
    // What a person's first run would have asked: onboarding done, this key approved, the city's folder trusted.
    writeFileSync(
      join(home, '.claude.json'),
      JSON.stringify({
        hasCompletedOnboarding: true,
        customApiKeyResponses: { approved: [key.slice(-20)], rejected: [] },
        projects: { [city.dir]: { hasTrustDialogAccepted: true } },
      }),
    );
    // The preset, interactive: no `-p` and stream-json, in tmux; its settings file, permission modes and resume
    // arguments stay the preset's.
    const created = await city.api.post('/providers', {
      name: 'claude-terminal',
      base: 'builtin:claude',
      command: cli.bin,
      args: [],
      runtime: 'tmux',
      screen_rules: 'claude',
      env: {
        HOME: home,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: key,
        DISABLE_TELEMETRY: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        CLAUDE_CODE_MAX_RETRIES: '0',
      },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    id = await createSession(city.api, { name: 'claude-terminal' });
    pid = (await session(city.api, id)).pid!;
  });

  after(async function () {
    await city?.sup.cleanup();
    await model?.close();
    if (pid) expect(isAlive(pid), `claude ${pid} outlived its city`).to.equal(false);
    if (home) rmSync(home, { recursive: true, force: true });
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('starts with a settings file of hooks that run ctl hook-event, and its SessionStart is heard', async function () {
    const settings = JSON.parse(readFileSync(join(city.dir, '.ctl', 'sessions', id, 'settings.json'), 'utf8')) as {
      hooks: Record<string, { hooks: { command: string; async?: boolean }[] }[]>;
    };
    expect(Object.keys(settings.hooks)).to.include.members(['UserPromptSubmit', 'PermissionRequest', 'Stop']);
    expect(settings.hooks.Stop[0].hooks[0].command).to.match(/\/\.ctl\/bin\/ctl' hook-event Stop$/);
    expect(settings.hooks.PreToolUse[0].hooks[0].async).to.equal(true);
    const status = await waitUntil('its SessionStart hook', async () => {
      const s = (await session(city.api, id)).program_status;
      return s?.source === 'hooks' ? s : undefined;
    });
    // Ready, by its screen: idle, and the last thing its hooks said is that it started.
    expect(status).to.include({ status: 'idle', hook: 'SessionStart' });
  });

  it('its hooks report busy, then idle at the turn’s end, with the whole reply', async function () {
    const { api } = city;
    await deliver(api, id, 'slow: one two three four five six seven eight nine ten');
    await waitUntil('busy, as UserPromptSubmit said', async () => {
      const s = (await session(api, id)).program_status;
      return s?.status === 'busy' && s.source === 'hooks' && ['UserPromptSubmit', 'PreToolUse'].includes(s.hook!);
    });
    await waitForTurn(api, id, 'assistant', 'You said: one two three four five six seven eight nine ten', 30_000);
    const view = await session(api, id);
    expect(view.program_status).to.include({ status: 'idle', source: 'hooks', hook: 'Stop' });
    expect(view.activity).to.equal('idle');
    const ends = (await raw()).filter((e) => e.kind === 'turn_end');
    expect(ends.map((e) => [e.source, e.hook])).to.deep.equal([['hook', 'Stop']]);
    // Its conversation id came with the Stop: the session can resume it.
    expect(view.provider_session_key).to.match(/^[0-9a-f-]{36}$/);
  });

  it('a permission prompt is pending from its hook (the tool named), and respond answers it on its screen', async function () {
    const { api } = city;
    const made = join(work, 'made-by-claude.txt');
    await deliver(api, id, `run: touch ${made}`);
    const pending = await waitUntil('the permission prompt', async () => (await session(api, id)).pending, 30_000);
    expect(pending.kind).to.equal('tool-approval');
    expect(pending.metadata).to.include({ source: 'hook', tool_name: 'Bash' });
    expect(pending.metadata!.hook).to.be.oneOf(['PermissionRequest', 'Notification']);
    expect(pending.prompt).to.include(`Bash(touch ${made})`);
    expect(existsSync(made)).to.equal(false);
    // Its Notification (`permission_prompt`) follows some seconds later: heard, and the same prompt still pending.
    const notified = await waitUntil('its Notification hook', async () => {
      const view = await session(api, id);
      return view.program_status?.hook === 'Notification' ? view : undefined;
    });
    expect(notified.program_status?.status).to.equal('asking');
    expect(notified.pending?.request_id).to.equal(pending.request_id);
    const answered = await api.post(`/session/${id}/respond`, { action: 'allow' });
    expect(answered.status, JSON.stringify(answered.body)).to.equal(202);
    await waitUntil('the command to have run', () => existsSync(made), 30_000);
    await waitForTurn(api, id, 'assistant', /^Tool said:/, 30_000);
    const cleared = (await sessionEvents(api, 'session.pending_cleared', id)).map((e) => e.payload.action);
    expect(cleared).to.deep.equal(['allow']);
    const ends = (await raw()).filter((e) => e.kind === 'turn_end');
    expect(ends.map((e) => e.source)).to.deep.equal(['hook', 'hook']);
  });
});
