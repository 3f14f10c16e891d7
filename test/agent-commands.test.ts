import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { CityApi, expectProblem, type Bead } from './helpers/city-api.js';
import { expectFailure, expectSuccess, lines } from './helpers/cli.js';
import { deliver, session, turns } from './helpers/sessions.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** A text agent that runs `$ <command>` lines in a new bash each (test/fixtures/shell-agent.sh). */
const SHELL_AGENT = join(packageRoot, 'test', 'fixtures', 'shell-agent.sh');

/**
 * An agent's side of the city (docs/agent-commands.md): what a session's programs find in their environment —
 * `ctl` first on PATH, `CTL_*` naming the city, session, agent and the bead held now — and the commands an agent
 * runs from inside its session (`ctl prime`, `ctl hook`, `ctl mail check`, `ctl bead close --reason`), run here
 * by a real program of a real session, with no `ctl` installed anywhere on its PATH.
 */
describe('an agent session reaches its city: ctl on PATH, CTL_* variables, the agent-side commands', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let dir: string;
  let worker: string;

  /** Runs a command in the worker's shell (a new bash, as an agent's tool runs one) and returns its output. */
  async function shell(command: string): Promise<string> {
    const before = (await turns(api, worker)).length;
    const message = `$ ${command}`;
    await deliver(api, worker, message);
    return waitUntil(`the output of ${command}`, async () => {
      const view = await session(api, worker);
      if (view.activity !== 'idle') return undefined;
      const after = (await turns(api, worker)).slice(before);
      const mine = after.findIndex((t) => t.role === 'user' && t.text === message);
      if (mine < 0) return undefined;
      const replies: string[] = [];
      for (const turn of after.slice(mine + 1)) {
        if (turn.role !== 'assistant') break;
        replies.push(turn.text);
      }
      return replies.length ? replies.join('\n') : undefined;
    });
  }

  async function bead(id: string): Promise<Bead> {
    const reply = await api.get<Bead>(`/bead/${id}`);
    expect(reply.status).to.equal(200);
    return reply.body;
  }

  before(async function () {
    sup = await TestSupervisor.start();
    dir = sup.cityDir('agents');
    mkdirSync(join(dir, 'agents', 'worker'), { recursive: true });
    writeFileSync(
      join(dir, 'city.toml'),
      `[daemon]\npatrol_interval = "500ms"\n\n` +
        `[providers.shell]\ncommand = "${SHELL_AGENT}"\nready_prompt_prefix = "ready>"\n` +
        // A PATH without any ctl: what the session finds, it finds through its controller.
        `env = { PATH = "/usr/local/bin:/usr/bin:/bin" }\n`,
    );
    writeFileSync(join(dir, 'agents', 'worker', 'agent.toml'), 'provider = "shell"\nenv = { GREETING = "hello" }\n');
    writeFileSync(
      join(dir, 'agents', 'worker', 'prompt.template.md'),
      'You are {{agent}} of {{city}}, working in {{work_dir}}.\n',
    );
    const res = await fetch(`${sup.base}/v0/cities/register`, {
      method: 'POST',
      headers: { ...CSRF, 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: dir }),
    });
    expect(res.status, await res.text()).to.equal(201);
    await waitUntil('the city to run', async () => (await sup.city('agents'))?.running === true);
    api = new CityApi(sup, 'agents');
    worker = await waitUntil('the tick to start the worker', async () => {
      const list = await api.get<{ items: { id: string; running: boolean; activity?: string }[] }>(
        '/sessions?template=worker',
      );
      return list.body.items.find((s) => s.running)?.id;
    });
    // Its prompt was its first turn (this program has no system prompt): wait until it is done.
    await waitUntil('the worker to be idle', async () => (await session(api, worker)).activity === 'idle');
  });

  after(async function () {
    await sup?.cleanup();
  });

  it("finds this controller's ctl first on PATH, CTL_API, CTL_CITY, CTL_SESSION_ID, CTL_AGENT and its agent's env", async function () {
    const out = await shell('command -v ctl; echo "city=$CTL_CITY session=$CTL_SESSION_ID agent=$CTL_AGENT"');
    const [path, vars] = lines(out);
    expect(path).to.equal(join(dir, '.ctl', 'bin', 'ctl'));
    expect(vars).to.equal(`city=agents session=${worker} agent=worker`);
    // The launcher runs the controller's own build, and CTL_API leads to this supervisor (its port is random).
    expect(await shell('echo "$CTL_API"')).to.equal(sup.base);
    // The agent's own `env` reaches its sessions' programs too.
    expect(await shell('echo "$GREETING"')).to.equal('hello');
    expect(await shell('ctl version')).to.match(/^\d+\.\d+\.\d+/);
    expect(await shell('ctl bead list --json >/dev/null && echo reached')).to.equal('reached');
  });

  it('ctl prime prints its role prompt, its work and its mail; ctl hook and ctl mail check say there is nothing (exit 3)', async function () {
    const prime = await shell('ctl prime');
    expect(prime).to.include(`# You are agent worker of city agents (session `);
    expect(prime).to.include(`You are worker of agents, working in ${dir}.`);
    expect(prime).to.include('No bead is assigned to you now');
    expect(prime).to.include('No unread mail.');
    expect(await shell('ctl hook')).to.equal('exit 3');
    expect(await shell('ctl mail check')).to.equal('No unread mail.\nexit 3');
  });

  it('a bead handed to it is CTL_BEAD in its next shell and what ctl hook names; ctl bead close records the agent', async function () {
    const created = await api.post<Bead>('/beads', { title: 'Tidy the docs', description: 'Every page.' });
    expect(created.status).to.equal(201);
    const id = created.body.id;
    const slung = await api.post('/sling', { target: 'worker', bead: id, no_convoy: true });
    expect(slung.status, JSON.stringify(slung.body)).to.be.within(200, 299);
    await waitUntil('the bead to be handed over', async () => (await bead(id)).status === 'in_progress');
    await waitUntil('the worker to be idle', async () => (await session(api, worker)).activity === 'idle');
    expect(await shell('echo "bead=$CTL_BEAD"')).to.equal(`bead=${id}`);
    expect(await shell('ctl hook --id')).to.equal(id);
    expect(await shell('ctl hook')).to.equal(`${id}: Tidy the docs\nEvery page.`);
    expect(await shell('ctl prime')).to.include(`Bead ${id}: Tidy the docs`);

    expect(await shell(`ctl bead close ${id} --reason "tidied every page"`)).to.equal(`Closed ${id}`);
    const closed = await bead(id);
    expect(closed.status).to.equal('closed');
    const name = (await session(api, worker)).session_name;
    expect(closed.metadata).to.include({ close_reason: 'tidied every page', closed_by: name });
    const [event] = await api.eventsAbout('bead.closed', id);
    expect(event.actor, 'the agent closed it').to.equal('worker');
    // Once it is closed the session holds nothing: its next shell has no CTL_BEAD.
    await waitUntil('CTL_BEAD to be cleared', async () => (await shell('echo "bead=$CTL_BEAD"')) === 'bead=');
  });

  it('ctl bead comment from inside the session writes as its agent, who alone may delete it', async function () {
    const created = await api.post<Bead>('/beads', { title: 'Discuss the docs' });
    const id = created.body.id;
    expect(await shell(`ctl bead comment ${id} "found two stale pages"`)).to.match(
      new RegExp(`^Commented on ${id} \\(#\\d+, as worker\\)$`),
    );
    const listed = await api.get<{ items: { id: number; author: string; text: string }[] }>(`/bead/${id}/comments`);
    const [said] = listed.body.items;
    expect(said).to.include({ author: 'worker', text: 'found two stale pages' });
    const [event] = await api.eventsAbout('bead.commented', id);
    expect(event.actor, 'the agent commented').to.equal('worker');
    // A person is not its author; the agent, from its session, is.
    expectProblem(await api.del(`/bead/${id}/comments/${said.id}`), 403, 'forbidden');
    expect(await shell(`ctl bead comment ${id} --delete ${said.id}`)).to.equal(`Deleted comment ${said.id} of ${id}`);
  });

  it('ctl mail check lists unread mail to its agent', async function () {
    const sent = await api.post<{ id: string }>('/mail', { to: 'worker', subject: 'Lunch?', from: 'ann' });
    expect(sent.status).to.equal(201);
    expect(await shell('ctl mail check')).to.equal(`${sent.body.id} from ann: Lunch?`);
    expect(await shell('ctl prime')).to.include(`- ${sent.body.id} from ann: Lunch?`);
  });

  it('outside a session the agent-side commands ask for one; a session that is gone is a 404 and changes nothing', async function () {
    const outside = { CTL_CITY: 'agents', CTL_SESSION_ID: undefined };
    expectFailure(await sup.ctl(['prime'], { env: outside }), 'prime', 'no session in scope');
    expectFailure(await sup.ctl(['hook'], { env: outside }), 'hook', 'no session in scope');
    expectSuccess(await sup.ctl(['prime', '--session', worker], { env: outside }));

    const other = await api.post<{ session_id: string }>('/sessions', { kind: 'agent', name: 'worker' });
    expect(other.status).to.equal(202);
    const gone = other.body.session_id;
    await waitUntil('the second session to run', async () => (await session(api, gone)).running);
    expect((await api.post(`/session/${gone}/close`)).status).to.be.oneOf([200, 202]);
    expectProblem(await api.get(`/session/${gone}/prime`), 404, 'session-not-found');
    expectFailure(await sup.ctl(['prime', '--session', gone], { env: outside }), 'prime', 'is closed');

    const open = await api.post<Bead>('/beads', { title: 'Still open' });
    expectProblem(
      await api.post(`/bead/${open.body.id}/close`, { reason: 'done', session: gone }),
      404,
      'session-not-found',
    );
    expectFailure(
      await sup.ctl(['bead', 'close', open.body.id], { env: { ...outside, CTL_SESSION_ID: gone } }),
      'bead close',
      'is closed',
    );
    expect((await bead(open.body.id)).status).to.equal('open');
    expect(await api.eventsAbout('bead.closed', open.body.id), 'nothing was recorded').to.deep.equal([]);
    // Without a session, a person's close records the person and the reason.
    expectSuccess(await sup.ctl(['bead', 'close', open.body.id, '--reason', 'by hand'], { env: outside }));
    const byHand = await bead(open.body.id);
    expect(byHand.metadata).to.include({ close_reason: 'by hand' });
    expect(byHand.metadata?.closed_by).to.equal(undefined);
  });
});
