// The bead store suite, written against the BeadStore interface: another backend runs the same tests by
// adding its factory to BACKENDS.
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { BeadError, type BeadStore } from '../../controller/beads/bead-store.js';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import { SqliteBeadStore } from '../../controller/beads/sqlite-store.js';
import { tempDir } from '../helpers/temp-dir.js';

interface Backend {
  name: string;
  /** Opens the store kept in `dir` (again, after a close or a crash, when it already exists). */
  open(dir: string): BeadStore;
}

const BACKENDS: Backend[] = [
  { name: 'sqlite', open: (dir) => SqliteBeadStore.open(dir, 'tc') },
  { name: 'journal', open: (dir) => JournalBeadStore.open(dir, 'tc') },
];

function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof BeadError) return err.code;
    throw err;
  }
  return undefined;
}

for (const backend of BACKENDS) {
  describe(`bead store (${backend.name})`, function () {
    let dir: string;
    let store: BeadStore;

    beforeEach(function () {
      dir = tempDir('ctl-beads-');
      store = backend.open(dir);
    });
    afterEach(function () {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('creates open beads with the prefix, a default type and sequential ids never reused', function () {
      const a = store.create({ title: 'first' });
      const b = store.create({ title: 'second', type: 'bug', priority: 1, labels: ['x', 'x', 'y'] });
      expect(a).to.include({ id: 'tc-1', status: 'open', issue_type: 'task', title: 'first' });
      expect(b).to.include({ id: 'tc-2', issue_type: 'bug', priority: 1 });
      expect(b.labels).to.deep.equal(['x', 'y']);
      store.delete('tc-2');
      expect(store.create({ title: 'third' }).id).to.equal('tc-3');
      store.close();
      store = backend.open(dir);
      expect(store.create({ title: 'fourth' }).id).to.equal('tc-4');
      expect(store.get('tc-2')).to.equal(undefined);
    });

    it('validates input', function () {
      expect(errorCode(() => store.create({ title: '  ' }))).to.equal('invalid');
      expect(errorCode(() => store.create({ title: 'x', priority: 9 }))).to.equal('invalid');
      expect(errorCode(() => store.create({ title: 'x', parent: 'tc-404' }))).to.equal('missing-dependency');
      expect(errorCode(() => store.update('tc-404', { title: 'y' }))).to.equal('not-found');
      const a = store.create({ title: 'x' });
      expect(errorCode(() => store.update(a.id, { status: 'done' }))).to.equal('invalid');
      expect(errorCode(() => store.create({ title: 'x', deferUntil: 'soon' }))).to.equal('invalid');
    });

    it('appends labels, removes listed ones, merges metadata, sets and clears the parent', function () {
      const parent = store.create({ title: 'parent' });
      const a = store.create({ title: 'a', labels: ['one'], metadata: { k: 'v', keep: '1' } });
      const b = store.update(a.id, {
        addLabels: ['two', 'one'],
        removeLabels: ['one'],
        metadata: { k: 'w', keep: '', added: 'yes' },
        parent: parent.id,
      });
      expect(b.labels).to.deep.equal(['two']);
      expect(b.metadata).to.deep.equal({ k: 'w', added: 'yes' });
      expect(b.parent).to.equal(parent.id);
      expect(store.children(parent.id).map((c) => c.id)).to.deep.equal([a.id]);
      expect(store.update(a.id, { parent: null }).parent).to.equal(undefined);
      expect(store.children(parent.id)).to.deep.equal([]);
      expect(errorCode(() => store.update(parent.id, { parent: parent.id }))).to.equal('cycle');
    });

    it('keeps a bead out of ready while a blocking dependency is not closed, edge by edge', function () {
      const dep = store.create({ title: 'dependency' });
      const waiter = store.create({ title: 'waiter' });
      const ids = () => store.ready({}).items.map((b) => b.id);
      expect(ids()).to.deep.equal([dep.id, waiter.id]);
      for (const kind of ['blocks', 'waits-for', 'conditional-blocks'] as const) {
        store.addDependency(waiter.id, dep.id, kind);
        expect(ids(), kind).to.deep.equal([dep.id]);
        expect(store.get(waiter.id)!.is_blocked).to.equal(true);
        expect(store.get(waiter.id)!.needs).to.deep.equal([dep.id]);
        store.removeDependency(waiter.id, dep.id, kind);
        expect(ids(), kind).to.deep.equal([dep.id, waiter.id]);
      }
      for (const kind of ['tracks', 'relates-to', 'parent-child'] as const) {
        store.addDependency(waiter.id, dep.id, kind);
        expect(ids(), kind).to.deep.equal([dep.id, waiter.id]);
        store.removeDependency(waiter.id, dep.id, kind);
      }
      store.addDependency(waiter.id, dep.id, 'blocks');
      store.update(dep.id, { status: 'in_progress' });
      expect(ids()).to.deep.equal([]);
      store.update(dep.id, { status: 'closed' });
      expect(ids()).to.deep.equal([waiter.id]);
      store.update(dep.id, { status: 'open' });
      expect(ids()).to.deep.equal([dep.id]);
    });

    it('leaves deferred beads, containers, messages and bookkeeping out of ready', function () {
      const future = new Date(Date.now() + 3600_000).toISOString();
      const past = new Date(Date.now() - 1000).toISOString();
      store.create({ title: 'deferred', deferUntil: future });
      const due = store.create({ title: 'due', deferUntil: past });
      store.create({ title: 'convoy', type: 'convoy' });
      store.create({ title: 'mail', type: 'message', ephemeral: true });
      store.create({ title: 'tracking', labels: ['order-tracking'] });
      const busy = store.create({ title: 'busy' });
      store.update(busy.id, { status: 'in_progress' });
      expect(store.ready({}).items.map((b) => b.id)).to.deep.equal([due.id]);
      expect(store.ready({ assignee: 'nobody' })).to.deep.equal({ items: [], total: 0, more: false });
      expect(store.ready({ limit: 0 })).to.deep.include({ total: 1 });
    });

    it('lists work only when asked: no mail, containers or bookkeeping, whatever their status', function () {
      const task = store.create({ title: 'task' });
      const started = store.create({ title: 'started' });
      store.update(started.id, { status: 'in_progress' });
      store.create({ title: 'convoy', type: 'convoy' });
      store.create({ title: 'mail', type: 'message', ephemeral: true });
      store.create({ title: 'tracking', labels: ['order-tracking'] });
      const work = (status: string) => store.list({ status, workOnly: true, includeEphemeral: true, limit: 10 });
      expect(work('open').items.map((b) => b.id)).to.deep.equal([task.id]);
      expect(work('open').total).to.equal(1);
      expect(work('in_progress').items.map((b) => b.id)).to.deep.equal([started.id]);
      expect(store.list({ status: 'open', includeEphemeral: true, limit: 10 }).total).to.equal(4);
    });

    it('pages the ready queue after a bead: no skip, no repeat, and whether more follow', function () {
      const made = Array.from({ length: 5 }, (_, i) => store.create({ title: `r${i}` }).id);
      const blocked = store.create({ title: 'blocked' });
      store.addDependency(blocked.id, made[0], 'blocks');
      const first = store.ready({ limit: 2 });
      expect(first.items.map((b) => b.id)).to.deep.equal(made.slice(0, 2));
      expect(first).to.deep.include({ total: 5, more: true });
      const second = store.ready({ limit: 2, after: first.items[1].id });
      expect(second.items.map((b) => b.id)).to.deep.equal(made.slice(2, 4));
      expect(second.more).to.equal(true);
      const last = store.ready({ limit: 2, after: second.items[1].id });
      expect(last.items.map((b) => b.id)).to.deep.equal(made.slice(4));
      expect(last).to.deep.include({ total: 5, more: false });
      // A bead of the page that left the queue since (closed, deleted) does not move the position.
      store.delete(made[1]);
      expect(store.ready({ limit: 10, after: made[1] }).items.map((b) => b.id)).to.deep.equal(made.slice(2));
    });

    it('follows every change that can put a bead into ready or take it out', function () {
      const first = store.create({ title: 'first blocker' });
      const second = store.create({ title: 'second blocker' });
      const work = store.create({ title: 'work' });
      const ids = () => store.ready({}).items.map((b) => b.id);
      store.addDependency(work.id, first.id, 'blocks');
      store.addDependency(work.id, second.id, 'waits-for');
      store.update(first.id, { status: 'closed' });
      expect(ids(), 'one blocker still open').to.deep.equal([second.id]);
      store.update(first.id, { status: 'closed', title: 'closed again' });
      store.update(second.id, { status: 'closed' });
      expect(ids(), 'both closed').to.deep.equal([work.id]);
      store.update(first.id, { status: 'in_progress' });
      expect(ids(), 'one reopened').to.deep.equal([]);
      store.delete(first.id);
      expect(ids(), 'the open one deleted').to.deep.equal([work.id]);
      store.update(work.id, { addLabels: ['order-tracking'] });
      expect(ids(), 'bookkeeping').to.deep.equal([]);
      store.update(work.id, { removeLabels: ['order-tracking'], type: 'convoy' });
      expect(ids(), 'a container').to.deep.equal([]);
      store.update(work.id, { type: 'bug' });
      expect(store.ready({ assignee: 'a1' }).items).to.deep.equal([]);
      store.update(work.id, { assignee: 'a1', deferUntil: new Date(Date.now() + 60_000).toISOString() });
      expect(ids(), 'deferred').to.deep.equal([]);
      store.update(work.id, { deferUntil: null });
      expect(store.ready({ assignee: 'a1' }).items.map((b) => b.id)).to.deep.equal([work.id]);
      expect(store.get(work.id)!.is_blocked).to.equal(false);
    });

    it('refuses dependency cycles and dependencies on missing beads', function () {
      const a = store.create({ title: 'a' });
      const b = store.create({ title: 'b' });
      const c = store.create({ title: 'c' });
      store.addDependency(a.id, b.id, 'blocks');
      store.addDependency(b.id, c.id, 'waits-for');
      expect(errorCode(() => store.addDependency(c.id, a.id, 'blocks'))).to.equal('cycle');
      expect(errorCode(() => store.addDependency(a.id, a.id, 'blocks'))).to.equal('cycle');
      expect(errorCode(() => store.addDependency(a.id, 'tc-404', 'blocks'))).to.equal('missing-dependency');
      // A non-ordering edge may point back.
      expect(store.addDependency(c.id, a.id, 'relates-to').dependencies).to.have.length(1);
      expect(store.dependents(b.id).map((x) => x.id)).to.deep.equal([a.id]);
    });

    it('lists newest first with filters, and pages by key without skipping or repeating', function () {
      for (let i = 0; i < 25; i++)
        store.create({ title: `t${i}`, type: i % 2 ? 'bug' : 'task', assignee: i % 3 ? 'ann' : 'bob' });
      const closed = store.create({ title: 'closed' });
      store.update(closed.id, { status: 'closed' });
      expect(store.list({ limit: 100 }).total).to.equal(25);
      expect(store.list({ limit: 100, includeClosed: true }).total).to.equal(26);
      expect(store.list({ limit: 100, status: 'closed' }).items.map((b) => b.id)).to.deep.equal([closed.id]);
      const bugs = store.list({ limit: 100, type: 'bug', assignee: 'bob' }).items;
      expect(bugs.every((b) => b.issue_type === 'bug' && b.assignee === 'bob')).to.equal(true);
      const seen: string[] = [];
      let before: string | undefined;
      for (;;) {
        const page = store.list({ limit: 7, before });
        seen.push(...page.items.map((b) => b.id));
        if (!page.more) break;
        before = page.items.at(-1)!.id;
        store.create({ title: 'arrives while paging' }); // newer: never on a later page
      }
      expect(seen).to.deep.equal(Array.from({ length: 25 }, (_, i) => `tc-${25 - i}`));
    });

    it('lists beads with every label asked, and those created before a time', function () {
      const both = store.create({ title: 'both', labels: ['order-tracking', 'order-run:a'] });
      store.create({ title: 'run label only', labels: ['order-run:a'] });
      store.create({ title: 'tracking only', labels: ['order-tracking'] });
      const later = store.create({ title: 'both, later', labels: ['order-tracking', 'order-run:a'] });
      store.update(both.id, { status: 'closed' });
      const ids = (page: { items: { id: string }[] }) => page.items.map((b) => b.id);
      const runs = { label: 'order-run:a', labels: ['order-tracking'], includeClosed: true, limit: 10 };
      expect(ids(store.list(runs))).to.deep.equal([later.id, both.id]);
      expect(store.list({ ...runs, limit: 0 }).total).to.equal(2);
      expect(ids(store.list({ labels: ['order-run:a', 'order-tracking'], limit: 10 }))).to.deep.equal([later.id]);
      // created_at holds milliseconds: beads made in the same one as `later` go with it.
      const earlier = [both, later].filter((b) => b.created_at < later.created_at).map((b) => b.id);
      expect(ids(store.list({ ...runs, createdBefore: later.created_at }))).to.deep.equal(earlier);
      expect(store.list({ ...runs, createdBefore: later.created_at, limit: 0 }).total).to.equal(earlier.length);
      expect(ids(store.list({ ...runs, createdBefore: '2999-01-01T00:00:00.000Z' }))).to.deep.equal([
        later.id,
        both.id,
      ]);
      expect(ids(store.list({ ...runs, createdBefore: '2000-01-01T00:00:00.000Z' }))).to.deep.equal([]);
    });

    it('deletes a bead with the edges that pointed at it, but for a `tracks` edge', function () {
      const a = store.create({ title: 'a' });
      const b = store.create({ title: 'b' });
      const tracker = store.create({ title: 'tracker', type: 'convoy' });
      store.addDependency(b.id, a.id, 'blocks');
      store.addDependency(tracker.id, a.id, 'tracks');
      store.update(b.id, { parent: a.id });
      const trackerBefore = store.get(tracker.id)!;
      store.delete(a.id);
      expect(store.get(b.id)!.dependencies).to.deep.equal([]);
      // A convoy keeps tracking what was deleted (it counts as not closed); its bead is unchanged.
      expect(store.get(tracker.id)).to.deep.equal(trackerBefore);
      store.close();
      store = backend.open(dir);
      expect(store.get(tracker.id)).to.deep.equal(trackerBefore);
      store.removeDependency(tracker.id, a.id, 'tracks');
      expect(store.get(tracker.id)!.dependencies).to.deep.equal([]);
      expect(store.get(b.id)!.parent).to.equal(undefined);
      expect(store.ready({}).items.map((x) => x.id)).to.deep.equal([b.id]);
      expect(errorCode(() => store.delete(a.id))).to.equal('not-found');
    });

    it('answers an idempotency key with the bead as it was created, across changes, a delete and a reopen', function () {
      const bead = store.create({ title: 'once' }, { key: 'k1', hash: 'h1' });
      expect(store.idempotent('k1')).to.deep.include({ hash: 'h1' });
      expect(store.idempotent('k1')!.bead).to.deep.equal(bead);
      store.update(bead.id, { title: 'changed' });
      store.delete(bead.id);
      expect(store.idempotent('k1')!.bead).to.deep.equal(bead);
      store.close();
      store = backend.open(dir);
      expect(store.idempotent('k1')!.bead.id).to.equal(bead.id);
      expect(store.idempotent('k2')).to.equal(undefined);
    });

    it('keeps every acknowledged change across a reopen, and drops a torn last write', function () {
      const a = store.create({ title: 'a' });
      store.update(a.id, { addLabels: ['l'], metadata: { m: '1' } });
      const b = store.create({ title: 'b' });
      store.addDependency(b.id, a.id, 'blocks');
      store.close();
      if (backend.name === 'journal') appendFileSync(join(dir, 'beads.jsonl'), '{"put":{"id":"tc-3","title":"torn');
      store = backend.open(dir);
      expect(store.size).to.equal(2);
      expect(store.get(a.id)).to.deep.include({ labels: ['l'], metadata: { m: '1' } });
      expect(store.get(b.id)!.is_blocked).to.equal(true);
      expect(store.create({ title: 'c' }).id).to.equal('tc-3');
      store.close();
      store = backend.open(dir);
      expect(store.get('tc-3')!.title).to.equal('c');
    });

    it('keeps comments per bead across a reopen, pages them from the newest, and drops them with their bead', function () {
      const a = store.create({ title: 'a' });
      const b = store.create({ title: 'b' });
      expect(errorCode(() => store.addComment('tc-404', { author: 'ann', text: 'x' }))).to.equal('not-found');
      expect(errorCode(() => store.comments('tc-404', { limit: 10 }))).to.equal('not-found');
      const written = [1, 2, 3, 4, 5].map((i) => store.addComment(a.id, { author: 'ann', text: `note ${i}` }));
      const other = store.addComment(b.id, { author: 'mayor', text: 'on b' });
      expect(written[0]).to.include({ issue_id: a.id, author: 'ann', text: 'note 1' });
      expect(other.id).to.be.above(written[4].id);
      store.close();
      store = backend.open(dir);
      // The newest page first, each page oldest first; `before` walks back without skipping or repeating.
      const newest = store.comments(a.id, { limit: 2 });
      expect(newest.items.map((c) => c.text)).to.deep.equal(['note 4', 'note 5']);
      expect(newest).to.include({ total: 5, more: true });
      const earlier = store.comments(a.id, { limit: 2, before: newest.items[0].id });
      expect(earlier.items.map((c) => c.text)).to.deep.equal(['note 2', 'note 3']);
      const first = store.comments(a.id, { limit: 2, before: earlier.items[0].id });
      expect(first.items.map((c) => c.text)).to.deep.equal(['note 1']);
      expect(first.more).to.equal(false);
      expect(store.comment(a.id, written[2].id)).to.deep.equal(written[2]);
      expect(store.comment(b.id, written[2].id), 'a comment of another bead').to.equal(undefined);
      expect(store.deleteComment(a.id, written[2].id)).to.deep.equal(written[2]);
      expect(errorCode(() => store.deleteComment(a.id, written[2].id))).to.equal('not-found');
      store.delete(b.id);
      store.close();
      store = backend.open(dir);
      expect(store.comments(a.id, { limit: 10 }).items.map((c) => c.text)).to.deep.equal([
        'note 1',
        'note 2',
        'note 4',
        'note 5',
      ]);
      expect(store.comment(b.id, other.id)).to.equal(undefined);
      const again = store.create({ title: 'c' });
      // Ids are never reused, even after deletes and a reopen.
      expect(store.addComment(again.id, { author: 'ann', text: 'later' }).id).to.be.above(other.id);
      if (backend.name === 'journal') (store as JournalBeadStore).maintain();
      store.close();
      store = backend.open(dir);
      expect(store.comments(again.id, { limit: 10 }).items.map((c) => c.text)).to.deep.equal(['later']);
      expect(store.comments(a.id, { limit: 10 }).total).to.equal(4);
    });
  });
}

describe('SQLite bead store versions', function () {
  let dir: string;

  beforeEach(function () {
    dir = tempDir('ctl-beads-');
  });

  afterEach(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it('brings a store from before versioning up to date: blocker counts and work recomputed', function () {
    let store = SqliteBeadStore.open(dir, 'tv');
    const blocker = store.create({ title: 'blocker' });
    const blocked = store.create({ title: 'blocked' });
    store.addDependency(blocked.id, blocker.id, 'blocks');
    const closed = store.create({ title: 'closed dependency' });
    const freed = store.create({ title: 'freed' });
    store.addDependency(freed.id, closed.id, 'blocks');
    store.update(closed.id, { status: 'closed' });
    store.create({ title: 'bookkeeping', labels: ['order-tracking'] });
    store.create({ title: 'a convoy', type: 'convoy' });
    const before = store.ready({});
    store.close();
    // What the first release wrote: the same tables without the derived columns or their indexes.
    const db = new Database(join(dir, 'beads.db'));
    db.exec(
      'drop index beads_ready; drop table comments; alter table beads drop column blockers; alter table beads drop column work',
    );
    db.pragma('user_version = 0');
    db.close();

    store = SqliteBeadStore.open(dir, 'tv');
    expect(store.ready({})).to.deep.equal(before);
    expect(before.items.map((b) => b.id)).to.deep.equal([blocker.id, freed.id]);
    expect(store.get(blocked.id)!.is_blocked).to.equal(true);
    store.update(blocker.id, { status: 'closed' });
    expect(store.ready({}).items.map((b) => b.id)).to.deep.equal([blocked.id, freed.id]);
    // Comments (version 3) have their table.
    expect(store.addComment(blocked.id, { author: 'ann', text: 'migrated' }).id).to.equal(1);
    store.close();
    const reopened = new Database(join(dir, 'beads.db'));
    expect(reopened.pragma('user_version', { simple: true })).to.equal(3);
    reopened.close();
  });

  it('refuses a store written by a newer ctl rather than misread it', function () {
    SqliteBeadStore.open(dir, 'tv').close();
    const db = new Database(join(dir, 'beads.db'));
    db.pragma('user_version = 99');
    db.close();
    expect(() => SqliteBeadStore.open(dir, 'tv')).to.throw(/version 99; this ctl reads up to version 3/);
  });
});

describe('journal bead store compaction', function () {
  it('folds a long journal into a snapshot and keeps the state', function () {
    this.timeout(60_000);
    const dir = tempDir('ctl-beads-');
    try {
      let store = JournalBeadStore.open(dir, 'cx');
      // 15,000 writes over 5,000 beads: the journal is folded once past 10,000 lines, at the third round's first
      // write, so the state read back comes from the snapshot and from the journal written after it.
      for (let i = 0; i < 5_000; i++) store.create({ title: `bead ${i}` });
      for (let i = 1; i <= 5_000; i++) store.update(`cx-${i}`, { status: 'in_progress' });
      for (let i = 1; i <= 5_000; i++) store.update(`cx-${i}`, { status: i % 2 ? 'closed' : 'in_progress' });
      const snapshot = JSON.parse(readFileSync(join(dir, 'beads.snapshot.json'), 'utf8')) as {
        beads: { id: string; status: string }[];
      };
      expect(snapshot.beads).to.have.length(5_000);
      expect(snapshot.beads.find((b) => b.id === 'cx-1')!.status).to.equal('closed');
      expect(snapshot.beads.find((b) => b.id === 'cx-4999')!.status).to.equal('in_progress');
      expect(store.journalSize()).to.be.below(5_000 * 300);
      store.close();
      store = JournalBeadStore.open(dir, 'cx');
      expect(store.size).to.equal(5_000);
      expect(store.get('cx-1')!.status).to.equal('closed');
      expect(store.get('cx-4999')!.status).to.equal('closed');
      expect(store.get('cx-5000')!.status).to.equal('in_progress');
      expect(store.create({ title: 'next' }).id).to.equal('cx-5001');
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
