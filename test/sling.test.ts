import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem, type Bead } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Slung {
  status: string;
  target: string;
  mode: string;
  bead?: string;
  routed: string[];
  created_bead?: string;
  session_id?: string;
  workflow_id?: string;
}

/** `worker` starts for work; `desk` keeps a session open (a session target); `web/polecat` is a rig's agent. */
const AGENTS = `
[daemon]
patrol_interval = "500ms"

[[agent]]
name = "worker"
provider = "echo"
min_active_sessions = 0

[[agent]]
name = "desk"
provider = "echo"

[[rigs]]
name = "web"
path = "web"
prefix = "wb"

[[agent]]
name = "polecat"
dir = "web"
provider = "echo"
min_active_sessions = 0
`;

describe('sling: text, several beads, sessions, merge, owned, rig', function () {
  this.timeout(60_000);
  let city: SessionCity;
  const sling = (body: Record<string, unknown>) => city.api.post<Slung>('/sling', body);

  before(async function () {
    city = await startSessionCity('slinging', AGENTS);
    mkdirSync(join(city.dir, 'web'), { recursive: true });
  });
  after(async () => {
    await city?.sup.cleanup();
  });

  it('free text becomes a task bead (first line its title) routed to the agent, with merge stamped', async function () {
    const reply = await sling({ target: 'worker', text: 'Fix the login redirect\n\nIt loops on /auth.', merge: 'mr' });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body).to.include({ mode: 'direct', target: 'worker' });
    const id = reply.body.created_bead!;
    expect(reply.body.routed).to.deep.equal([id]);
    const bead = await city.api.bead(id);
    expect(bead).to.include({ title: 'Fix the login redirect', issue_type: 'task' });
    expect(bead.description).to.equal('Fix the login redirect\n\nIt loops on /auth.');
    expect(bead.metadata).to.include({ 'ctl.routed_to': 'worker', merge_strategy: 'mr' });
    // The session that takes it is told how its work gets into the base.
    const taken: Bead = await waitUntil('the bead to be taken', async () => {
      const b = await city.api.bead(id);
      return b.status === 'in_progress' ? b : undefined;
    });
    const sessionId = taken.metadata!['ctl.assigned_session'];
    await waitForTurn(
      city.api,
      sessionId,
      'user',
      /Work on bead .*merge: mr \(push your branch and open a merge request/,
    );
  });

  it('several beads at once: all routed, one convoy tracking them; owned, it does not close by itself', async function () {
    const [a, b] = [await city.api.create({ title: 'one' }), await city.api.create({ title: 'two' })];
    const reply = await sling({ target: 'worker', beads: [a.id, b.id], owned: true, reassign: true });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body.mode).to.equal('batch');
    expect(reply.body.routed).to.deep.equal([a.id, b.id]);
    const convoy = await city.api.bead(reply.body.workflow_id!);
    expect(convoy.issue_type).to.equal('convoy');
    expect(convoy.labels).to.include('owned');
    expect(convoy.dependencies!.map((d) => d.depends_on_id).sort()).to.deep.equal([a.id, b.id].sort());
    const c = await city.api.create({ title: 'three' });
    const plain = await sling({ target: 'worker', bead: c.id });
    for (const id of [a.id, b.id, c.id]) await city.api.close(id);
    // The plain convoy closes with its last bead; the owned one, closed in the same way, stays open.
    await waitUntil('the plain convoy to close', async () =>
      (await city.api.bead(plain.body.workflow_id!)).status === 'closed' ? true : undefined,
    );
    expect((await city.api.bead(convoy.id)).status).to.equal('open');
    // Any unknown bead: a 404, and nothing of the others routed.
    const d = await city.api.create({ title: 'four' });
    expectProblem(await sling({ target: 'worker', beads: [d.id, 'sli-99999'] }), 404, 'bead-not-found');
    expect((await city.api.bead(d.id)).metadata?.['ctl.routed_to']).to.equal(undefined);
  });

  it('a session as the target is handed the bead at once and told', async function () {
    const desk = await waitUntil('desk’s session', async () => {
      const list = await city.api.get<{
        items: { id: string; session_name: string; template: string; state: string }[];
      }>('/sessions');
      return list.body.items.find((s) => s.template === 'desk' && s.state === 'active');
    });
    const bead = await city.api.create({ title: 'for the desk' });
    const reply = await sling({ target: desk.session_name, bead: bead.id, merge: 'local' });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body).to.include({ mode: 'session', session_id: desk.id, target: 'desk' });
    const held = await city.api.bead(bead.id);
    expect(held).to.include({ status: 'in_progress', assignee: desk.session_name });
    expect(held.metadata).to.include({ 'ctl.assigned_session': desk.id, 'ctl.routed_to': 'desk' });
    await waitForTurn(city.api, desk.id, 'user', new RegExp(`Work on bead ${bead.id}: for the desk .*merge: local`));
    expectProblem(await sling({ target: desk.id, formula: 'anything' }), 422, 'validation-failed');
  });

  it('rig: a bare target is the rig’s agent, text becomes a bead of the rig; a target outside it is a 422', async function () {
    const reply = await sling({ target: 'polecat', rig: 'web', text: 'tidy the css' });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body.target).to.equal('web/polecat');
    expect(reply.body.created_bead).to.match(/^wb-/);
    expect((await city.api.bead(reply.body.workflow_id!)).metadata).to.include({ rig: 'web' });
    expectProblem(await sling({ target: 'polecat', rig: 'nope', text: 'x' }), 404, 'rig-not-found');
    expectProblem(await sling({ target: 'other/polecat', rig: 'web', text: 'x' }), 422, 'validation-failed', {
      location: 'body.rig',
    });
    expectProblem(await sling({ target: 'worker', rig: 'web', text: 'x' }), 404, 'agent-not-found');
  });

  it('fields that do not go together are a 422 naming the field, and nothing is made', async function () {
    const bead = await city.api.create({ title: 'x' });
    const before = (await city.api.get<{ total: number }>('/beads?limit=1')).body.total;
    const cases: [Record<string, unknown>, string][] = [
      [{ target: 'worker', bead: bead.id, text: 'more' }, 'body.text'],
      [{ target: 'worker', bead: bead.id, beads: [bead.id] }, 'body.beads'],
      [{ target: 'worker', beads: [] }, 'body.beads'],
      [{ target: 'worker', text: '  ' }, 'body.text'],
      [{ target: 'worker', bead: bead.id, owned: true, no_convoy: true }, 'body.owned'],
      [{ target: 'worker', formula: 'f', text: 'x' }, 'body.formula'],
      [{ target: 'worker', formula: 'f', no_formula: true }, 'body.no_formula'],
      [{ target: 'worker', bead: bead.id, attached_bead_id: bead.id }, 'body.attached_bead_id'],
    ];
    for (const [body, location] of cases) {
      expectProblem(await sling(body), 422, 'validation-failed', { location });
    }
    expectProblem(await sling({ target: 'worker', bead: bead.id, merge: 'squash' }), 422, 'validation-failed');
    expect((await city.api.get<{ total: number }>('/beads?limit=1')).body.total).to.equal(before);
  });

  it('ctl sling: text, several beads, --stdin, --merge/--owned/--rig, one stderr line for a bad combination', async function () {
    const env = { CTL_CITY: 'slinging' };
    const made = expectSuccess(await city.sup.ctl(['sling', 'worker', 'write the release notes', '--owned'], { env }));
    expect(made[0]).to.match(/^Made bead sli-\d+ of the text$/);
    expect(made[1]).to.match(/^Slung bead sli-\d+ to worker \(convoy sli-\d+\)$/);
    const [a, b] = [await city.api.create({ title: 'p' }), await city.api.create({ title: 'q' })];
    const both = expectSuccess(await city.sup.ctl(['sling', 'worker', a.id, b.id, '--merge', 'direct'], { env }));
    expect(both).to.deep.equal([
      `Slung 2 beads (${a.id}, ${b.id}) to worker (convoy ${both[0].match(/convoy (\S+)\)/)![1]})`,
    ]);
    expect((await city.api.bead(b.id)).metadata).to.include({ merge_strategy: 'direct' });
    const piped = await city.sup.ctl(['sling', 'polecat', '--rig', 'web', '--stdin', '--json'], {
      env,
      input: 'from a pipe\nwith detail',
    });
    const body = JSON.parse(expectSuccess(piped).join('\n')) as Slung;
    expect(body).to.include({ target: 'web/polecat', mode: 'direct' });
    expect((await city.api.bead(body.created_bead!)).title).to.equal('from a pipe');
    expectFailure(
      await city.sup.ctl(['sling', 'worker', a.id, '--merge', 'squash'], { env }),
      'sling',
      /--merge is direct, review, push, local or mr/,
    );
    expectFailure(
      await city.sup.ctl(['sling', 'worker', a.id, '--owned', '--no-convoy'], { env }),
      'sling',
      /--owned marks the convoy/,
    );
  });
});
