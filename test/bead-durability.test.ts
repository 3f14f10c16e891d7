import { expect } from 'chai';
import { CityApi, expectProblem, idNumber, type Bead, type BeadCreate, type Message } from './helpers/city-api.js';
import { CSRF, withSupervisor, type TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// What a kill -9 of a controller keeps: every acknowledged bead, mutation and key, and ids never reused.
// A supervisor of this file's own (the city is made below); what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  withSupervisor((started) => {
    sup = started;
  });

  describe('durability: kill -9 of the controller', function () {
    const name = 'durable-city';
    let dur: CityApi;

    before(async function () {
      await sup.createCity(name);
      dur = new CityApi(sup, name);
    });

    /** Waits until the supervisor runs the city with a controller other than `oldPid`; its pid. */
    async function restartedFrom(oldPid: number): Promise<number> {
      const info = await waitUntil(
        'the supervisor to restart the controller',
        async () => {
          const city = await sup.city(name);
          return city?.running && city.pid !== undefined && city.pid !== oldPid ? city : undefined;
        },
        30_000,
      );
      return info.pid!;
    }

    it('in the middle of a burst of creates: every acknowledged bead is there as acknowledged, ids never reused', async function () {
      this.timeout(120_000);
      const keyedBody = { title: 'keyed before the crash', labels: ['keyed'] };
      const keyed = await dur.post<Bead>('/beads', keyedBody, { 'Idempotency-Key': 'durable-key' });
      expect(keyed.status).to.equal(201);
      const oldPid = (await sup.city(name))!.pid!;
      expect(oldPid).to.be.a('number');

      const TOTAL = 3000;
      const KILL_AFTER = 1000;
      const CONCURRENCY = 32;
      const deadline = Date.now() + 90_000;
      const acked = new Map<string, Bead>();
      const duplicates: string[] = [];
      const wrongAnswers: string[] = [];
      const beforeKill: number[] = [];
      const afterRestart: number[] = [];
      let attempts = 0;
      let failures = 0;
      let inFlight = 0;
      let inFlightAtKill = 0;
      let killed = false;
      let restarted = false;
      let newPid: number | undefined;

      let burstOver = false;
      let watching = true;
      const watcher = (async () => {
        await waitUntil('the kill or the end of the burst', () => killed || burstOver, 100_000);
        if (!killed) return;
        newPid = await restartedFrom(oldPid);
        restarted = true;
      })().finally(() => (watching = false));

      const worker = async () => {
        while (acked.size < TOTAL && Date.now() < deadline) {
          const i = attempts++;
          const sentAfterRestart = restarted;
          const body: BeadCreate = {
            title: `burst ${i}`,
            description: `the body of burst bead ${i}`,
            type: i % 3 === 0 ? 'bug' : 'task',
            priority: i % 5,
            labels: ['burst', `mod-${i % 7}`],
            metadata: { i: String(i) },
          };
          inFlight++;
          let reply: Response | undefined;
          try {
            reply = await fetch(dur.url('/beads'), {
              method: 'POST',
              headers: { ...CSRF, 'content-type': 'application/json' },
              body: JSON.stringify(body),
            });
          } catch {
            reply = undefined;
          } finally {
            inFlight--;
          }
          if (reply?.status !== 201) {
            failures++;
            await reply?.arrayBuffer().catch(() => undefined);
            // Creates fail while the controller is down: try again once it runs again (if it does not, the
            // watcher's failure ends the test).
            await waitUntil('the controller to run again', () => restarted || !watching, 100_000);
            if (!restarted) break;
            continue;
          }
          let bead: Bead;
          try {
            bead = (await reply.json()) as Bead;
          } catch {
            failures++; // the answer was cut off: not acknowledged
            continue;
          }
          if (bead.title !== body.title) wrongAnswers.push(`${body.title} → ${bead.id} ${bead.title}`);
          if (acked.has(bead.id)) duplicates.push(bead.id);
          acked.set(bead.id, bead);
          if (!killed) beforeKill.push(idNumber(bead.id));
          if (sentAfterRestart) afterRestart.push(idNumber(bead.id));
          if (!killed && acked.size >= KILL_AFTER) {
            killed = true;
            inFlightAtKill = inFlight;
            process.kill(oldPid, 'SIGKILL');
          }
        }
      };
      try {
        await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      } finally {
        burstOver = true;
        await watcher;
      }
      expect(wrongAnswers, 'creates answered with another bead').to.deep.equal([]);

      expect(killed, 'the controller was killed').to.equal(true);
      expect(inFlightAtKill, 'creates in flight when it was killed').to.be.greaterThan(0);
      expect(newPid).to.be.a('number').and.not.equal(oldPid);
      expect(acked.size, `acknowledged creates (${failures} failed)`).to.be.at.least(TOTAL);
      expect(duplicates, 'ids acknowledged twice').to.deep.equal([]);
      expect(afterRestart.length, 'creates sent after the restart').to.be.greaterThan(0);

      // Every acknowledged bead is there, as acknowledged.
      const stored = new Map((await dur.listAll({ label: 'burst', all: true })).map((b) => [b.id, b]));
      const missing = [...acked.keys()].filter((id) => !stored.has(id));
      expect(missing, 'acknowledged beads missing after the restart').to.deep.equal([]);
      const changed = [...acked.values()].filter((b) => JSON.stringify(stored.get(b.id)) !== JSON.stringify(b));
      expect(changed.slice(0, 3).map((b) => [b, stored.get(b.id)])).to.deep.equal([]);
      for (const id of [...acked.keys()].slice(0, 20)) expect(await dur.bead(id)).to.deep.equal(acked.get(id));
      // Each acknowledged create recorded its `bead.created` once.
      const createdEvents = (await dur.events('bead.created')).map((e) => e.subject!);
      const eventCount = new Map<string, number>();
      for (const id of createdEvents) eventCount.set(id, (eventCount.get(id) ?? 0) + 1);
      const withoutEvent = [...acked.keys()].filter((id) => eventCount.get(id) !== 1);
      expect(
        withoutEvent.length,
        `acknowledged beads without exactly one bead.created (${withoutEvent.slice(0, 5).join(' ')})`,
      ).to.equal(0);
      // Beads written but not acknowledged may exist; nothing else does.
      const extra = [...stored.keys()].filter((id) => !acked.has(id));
      expect(extra.length).to.be.at.most(failures);

      // Ids after the restart are above every id seen before it.
      expect(Math.min(...afterRestart)).to.be.greaterThan(Math.max(...beforeKill));
      const highest = Math.max(...[...stored.keys(), keyed.body.id].map(idNumber));
      const fresh = await dur.create({ title: 'after the burst' });
      expect(idNumber(fresh.id)).to.be.greaterThan(highest);

      // The idempotency key from before the crash still answers with its bead.
      const replay = await dur.post<Bead>('/beads', keyedBody, { 'Idempotency-Key': 'durable-key' });
      expect(replay.status).to.equal(201);
      expect(replay.body.id).to.equal(keyed.body.id);
      expect((await dur.list({ label: 'keyed' })).items).to.have.length(1);
      expect(await dur.bead(keyed.body.id)).to.deep.equal(keyed.body);
    });

    it('keeps acknowledged updates, closes, deletes, dependencies, mail and convoy state; a deleted newest id stays unused', async function () {
      this.timeout(60_000);
      const a = await dur.create({ title: 'mutated a', labels: ['m1', 'm2'], metadata: { k1: 'v1', k2: 'v2' } });
      const b = await dur.create({ title: 'mutated b' });
      const c = await dur.create({ title: 'closed c' });
      await dur.update(a.id, {
        title: 'mutated a, renamed',
        labels: ['m3'],
        remove_labels: ['m1'],
        metadata: { k1: '', k3: 'v3' },
        status: 'in_progress',
        parent: b.id,
        assignee: 'xena',
      });
      await dur.addDep(b.id, a.id, 'waits-for');
      await dur.addDep(b.id, c.id, 'relates-to');
      await dur.close(c.id);
      const msg = (await dur.post<Message>('/mail', { to: 'yuri', subject: 'survives' })).body;
      await dur.post(`/mail/${msg.id}/read`);
      const convoy = (await dur.post<Bead>('/convoys', { title: 'survives too', items: [a.id, c.id] })).body;
      const newest = await dur.create({ title: 'newest, then deleted' });
      expect((await dur.del(`/bead/${newest.id}`)).status).to.equal(200);

      const before = await Promise.all([a, b, c, convoy].map((x) => dur.bead(x.id)));
      const checkBefore = (await dur.get(`/convoy/${convoy.id}/check`)).body;
      const ready = await dur.readyIds();

      const oldPid = (await sup.city(name))!.pid!;
      process.kill(oldPid, 'SIGKILL');
      await restartedFrom(oldPid);

      expect(await Promise.all([a, b, c, convoy].map((x) => dur.bead(x.id)))).to.deep.equal(before);
      expect(before[0]).to.deep.include({ status: 'in_progress', parent: b.id, assignee: 'xena' });
      expect(before[0].labels).to.have.members(['m2', 'm3']);
      expect(before[0].metadata).to.deep.equal({ k2: 'v2', k3: 'v3' });
      expect(before[1].is_blocked).to.equal(true);
      expectProblem(await dur.get(`/bead/${newest.id}`), 404, 'bead-not-found');
      expect((await dur.get<Message>(`/mail/${msg.id}`)).body).to.include({ id: msg.id, read: true });
      expect((await dur.get(`/convoy/${convoy.id}/check`)).body).to.deep.equal(checkBefore);
      expect(await dur.readyIds()).to.deep.equal(ready);

      const next = await dur.create({ title: 'after the second crash' });
      expect(idNumber(next.id)).to.be.greaterThan(idNumber(newest.id));
    });
  });
});
