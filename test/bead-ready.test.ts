import { expect } from 'chai';
import { NOT_WORK_LABELS, NOT_WORK_TYPES } from '../controller/beads/bead-store.js';
import { CityApi, expectProblem, type Bead, type Message } from './helpers/city-api.js';
import { BLOCKING, createMany, FUTURE, NON_BLOCKING, PAST, withWorkCity, type Page } from './helpers/work-units.js';

// The ready queue (`GET …/beads/ready`): which beads are ready, edge by edge and type by type.
// A supervisor and city of this file's own; what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let api: CityApi;
  withWorkCity((city) => ({ api } = city));

  describe('the ready rule, edge by edge', function () {
    for (const kind of BLOCKING) {
      it(`\`${kind}\` holds a bead out of ready until its target is closed (and again once it reopens)`, async function () {
        const target = await api.create({ title: `${kind} target` });
        const bead = await api.create({ title: `${kind} dependent` });
        expect(await api.readyIds()).to.include.members([target.id, bead.id]);

        await api.addDep(bead.id, target.id, kind);
        let now = await api.bead(bead.id);
        expect(now.is_blocked).to.equal(true);
        expect(now.needs).to.deep.equal([target.id]);
        let ready = await api.readyIds();
        expect(ready).to.include(target.id);
        expect(ready).to.not.include(bead.id);

        // In progress is not closed.
        await api.update(target.id, { status: 'in_progress' });
        expect(await api.readyIds()).to.not.include(bead.id);

        await api.close(target.id);
        ready = await api.readyIds();
        expect(ready).to.include(bead.id);
        expect(ready).to.not.include(target.id);
        now = await api.bead(bead.id);
        expect(now.is_blocked).to.equal(false);

        await api.reopen(target.id);
        expect(await api.readyIds()).to.not.include(bead.id);
        expect((await api.bead(bead.id)).is_blocked).to.equal(true);

        // Closed by an update counts the same as closed by close.
        await api.update(target.id, { status: 'closed' });
        expect(await api.readyIds()).to.include(bead.id);
        await api.update(target.id, { status: 'open' });
        expect(await api.readyIds()).to.not.include(bead.id);

        // Without the edge it is ready again.
        await api.removeDep(bead.id, target.id, kind);
        expect(await api.readyIds()).to.include(bead.id);
      });
    }

    for (const kind of NON_BLOCKING) {
      it(`\`${kind}\` does not hold a bead out of ready`, async function () {
        const target = await api.create({ title: `${kind} target` });
        const bead = await api.create({ title: `${kind} dependent` });
        await api.addDep(bead.id, target.id, kind);
        const now = await api.bead(bead.id);
        expect(now.is_blocked).to.equal(false);
        expect(now.needs).to.deep.equal([]);
        expect(now.dependencies).to.deep.equal([{ issue_id: bead.id, depends_on_id: target.id, type: kind }]);
        expect(await api.readyIds()).to.include.members([bead.id, target.id]);
      });
    }

    it('a bead with several blockers is ready only when every one is closed', async function () {
      const t1 = await api.create({ title: 'blocker 1' });
      const t2 = await api.create({ title: 'blocker 2' });
      const t3 = await api.create({ title: 'non-blocking target' });
      const bead = await api.create({ title: 'blocked twice' });
      await api.addDep(bead.id, t1.id, 'blocks');
      await api.addDep(bead.id, t2.id, 'waits-for');
      await api.addDep(bead.id, t3.id, 'relates-to');
      await api.close(t1.id);
      expect(await api.readyIds()).to.not.include(bead.id);
      await api.close(t2.id);
      expect(await api.readyIds()).to.include(bead.id);
    });

    it('a child of an open parent is ready (the parent link does not block)', async function () {
      const parent = await api.create({ title: 'open parent', type: 'epic' });
      const child = await api.create({ title: 'child of open parent', parent: parent.id });
      expect(await api.readyIds()).to.include.members([parent.id, child.id]);
    });

    it('a deferred bead is not ready until `defer_until` has passed; clearing it makes it ready', async function () {
      const later = await api.create({ title: 'deferred', defer_until: FUTURE() });
      const past = await api.create({ title: 'deferred into the past', defer_until: PAST() });
      let ready = await api.readyIds();
      expect(ready).to.not.include(later.id);
      expect(ready).to.include(past.id);
      await api.update(later.id, { defer_until: PAST() });
      expect(await api.readyIds()).to.include(later.id);
      await api.update(later.id, { defer_until: FUTURE() });
      expect(await api.readyIds()).to.not.include(later.id);
      await api.update(later.id, { defer_until: null });
      ready = await api.readyIds();
      expect(ready).to.include(later.id);
      expect((await api.bead(later.id)).defer_until).to.equal(undefined);
    });

    it('message and convoy beads, and the other container and record types, are never ready; work types are', async function () {
      // The store's own lists of what is never work, so that this test follows them when they change.
      const excluded = [...NOT_WORK_TYPES];
      expect(excluded).to.include.members(['message', 'convoy']);
      const work = ['task', 'bug', 'feature', 'chore', 'epic'];
      const made: Record<string, string> = {};
      for (const type of [...excluded, ...work]) made[type] = (await api.create({ title: `a ${type}`, type })).id;
      const mail = await api.post<Message>('/mail', { to: 'nobody', subject: 'not work' });
      const convoy = await api.post<Bead>('/convoys', { title: 'not work either' });
      const tracking: Record<string, string> = {};
      for (const label of NOT_WORK_LABELS) tracking[label] = (await api.create({ title: label, labels: [label] })).id;
      const ready = await api.readyIds();
      for (const type of excluded) expect(ready, type).to.not.include(made[type]);
      for (const type of work) expect(ready, type).to.include(made[type]);
      expect(ready).to.not.include(mail.body.id);
      expect(ready).to.not.include(convoy.body.id);
      for (const label of NOT_WORK_LABELS) expect(ready, `labelled ${label}`).to.not.include(tracking[label]);
    });

    it('closed and in-progress beads are not ready', async function () {
      const closed = await api.create({ title: 'closed one' });
      const claimed = await api.create({ title: 'claimed one' });
      await api.close(closed.id);
      await api.update(claimed.id, { status: 'in_progress', assignee: 'eve' });
      const ready = await api.readyIds();
      expect(ready).to.not.include(closed.id);
      expect(ready).to.not.include(claimed.id);
    });

    it('filters by assignee and honours limit', async function () {
      const mine = await api.create({ title: 'for frank 1', assignee: 'frank' });
      const mine2 = await api.create({ title: 'for frank 2', assignee: 'frank' });
      await api.create({ title: 'for gina', assignee: 'gina' });
      expect(await api.readyIds('&assignee=frank')).to.have.members([mine.id, mine2.id]);
      const one = await api.get<Page<Bead>>('/beads/ready?limit=1');
      expect(one.status).to.equal(200);
      expect(one.body.items).to.have.length(1);
      expect(one.headers.get('x-ctl-index')).to.match(/^\d+$/);
      expectProblem(await api.get('/beads/ready?limit=1001'), 422, 'validation-failed', { location: 'query.limit' });
    });

    it('`total` counts every ready bead, not the page (§6.1), so a client can tell when `limit` cut the list short', async function () {
      // More ready beads than the default page of 100.
      await createMany(api, 120, (i) => ({ title: `ready filler ${i}`, labels: ['ready-filler'] }));
      const everything = await api.get<Page<Bead>>('/beads/ready?limit=1000');
      const count = everything.body.items.length;
      expect(count).to.be.at.least(120);
      expect(everything.body.total).to.equal(count);
      const one = await api.get<Page<Bead>>('/beads/ready?limit=1');
      expect(one.body.items).to.have.length(1);
      expect(one.body.total, 'total with limit=1').to.equal(count);
      const byDefault = await api.get<Page<Bead>>('/beads/ready');
      expect(byDefault.body.total, 'total with the default limit').to.equal(count);
    });
  });
});
