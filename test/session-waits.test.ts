import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Wait {
  id: string;
  session_id: string;
  session_name?: string;
  kind: string;
  state: string;
  status: string;
  dep_ids: string[];
  dep_mode: string;
  note?: string;
  nudge_id?: string;
  reason?: string;
}

/** One always-on echo agent: its session waits, and its transcript shows the nudges it is sent. */
const AGENTS = `
[[agent]]
name = "desk"
provider = "echo"
`;

describe('session waits: a session waits for beads to close and is nudged', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let desk: { id: string; session_name: string };
  const wait = (id: string) => city.api.get<Wait>(`/wait/${id}`);

  before(async function () {
    city = await startSessionCity('waiting', AGENTS);
    desk = await waitUntil('desk’s session', async () => {
      const list = await city.api.get<{
        items: { id: string; session_name: string; template: string; state: string }[];
      }>('/sessions');
      return list.body.items.find((s) => s.template === 'desk' && s.state === 'active');
    });
  });
  after(async () => {
    await city?.sup.cleanup();
  });

  it('waits for all its beads, then nudges the session with its note and closes (wait.ready)', async function () {
    const [a, b] = [await city.api.create({ title: 'review a' }), await city.api.create({ title: 'review b' })];
    const made = await city.api.post<Wait>(`/session/${desk.session_name}/wait`, {
      on_beads: [a.id, b.id],
      note: 'merge the branch now',
    });
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    expect(made.body).to.include({ session_id: desk.id, kind: 'deps', state: 'pending', dep_mode: 'all' });
    expect(made.body.dep_ids).to.deep.equal([a.id, b.id]);
    const listed = await city.api.get<{ waits: Wait[] }>(`/waits?session=${desk.id}`);
    expect(listed.body.waits.map((w) => w.id)).to.include(made.body.id);
    await city.api.close(a.id);
    // One of two closed: still pending (read after the close's own listeners ran).
    expect((await wait(made.body.id)).body.state).to.equal('pending');
    await city.api.close(b.id);
    const over = await waitUntil('the wait to end', async () => {
      const w = (await wait(made.body.id)).body;
      return w.state === 'closed' ? w : undefined;
    });
    expect(over.status).to.equal('closed');
    expect(over.nudge_id).to.be.a('string');
    await waitForTurn(
      city.api,
      desk.id,
      'user',
      new RegExp(`^Wait ${made.body.id} is over: .*${b.id}.* merge the branch now$`),
    );
    const [ready] = (await city.api.events('wait.ready')).filter((e) => e.subject === made.body.id);
    expect(ready.payload).to.include({ wait_id: made.body.id, session_id: desk.id, nudge_id: over.nudge_id });
    expect((await city.api.events('wait.registered')).some((e) => e.subject === made.body.id)).to.equal(true);
  });

  it('any: the first bead closing ends it; beads closed already end it at once', async function () {
    const [a, b] = [await city.api.create({ title: 'x' }), await city.api.create({ title: 'y' })];
    const made = await city.api.post<Wait>(`/session/${desk.id}/wait`, { on_beads: [a.id, b.id], any: true });
    expect(made.body.dep_mode).to.equal('any');
    await city.api.close(b.id);
    await waitUntil('the any-wait to end', async () =>
      (await wait(made.body.id)).body.state === 'closed' ? true : undefined,
    );
    const done = await city.api.post<Wait>(`/session/${desk.id}/wait`, { on_beads: [b.id] });
    expect(done.body.state).to.equal('closed');
  });

  it('cancel and ready; a bad session, bead or list is refused', async function () {
    const a = await city.api.create({ title: 'z' });
    const first = await city.api.post<Wait>(`/session/${desk.id}/wait`, { on_beads: [a.id] });
    const canceled = await city.api.post<Wait>(`/wait/${first.body.id}/cancel`);
    expect(canceled.body).to.include({ state: 'canceled', status: 'closed' });
    expectProblem(await city.api.post(`/wait/${first.body.id}/cancel`), 409, 'conflict-wrong-state');
    const second = await city.api.post<Wait>(`/session/${desk.id}/wait`, { on_beads: [a.id], note: 'go on' });
    const ended = await city.api.post<Wait>(`/wait/${second.body.id}/ready`);
    expect(ended.body.state).to.equal('closed');
    expect(ended.body.reason).to.equal('marked ready by hand');
    await city.api.close(a.id);
    // The canceled one never nudged: only the second's message mentions a.
    await waitForTurn(city.api, desk.id, 'user', new RegExp(`^Wait ${second.body.id} is over: marked ready by hand`));
    expect((await city.api.events('wait.ready')).some((e) => e.subject === first.body.id)).to.equal(false);
    expectProblem(await city.api.post('/session/nobody/wait', { on_beads: [a.id] }), 404, 'session-not-found');
    expectProblem(await city.api.post(`/session/${desk.id}/wait`, { on_beads: ['wai-9999'] }), 404, 'bead-not-found');
    expectProblem(await city.api.post(`/session/${desk.id}/wait`, { on_beads: [] }), 422, 'validation-failed');
    expectProblem(await city.api.post('/wait/wai-9999/cancel'), 404, 'wait-not-found');
  });

  it('ctl wait for|list|show|cancel, inside a session by default', async function () {
    const a = await city.api.create({ title: 'cli' });
    const env = { CTL_CITY: 'waiting', CTL_SESSION_ID: desk.id };
    const [made] = expectSuccess(await city.sup.ctl(['wait', 'for', a.id, '--note', 'then deploy'], { env }));
    const id = made.match(/^Wait (\S+): /)![1];
    expect(made).to.equal(`Wait ${id}: ${desk.session_name} waits for ${a.id}: then deploy`);
    const list = expectSuccess(await city.sup.ctl(['wait', 'list'], { env }));
    expect(list[0]).to.match(/^WAIT\s+KIND\s+STATE/);
    expect(list.some((l) => l.startsWith(id) && /deps\s+pending/.test(l))).to.equal(true);
    const shown = expectSuccess(await city.sup.ctl(['wait', 'show', id], { env }));
    expect(shown).to.include(`Waits for:  ${a.id}: then deploy`);
    expect(expectSuccess(await city.sup.ctl(['wait', 'cancel', id], { env }))).to.deep.equal([`Canceled wait ${id}`]);
    expectFailure(
      await city.sup.ctl(['wait', 'for', a.id], { env: { CTL_CITY: 'waiting' } }),
      'wait for',
      /no session in scope/,
    );
    // A run's waits leave the session's out.
    expect(expectSuccess(await city.sup.ctl(['run', 'waits', '--state', 'all'], { env }))).to.deep.equal(['No waits.']);
  });
});
