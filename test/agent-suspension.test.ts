import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

// Conditional agent suspension: `GET …/agent-suspension/{base}` (and `{dir}/{base}`) says the desired state and
// the agent's content token; `PUT` with `{expected_token, suspended}` changes it through the same write as
// `POST …/suspend|resume` only if the agent is still as it was read. Over real HTTP and the real CLI.

interface Suspension {
  agent: string;
  suspended: boolean;
  token: string;
  already_desired?: boolean;
}

const AGENTS = `
[daemon]
patrol_interval = "500ms"

[[agent]]
name = "keeper"
provider = "echo"

[[agent]]
name = "other"
provider = "echo"
min_active_sessions = 0

[[rigs]]
name = "frontend"
path = "frontend"

[[agent]]
name = "reviewer"
dir = "frontend"
provider = "echo"
min_active_sessions = 0
`;

describe('conditional agent suspension (content token, 409 on a stale one, already_desired)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  const ctl = (...args: string[]) => city.sup.ctl(['--city', 'suspension', ...args]);

  before(async function () {
    city = await startSessionCity('suspension', AGENTS);
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  async function read(path: string): Promise<Suspension> {
    const reply = await city.api.get<Suspension>(`/agent-suspension/${path}`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body;
  }

  function put(path: string, body: unknown) {
    return city.api.call<Suspension>('PUT', `/agent-suspension/${path}`, body);
  }

  it('GET: the desired state and a stable token; PUT with it suspends as suspend does, with a new token', async function () {
    const first = await read('keeper');
    expect(first).to.include({ agent: 'keeper', suspended: false });
    expect(first.token).to.match(/^[0-9a-f]{64}$/);
    expect((await read('keeper')).token, 'the same agent, the same token').to.equal(first.token);
    expect((await read('other')).token, 'another agent, another token').to.not.equal(first.token);

    const done = await put('keeper', { expected_token: first.token, suspended: true });
    expect(done.status, JSON.stringify(done.body)).to.equal(200);
    expect(done.body).to.include({ agent: 'keeper', suspended: true, already_desired: false });
    expect(done.body.token).to.not.equal(first.token);
    expect(done.body.token, 'the answer carries the token a read now gives').to.equal((await read('keeper')).token);
    // The same mechanism as `ctl agent suspend`: written to its config, recorded, its session stops.
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.match(
      /name = "keeper"\nprovider = "echo"\nsuspended = true\n/,
    );
    expect(await city.api.eventsAbout('agent.suspended', 'keeper')).to.have.length(1);
    await waitUntil('keeper suspended, not running', async () => {
      const agent = (await city.api.get<{ state: string; running: boolean }>('/agent/keeper')).body;
      return agent.state === 'suspended' && !agent.running;
    });

    // A stale token: 409, nothing written.
    const stale = await put('keeper', { expected_token: first.token, suspended: false });
    expectProblem(stale, 409, 'conflict-concurrent-modify', { detail: 'conflict: agent keeper changed' });
    expect((await read('keeper')).suspended).to.equal(true);
    expect(await city.api.eventsAbout('agent.resumed', 'keeper')).to.have.length(0);

    // Already in the desired state: answered as such whatever the token (a retry of a change that went through).
    const again = await put('keeper', { expected_token: first.token, suspended: true });
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body).to.include({ suspended: true, already_desired: true, token: done.body.token });
    expect(await city.api.eventsAbout('agent.suspended', 'keeper')).to.have.length(1);

    const resumed = await put('keeper', { expected_token: done.body.token, suspended: false });
    expect(resumed.body).to.include({ suspended: false, already_desired: false });
    expect(await city.api.eventsAbout('agent.resumed', 'keeper')).to.have.length(1);
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.not.match(/suspended = true/);
    await waitUntil(
      'keeper running again',
      async () => (await city.api.get<{ running: boolean }>('/agent/keeper')).body.running,
    );
  });

  it('any other change to the agent changes its token: a PUT with the one read before is a 409', async function () {
    const before = await read('other');
    const edited = await city.api.patch('/agent/other', { description: 'changed by someone else' });
    expect(edited.status, JSON.stringify(edited.body)).to.equal(200);
    const after = await read('other');
    expect(after.token).to.not.equal(before.token);
    expectProblem(
      await put('other', { expected_token: before.token, suspended: true }),
      409,
      'conflict-concurrent-modify',
    );
    expect((await read('other')).suspended).to.equal(false);
    expect((await put('other', { expected_token: after.token, suspended: true })).status).to.equal(200);
    expect((await read('other')).suspended).to.equal(true);
  });

  it("a rig's agent by dir/base; 404 for no such agent; 422 for a body it cannot take", async function () {
    const reviewer = await read('frontend/reviewer');
    expect(reviewer).to.include({ agent: 'frontend/reviewer', suspended: false });
    const done = await put('frontend/reviewer', { expected_token: reviewer.token, suspended: true });
    expect(done.body).to.include({ agent: 'frontend/reviewer', suspended: true, already_desired: false });
    expect(await city.api.eventsAbout('agent.suspended', 'frontend/reviewer')).to.have.length(1);

    expectProblem(await city.api.get('/agent-suspension/nobody'), 404, 'agent-not-found');
    expectProblem(await city.api.get('/agent-suspension/frontend/nobody'), 404, 'agent-not-found');
    expectProblem(await put('nobody', { expected_token: 'x', suspended: true }), 404, 'agent-not-found');
    expectProblem(await put('keeper', { suspended: true }), 422, 'validation-failed', {
      location: 'body.expected_token',
    });
    expectProblem(await put('keeper', { expected_token: '', suspended: true }), 422, 'validation-failed');
    expectProblem(await put('keeper', { expected_token: reviewer.token, suspended: 'yes' }), 422, 'validation-failed', {
      location: 'body.suspended',
    });
  });

  it('ctl agent suspension shows the token; ctl agent suspend|resume --if-token write only with the current one', async function () {
    const shown = expectSuccess(await ctl('agent', 'suspension', 'keeper'));
    const token =
      shown
        .find((l) => l.startsWith('Token'))
        ?.split(/\s+/)
        .at(-1) ?? '';
    expect(token).to.equal((await read('keeper')).token);
    expect(shown.find((l) => l.startsWith('Suspended'))).to.match(/no$/);

    expect(expectSuccess(await ctl('agent', 'suspend', 'keeper', '--if-token', token))).to.deep.equal([
      'Suspended agent keeper',
    ]);
    expect(expectSuccess(await ctl('agent', 'suspend', 'keeper', '--if-token', token))).to.deep.equal([
      'Agent keeper was already suspended',
    ]);
    // The token read before the suspend is stale now: one line on stderr, exit 1, nothing changed.
    expectFailure(await ctl('agent', 'resume', 'keeper', '--if-token', token), 'agent resume', 'changed since');
    expect((await read('keeper')).suspended).to.equal(true);

    const json = JSON.parse(
      expectSuccess(await ctl('agent', 'suspension', 'frontend/reviewer', '--json'))[0],
    ) as Suspension;
    expect(json).to.deep.equal(await read('frontend/reviewer'));
    const fresh = (await read('keeper')).token;
    expect(expectSuccess(await ctl('agent', 'resume', 'keeper', '--if-token', fresh))).to.deep.equal([
      'Resumed agent keeper',
    ]);
    expectFailure(await ctl('agent', 'suspension', 'nobody'), 'agent suspension', 'agent not found');
  });
});
