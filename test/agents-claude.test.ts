import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startCityOf, startScriptedClaude, type ScriptedClaude } from './helpers/claude-city.js';
import type { CityApi, Bead } from './helpers/city-api.js';
import { isAlive } from './helpers/processes.js';
import { session, turns, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

const PROMPT = 'You are {{agent}} of city {{city}}, working in {{work_dir}}. Close each bead with ctl when it is done.';

/**
 * The product's main loop with a real coding agent: Claude Code (the dev dependency, or CTL_TEST_CLAUDE_VERSION),
 * offline against the scripted model server, is an agent of a city. The tick starts its session with the agent's
 * prompt as its system prompt and hooks that run `ctl prime`; a bead slung to it is handed over; the model answers
 * the work message by reading the bead (`ctl bead show`) and then running `ctl bead close` through Claude Code's
 * Bash tool — with no `ctl` installed on its PATH but the one its controller puts first. One Claude Code process (~300 MB) for the whole file.
 */
describe('a real Claude Code agent works a bead through ctl (scripted model)', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let api: CityApi;
  let claude: ScriptedClaude;
  let dir: string;
  let worker: string;
  let pid: number | undefined;

  before(async function () {
    this.timeout(11 * 60_000); // a version named by CTL_TEST_CLAUDE_VERSION is installed on first use
    // No ctl anywhere on its PATH: the session finds the one its controller puts first.
    // And zsh as its shell where there is one, as Claude Code picks it when SHELL names no shell: zsh reads no
    // BASH_ENV, and the bead must reach its commands all the same (bash is the shell of the loop's tests).
    const zsh = spawnSync('sh', ['-c', 'command -v zsh'], { encoding: 'utf8' }).stdout.trim();
    claude = await startScriptedClaude({ PATH: '/usr/local/bin:/usr/bin:/bin', ...(zsh ? { SHELL: zsh } : {}) });
    city = await startCityOf('alpha', {
      'city.toml':
        '[daemon]\npatrol_interval = "500ms"\n' +
        claude.providerToml('claude-local', 'default_permission_mode = "bypassPermissions"\n'),
      'agents/worker/agent.toml': 'provider = "claude-local"\n',
      'agents/worker/prompt.template.md': `${PROMPT}\n`,
    });
    ({ api, dir } = city);
    worker = await waitUntil(
      'the tick to start the worker',
      async () => {
        const list = await api.get<{ items: { id: string; running: boolean; pid?: number }[] }>(
          '/sessions?template=worker',
        );
        const running = list.body.items.find((s) => s.running);
        pid = running?.pid;
        return running?.id;
      },
      30_000,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    await claude?.close();
    if (pid !== undefined) expect(isAlive(pid), `claude ${pid} outlived its city`).to.equal(false);
  });

  async function bead(id: string): Promise<Bead> {
    const reply = await api.get<Bead>(`/bead/${id}`);
    expect(reply.status).to.equal(200);
    return reply.body;
  }

  it('handed a bead, it runs `ctl bead close` through its Bash tool: the bead ends closed, the agent its closer', async function () {
    const created = await api.post<Bead>('/beads', { title: 'Write the changelog' });
    expect(created.status).to.equal(201);
    const id = created.body.id;
    const slung = await api.post('/sling', { target: 'worker', bead: id, no_convoy: true });
    expect(slung.status, JSON.stringify(slung.body)).to.be.within(200, 299);

    const closed = await waitUntil(
      'the agent to close the bead',
      async () => {
        const now = await bead(id);
        return now.status === 'closed' ? now : undefined;
      },
      60_000,
    );
    const view = await session(api, worker);
    expect(closed.metadata).to.include({ close_reason: 'done', closed_by: view.session_name });
    const [event] = await api.eventsAbout('bead.closed', id);
    expect(event.actor, 'the agent closed it').to.equal('worker');
    // Its Bash tool saw the bead it holds and the agent it is, and `ctl` answered.
    await waitForTurn(
      api,
      worker,
      'assistant',
      new RegExp(`^Tool said: bead=${id} agent=worker\\s+Closed ${id}\\b`),
      60_000,
    );
  });

  it("its prompt is Claude Code's system prompt (not a turn); its SessionStart hook's `ctl prime` reaches the model", async function () {
    const prompt = PROMPT.replace('{{agent}}', 'worker').replace('{{city}}', 'alpha').replace('{{work_dir}}', dir);
    const requests = claude.model.requests.filter((r) => r.api === 'messages');
    expect(requests.length).to.be.greaterThan(0);
    const systemOf = (body: Record<string, unknown>) => JSON.stringify(body.system ?? '');
    expect(systemOf(requests[0].body)).to.include(JSON.stringify(prompt).slice(1, -1));
    const conversation = JSON.stringify(requests[0].body.messages);
    // What the hook printed (`ctl prime`, run by Claude Code as the session started) is in the conversation.
    expect(conversation).to.include('SessionStart');
    expect(conversation).to.include('# You are agent worker of city alpha (session ');
    expect(conversation, conversation).to.include('## Your work now');
    // The prompt was not sent as a message of the conversation.
    expect((await turns(api, worker)).map((t) => t.text)).to.not.include(prompt);
    // The hooks are the session's own settings, passed with --settings: nothing was written to ~/.claude.
    const settings = JSON.parse(readFileSync(join(dir, '.ctl', 'sessions', worker, 'settings.json'), 'utf8')) as {
      hooks: Record<string, { hooks: { command: string }[] }[]>;
    };
    expect(settings.hooks.SessionStart[0].hooks[0].command).to.equal(`'${join(dir, '.ctl', 'bin', 'ctl')}' prime`);
    expect(settings.hooks.PreCompact[0].hooks[0].command).to.equal(`'${join(dir, '.ctl', 'bin', 'ctl')}' prime`);
    expect(existsSync(join(claude.home, '.claude', 'settings.json'))).to.equal(false);
  });
});
