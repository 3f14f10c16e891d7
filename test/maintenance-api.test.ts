import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { inLanes } from './helpers/lanes.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Run {
  outcome: string;
  trigger: string;
  operations: string[];
  before_bytes: number;
  after_bytes: number;
  reclaimed_bytes: number;
  started_at: string;
}
interface Status {
  backend: string;
  total_bytes: number;
  beads: number;
  in_flight: boolean;
  enabled: boolean;
  history: Run[];
  last_run?: Run;
  files: { path: string; bytes: number }[];
}

describe('bead store maintenance (real controller, SQLite store)', function () {
  this.timeout(120_000);
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('tidy');
  });
  after(async () => city?.sup.cleanup());

  it('compacting after mass deletes gives the space back; the run is recorded and kept across a restart', async function () {
    const { api } = city;
    const fresh = (await api.get<Status>('/maintenance/status')).body;
    expect(fresh).to.include({ backend: 'sqlite', in_flight: false, enabled: false });
    expect(fresh.history).to.deep.equal([]);
    const filler = 'x'.repeat(4000);
    const ids: string[] = [];
    // 400 beads made and deleted eight requests at a time: what is measured is the space they leave behind.
    await inLanes([...Array(400).keys()], 8, async (i) => {
      ids.push((await api.create({ title: `bulk ${i}`, description: filler })).id);
    });
    await inLanes(ids, 8, async (id) => {
      expect((await api.del(`/bead/${id}`)).status).to.equal(200);
    });
    const before = (await api.get<Status>('/maintenance/status')).body;
    expect(before.beads).to.equal(0);
    expect(before.total_bytes).to.be.greaterThan(1_500_000);

    const done = await api.post<{ accepted: boolean; run: Run }>('/maintenance/compact?wait=true');
    expect(done.status, JSON.stringify(done.body)).to.equal(200);
    expect(done.body.run).to.include({ outcome: 'succeeded', trigger: 'manual' });
    expect(done.body.run.operations).to.include('vacuum');
    expect(done.body.run.after_bytes).to.be.lessThan(before.total_bytes / 4);
    expect(done.body.run.reclaimed_bytes).to.equal(done.body.run.before_bytes - done.body.run.after_bytes);
    const event = (await api.events('ctl.store.maintenance.done')).at(-1)!;
    expect((event.payload as { run: Run }).run).to.deep.equal(done.body.run);

    const accepted = await api.post<{ accepted: boolean; started_at: string }>('/maintenance/compact');
    expect(accepted.status).to.equal(202);
    const second = await waitUntil('the second run', async () => {
      const s = (await api.get<Status>('/maintenance/status')).body;
      return s.history.length === 2 && !s.in_flight ? s : undefined;
    });
    expect(second.last_run!.started_at).to.equal(accepted.body.started_at);

    const pid = (await city.sup.city('tidy'))!.pid!;
    process.kill(pid, 'SIGTERM');
    await waitUntil(
      'a new controller',
      async () => {
        const c = await city.sup.city('tidy');
        return c?.running === true && c.pid !== pid;
      },
      30_000,
    );
    expect((await api.get<Status>('/maintenance/status')).body.history).to.have.length(2);
  });

  it('a wait value that is not a boolean is a 422', async function () {
    expectProblem(await city.api.post('/maintenance/compact?wait=maybe'), 422, 'validation-failed');
  });
});
