// The reads BeadsService answers for the domains and routes, over both stores: each a store query, so a
// route never loads beads to filter them itself.
import { rmSync } from 'node:fs';
import { expect } from 'chai';
import type { BeadStore } from '../../controller/beads/bead-store.js';
import { BeadsService } from '../../controller/beads/beads-service.js';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import { SqliteBeadStore } from '../../controller/beads/sqlite-store.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import { tempDir } from '../helpers/supervisor.js';

const BACKENDS: { name: string; open: (dir: string) => BeadStore }[] = [
  { name: 'sqlite', open: (dir) => SqliteBeadStore.open(dir, 'tc') },
  { name: 'journal', open: (dir) => JournalBeadStore.open(dir, 'tc') },
];

const log = { append: () => Promise.resolve() } as unknown as EventLog;
const ids = (page: { items: { id: string }[] }) => page.items.map((b) => b.id);

/** The next millisecond's ISO time (created_at holds milliseconds), once the clock reaches it. */
function afterThisMillisecond(time: string): void {
  while (new Date().toISOString() <= time) {
    // The clock moves on within a millisecond.
  }
}

for (const backend of BACKENDS) {
  describe(`bead queries (${backend.name})`, function () {
    let dir: string;
    let store: BeadStore;
    let beads: BeadsService;

    beforeEach(function () {
      dir = tempDir('ctl-bead-queries-');
      store = backend.open(dir);
      beads = new BeadsService(store, log);
    });
    afterEach(function () {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const fire = async (order: string) =>
      (await beads.create({ title: `order ${order}`, labels: ['order-tracking', `order-run:${order}`] })).bead;

    it("answers an order's runs and every order's, newest first, by page and by time", async function () {
      const a1 = await fire('a');
      afterThisMillisecond(a1.created_at);
      const b1 = await fire('b');
      // A run's root carries the order's run label but is no firing.
      await beads.create({ title: 'root of a', type: 'molecule', labels: ['order-run:a'] });
      await beads.create({ title: 'plain work' });
      afterThisMillisecond(b1.created_at);
      const a2 = await fire('a');
      await beads.close(a1.id);

      expect(ids(beads.orderRuns('a', { limit: 10 }))).to.deep.equal([a2.id, a1.id]);
      expect(ids(beads.orderRuns(undefined, { limit: 10 }))).to.deep.equal([a2.id, b1.id, a1.id]);
      expect(ids(beads.orderRuns('a', { limit: 10, open: true }))).to.deep.equal([a2.id]);
      expect(ids(beads.orderRuns('c', { limit: 10 }))).to.deep.equal([]);

      const first = beads.orderRuns(undefined, { limit: 2 });
      expect(ids(first)).to.deep.equal([a2.id, b1.id]);
      expect(first.more).to.equal(true);
      expect(ids(beads.orderRuns(undefined, { limit: 2, before: b1.id }))).to.deep.equal([a1.id]);

      const at = (bead: { created_at: string }) => Date.parse(bead.created_at);
      expect(ids(beads.orderRuns(undefined, { limit: 10, createdBefore: at(a2) }))).to.deep.equal([b1.id, a1.id]);
      expect(ids(beads.orderRuns('a', { limit: 10, createdBefore: at(b1) }))).to.deep.equal([a1.id]);
      expect(ids(beads.orderRuns('a', { limit: 10, createdBefore: at(a1) }))).to.deep.equal([]);
      // Past year 9999 (an ISO time with a sign) is after every bead, as it was when the route compared times.
      const farFuture = Date.parse('+010000-01-01T00:00:00.000Z');
      expect(ids(beads.orderRuns('a', { limit: 10, createdBefore: farFuture }))).to.deep.equal([a2.id, a1.id]);
    });

    it('finds a firing only by its tracking bead, and any bead without a 404', async function () {
      const run = await fire('a');
      const work = (await beads.create({ title: 'work', labels: ['order-run:a'] })).bead;
      expect(beads.orderRun(run.id)?.id).to.equal(run.id);
      expect(beads.orderRun(work.id)).to.equal(undefined);
      expect(beads.orderRun('tc-999')).to.equal(undefined);
      expect(beads.find(work.id)?.title).to.equal('work');
      expect(beads.find('tc-999')).to.equal(undefined);
    });

    it('lists, queues and relates beads through the store, and pages comments with a 404 for no bead', async function () {
      const parent = (await beads.create({ title: 'parent' })).bead;
      const child = (await beads.create({ title: 'child', parent: parent.id, labels: ['x'] })).bead;
      await beads.addDependency(parent.id, child.id, 'blocks');
      expect(ids(beads.list({ label: 'x', limit: 10 }))).to.deep.equal([child.id]);
      expect(ids(beads.ready({ limit: 10 }))).to.deep.equal([child.id]);
      expect(ids({ items: beads.dependents(child.id) })).to.deep.equal([parent.id]);
      expect(ids({ items: beads.children(parent.id) })).to.deep.equal([child.id]);
      await beads.comment(child.id, 'one', 'ann');
      await beads.comment(child.id, 'two', 'ann');
      const page = beads.comments(child.id, { limit: 1 });
      expect(page.items.map((c) => c.text)).to.deep.equal(['two']);
      expect([page.total, page.more]).to.deep.equal([2, true]);
      expect(() => beads.comments('tc-999', { limit: 1 }))
        .to.throw(Problem)
        .with.property('code', 'bead-not-found');
    });
  });
}
