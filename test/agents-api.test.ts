import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem, type Bead } from './helpers/city-api.js';
import { deliver, session, startSessionCity, turns, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Agent {
  name: string;
  state: string;
  running: boolean;
  suspended: boolean;
  available: boolean;
  unavailable_reason?: string;
  session_count: number;
  source: string;
  provider?: string;
  rig?: string;
  session?: { name: string; attached: boolean };
  restart_pending: boolean;
}

/** Agents, their config in city.toml and agents/ (comments kept by every write). */
const AGENTS = `
# The city's agents.
[daemon]
patrol_interval = "500ms"

[[agents_note]]
# (not an agent table: left alone)

[[agent]]
name = "mayor"   # always on
provider = "echo"

[[agent]]
name = "ghost"
provider = "nope"

[[agent]]
name = "loop-a"
provider = "echo"
depends_on = ["loop-b"]

[[agent]]
name = "loop-b"
provider = "echo"
depends_on = ["loop-a"]

[[rigs]]
name = "frontend"
path = "frontend"

[[agent]]
name = "reviewer"
dir = "frontend"
provider = "echo"
min_active_sessions = 0
`;

async function agent(city: SessionCity, name: string): Promise<Agent> {
  const reply = await city.api.get<Agent>(`/agent/${name}`);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body;
}

async function agents(city: SessionCity): Promise<Agent[]> {
  const reply = await city.api.get<{ items: Agent[]; total: number }>('/agents');
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body.items;
}

describe('agents API (real controller, agents from city.toml and agents/)', function () {
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('agents', AGENTS.replace('[[agents_note]]\n', ''));
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it('lists every agent with its derived state; an always-on agent gets one running session', async function () {
    const mayor = await waitUntil('mayor to run', async () => {
      const a = await agent(city, 'mayor');
      return a.running && a.state === 'idle' ? a : undefined;
    });
    expect(mayor).to.include({ available: true, suspended: false, session_count: 1, source: 'city.toml' });
    expect(mayor.session?.name).to.match(/^mayor-\d+$/);
    const names = (await agents(city)).map((a) => a.name);
    expect(names).to.include.members(['mayor', 'ghost', 'loop-a', 'loop-b', 'frontend/reviewer']);
    const sessions = await city.api.get<{ items: { template: string; kind: string }[] }>('/sessions');
    expect(sessions.body.items.filter((s) => s.template === 'mayor' && s.kind === 'agent')).to.have.length(1);
  });

  it('keeps the city running with an agent of an unknown provider or a depends_on circle: unavailable, with the reason', async function () {
    const ghost = await agent(city, 'ghost');
    expect(ghost).to.include({ available: false, running: false, session_count: 0 });
    expect(ghost.unavailable_reason).to.match(/provider nope/);
    const loop = await agent(city, 'loop-a');
    expect(loop.available).to.equal(false);
    expect(loop.unavailable_reason).to.match(/circle: loop-a → loop-b → loop-a|circle: loop-b → loop-a → loop-b/);
    const validate = await city.api.get<{ valid: boolean; errors: { file: string; key?: string; message: string }[] }>(
      '/config/validate',
    );
    expect(validate.status).to.equal(200);
    expect(validate.body.valid).to.equal(false);
    expect(validate.body.errors.map((e) => e.key)).to.include.members(['agent.ghost', 'agent.loop-a', 'agent.loop-b']);
    expect(validate.body.errors.find((e) => e.key === 'agent.ghost')?.file).to.equal('city.toml');
  });

  it('addresses a rig agent as rig/agent (working in the rig)', async function () {
    const reviewer = await agent(city, 'frontend/reviewer');
    expect(reviewer).to.include({ name: 'frontend/reviewer', rig: 'frontend', running: false, state: 'stopped' });
    expectProblem(await city.api.get('/agent/reviewer'), 404, 'agent-not-found');
    const rigAgents = await city.api.get<{ items: Agent[] }>('/agents?rig=frontend');
    expect(rigAgents.body.items.map((a) => a.name)).to.deep.equal(['frontend/reviewer']);
    // The other filters: running or not.
    const stopped = await city.api.get<{ items: Agent[] }>('/agents?running=false');
    expect(stopped.body.items.map((a) => a.name)).to.include.members(['ghost', 'frontend/reviewer']);
    expect(stopped.body.items.every((a) => !a.running)).to.equal(true);
    const up = await city.api.get<{ items: Agent[] }>('/agents?running=true');
    expect(up.body.items.map((a) => a.name)).to.include('mayor');
    expect(up.body.items.every((a) => a.running)).to.equal(true);
  });

  it('pool filters (true, or a pool by name) list pools only; peek adds what a running program last wrote', async function () {
    const created = await city.api.post('/agents', {
      name: 'crew',
      provider: 'echo',
      min_active_sessions: 0,
      max_active_sessions: 3,
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const pools = await city.api.get<{ items: Agent[] }>('/agents?pool=true');
    expect(pools.body.items.map((a) => a.name)).to.deep.equal(['crew']);
    expect((await city.api.get<{ items: Agent[] }>('/agents?pool=crew')).body.items.map((a) => a.name)).to.deep.equal([
      'crew',
    ]);
    expect((await city.api.get<{ items: Agent[] }>('/agents?pool=mayor')).body.items).to.deep.equal([]);
    const mayor = await waitUntil('the mayor to run', async () => {
      const a = await agent(city, 'mayor');
      return a.running && a.session ? a : undefined;
    });
    await deliver(city.api, mayor.session!.name, 'peek at me');
    const peeked = await waitUntil('peek to show the reply', async () => {
      const list = await city.api.get<{ items: (Agent & { last_output?: string })[] }>(
        '/agents?peek=true&running=true',
      );
      const found = list.body.items.find((a) => a.name === 'mayor');
      return found?.last_output?.includes('echo: peek at me') ? found : undefined;
    });
    expect(peeked.last_output).to.include('echo: peek at me');
    // Without peek the list has no preview; one agent's view has its latest output.
    const plain = await city.api.get<{ items: (Agent & { last_output?: string })[] }>('/agents?running=true');
    expect(plain.body.items.find((a) => a.name === 'mayor')).to.not.have.property('last_output');
    expect(((await agent(city, 'mayor')) as Agent & { last_output?: string }).last_output).to.include(
      'echo: peek at me',
    );
    expect((await city.api.del('/agent/crew')).status).to.equal(200);
  });

  it('POST /agents writes an [[agent]] table (the rest of city.toml untouched), lists it at once and starts it; POST /sessions {kind: agent} starts another', async function () {
    const before = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    const created = await city.api.post<{ status: string; agent: string }>('/agents', {
      name: 'helper',
      provider: 'echo',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body).to.deep.equal({ status: 'created', agent: 'helper' });
    expect((await agents(city)).map((a) => a.name)).to.include('helper');
    const after = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    expect(after.startsWith(before)).to.equal(true);
    expect(after.slice(before.length)).to.match(/\[\[agent\]\]\nname = "helper"\nprovider = "echo"\n$/);
    await waitUntil('helper to run', async () => (await agent(city, 'helper')).running);
    const started = await city.api.post<{ session_id: string }>('/sessions', { kind: 'agent', name: 'helper' });
    expect(started.status).to.equal(202);
    const view = await waitUntil('the session to be active', async () => {
      const s = await session(city.api, started.body.session_id);
      return s.state === 'active' ? s : undefined;
    });
    expect(view).to.include({ kind: 'agent', template: 'helper' });
    expect((await agent(city, 'helper')).session_count).to.equal(2);
  });

  it('refuses a bad agent: taken name 409, unknown provider or bad name 422, unknown agent 404', async function () {
    expectProblem(await city.api.post('/agents', { name: 'mayor', provider: 'echo' }), 409, 'conflict-wrong-state');
    const unknown = expectProblem(
      await city.api.post('/agents', { name: 'x', provider: 'nope' }),
      422,
      'validation-failed',
    );
    expect(unknown.errors?.[0]?.location).to.equal('body.provider');
    expectProblem(await city.api.post('/agents', { name: 'no/slash', provider: 'echo' }), 422, 'validation-failed');
    expectProblem(await city.api.get('/agent/nobody'), 404, 'agent-not-found');
    expectProblem(await city.api.post('/agent/nobody/suspend'), 404, 'agent-not-found');
    expectProblem(await city.api.post('/agent/mayor/explode'), 422, 'validation-failed');
  });

  it('sling to an unknown agent or of an unknown bead is a 404, and nothing changes', async function () {
    const bead = await city.api.create({ title: 'untouched' });
    const head = (await city.api.events()).length;
    expectProblem(await city.api.post('/sling', { target: 'nobody', bead: bead.id }), 404, 'agent-not-found');
    expectProblem(await city.api.post('/sling', { target: 'mayor', bead: 'age-9999' }), 404, 'bead-not-found');
    expect((await city.api.events()).length).to.equal(head);
    const same = await city.api.bead(bead.id);
    expect(same.metadata ?? {}).to.deep.equal(bead.metadata ?? {});
    expect(same.status).to.equal('open');
  });

  it('suspend and resume are idempotent: the session stops, then runs again; one event each', async function () {
    await waitUntil('mayor to run', async () => (await agent(city, 'mayor')).running);
    const first = await city.api.post('/agent/mayor/suspend');
    expect(first.status).to.equal(200);
    expect((await city.api.post('/agent/mayor/suspend')).status).to.equal(200);
    await waitUntil('mayor to be suspended', async () => {
      const a = await agent(city, 'mayor');
      return a.state === 'suspended' && !a.running;
    });
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.match(
      /name = "mayor" {3}# always on\nprovider = "echo"\nsuspended = true\n/,
    );
    expect(await city.api.eventsAbout('agent.suspended', 'mayor')).to.have.length(1);
    expect((await city.api.post('/agent/mayor/resume')).status).to.equal(200);
    expect((await city.api.post('/agent/mayor/resume')).status).to.equal(200);
    await waitUntil('mayor to run again', async () => {
      const a = await agent(city, 'mayor');
      return a.running && a.state === 'idle' && a.session_count === 1;
    });
    expect(await city.api.eventsAbout('agent.resumed', 'mayor')).to.have.length(1);
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).not.to.match(/suspended = true/);
  });

  it('PATCH /v0/city/{name} suspends and resumes the whole city', async function () {
    const suspended = await city.api.call<{ suspended: boolean }>('PATCH', '', { suspended: true });
    expect(suspended.status, JSON.stringify(suspended.body)).to.equal(200);
    expect(suspended.body.suspended).to.equal(true);
    await waitUntil('every agent to be suspended', async () =>
      (await agents(city)).every((a) => a.state === 'suspended' && !a.running),
    );
    expect(await city.api.events('city.suspended')).to.have.length(1);
    await city.api.call('PATCH', '', { suspended: false });
    await waitUntil('mayor to run again', async () => (await agent(city, 'mayor')).running);
    expect(await city.api.events('city.resumed')).to.have.length(1);
  });

  it('takes edits on disk (agents/ directories too); a broken edit keeps the last good config and says why', async function () {
    const dir = join(city.dir, 'agents', 'scribe');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'agent.toml'), 'provider = "echo"\n');
    writeFileSync(join(dir, 'prompt.template.md'), 'you are {{agent}} of {{city}}');
    const scribe = await waitUntil('scribe to be listed', async () =>
      (await agents(city)).find((a) => a.name === 'scribe'),
    );
    expect(scribe.source).to.equal('agents/scribe/agent.toml');
    // Its session starts with its prompt, the template filled in.
    const id = await waitUntil('scribe to run', async () => {
      const list = await city.api.get<{ items: { id: string; template: string }[] }>('/sessions?template=scribe');
      return list.body.items[0]?.id;
    });
    await waitUntil('the prompt turn', async () =>
      (await turns(city.api, id)).some((t) => t.role === 'assistant' && t.text === 'echo: you are scribe of agents'),
    );

    appendFileSync(join(city.dir, 'city.toml'), '\n[[agent]\nname = "broken"\n');
    const failed = await waitUntil(
      'config.reload_failed',
      async () => (await city.api.events('config.reload_failed'))[0],
    );
    expect(failed.message).to.match(/city\.toml.*the last good configuration stays in use/);
    expect((await agents(city)).map((a) => a.name)).to.include('mayor');
    const validate = await city.api.get<{ valid: boolean; errors: { file: string; message: string }[] }>(
      '/config/validate',
    );
    expect(validate.body.errors.some((e) => e.file === 'city.toml' && /last good/.test(e.message))).to.equal(true);
    writeFileSync(
      join(city.dir, 'city.toml'),
      readFileSync(join(city.dir, 'city.toml'), 'utf8').replace('\n[[agent]\nname = "broken"\n', ''),
    );
    await waitUntil('the config to load again', async () => {
      const v = await city.api.get<{ errors: { message: string }[] }>('/config/validate');
      return !v.body.errors.some((e) => /last good/.test(e.message));
    });
  });

  it('DELETE /agent/{name} removes its table; its sessions close', async function () {
    await waitUntil('helper to run', async () => (await agent(city, 'helper')).running);
    expect((await city.api.del('/agent/helper')).status).to.equal(200);
    expectProblem(await city.api.get('/agent/helper'), 404, 'agent-not-found');
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).not.to.match(/name = "helper"/);
    await waitUntil('its controller-started session to close', async () => {
      const list = await city.api.get<{ items: { template: string; state: string }[] }>('/sessions?template=helper');
      // The session a person started (POST /sessions) stays theirs; the one the tick started closes.
      return list.body.items.length === 1;
    });
    // An agent of its own directory is removed by removing the directory.
    expectProblem(await city.api.del('/agent/scribe'), 409, 'conflict-wrong-state');
  });

  it('sling routes a bead to an agent: routed metadata, a convoy, and the work handed to its session', async function () {
    const bead = await city.api.create({ title: 'look at this' });
    const reply = await city.api.post<{
      status: string;
      target: string;
      mode: string;
      routed: string[];
      workflow_id: string;
    }>('/sling', { target: 'mayor', bead: bead.id });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body).to.include({ status: 'slung', target: 'mayor', mode: 'direct' });
    expect(reply.body.routed).to.deep.equal([bead.id]);
    const convoy = await city.api.bead(reply.body.workflow_id);
    expect(convoy.issue_type).to.equal('convoy');
    const taken: Bead = await waitUntil('the bead to be taken', async () => {
      const b = await city.api.bead(bead.id);
      return b.status === 'in_progress' ? b : undefined;
    });
    expect(taken.metadata?.['ctl.routed_to']).to.equal('mayor');
    expect(taken.assignee).to.match(/^mayor-\d+$/);
    const mayor = await agent(city, 'mayor');
    expect((mayor as unknown as { active_bead: string }).active_bead).to.equal(bead.id);
    expect(mayor.state).to.equal('working');
  });

  it('sling of a convoy routes each open member (closed ones left alone) and creates no other convoy', async function () {
    const [a, b, c] = [
      await city.api.create({ title: 'one' }),
      await city.api.create({ title: 'two' }),
      await city.api.create({ title: 'three' }),
    ];
    await city.api.close(c.id);
    const convoy = await city.api.post<{ id: string }>('/convoys', { title: 'batch', items: [a.id, b.id, c.id] });
    expect(convoy.status).to.equal(201);
    const convoysBefore = (await city.api.get<{ total: number }>('/convoys')).body.total;
    const reply = await city.api.post<{ mode: string; routed: string[]; workflow_id: string }>('/sling', {
      target: 'frontend/reviewer',
      bead: convoy.body.id,
    });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body.mode).to.equal('convoy');
    expect(reply.body.routed.sort()).to.deep.equal([a.id, b.id].sort());
    expect(reply.body.workflow_id).to.equal(convoy.body.id);
    expect((await city.api.get<{ total: number }>('/convoys')).body.total).to.equal(convoysBefore);
    expect((await city.api.bead(a.id)).metadata?.['ctl.routed_to']).to.equal('frontend/reviewer');
    expect((await city.api.bead(c.id)).metadata?.['ctl.routed_to']).to.equal(undefined);
    // The rig's agent (min 0) starts a session for the work.
    await waitUntil('the reviewer to run', async () => (await agent(city, 'frontend/reviewer')).running);
  });
});
