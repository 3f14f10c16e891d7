import { expect } from 'chai';
import { NOT_WORK_LABELS, NOT_WORK_TYPES } from '../controller/beads/bead-store.js';
import {
  CityApi,
  DEP_KINDS,
  expectProblem,
  idNumber,
  type Bead,
  type BeadCreate,
  type DepKind,
  type Envelope,
  type Message,
} from './helpers/city-api.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// Beads, mail and convoys end to end: a real supervisor, real controllers, every request through the
// supervisor's proxy to `/v0/city/{cityName}/…`. Shapes and rules: api-contract.md §6, §8.2, §8.4, §8.5 and
// work-model.md §1.2, §1.3, §6, §7.

const BLOCKING: DepKind[] = ['blocks', 'waits-for', 'conditional-blocks'];
const NON_BLOCKING: DepKind[] = ['tracks', 'relates-to', 'parent-child'];
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const FUTURE = () => new Date(Date.now() + 24 * 3600_000).toISOString();
const PAST = () => new Date(Date.now() - 3600_000).toISOString();

interface Page<T> {
  items: T[];
  total: number;
  next_cursor?: string;
}

/** `count` creates, `concurrency` in flight at a time; the beads in the order of `make`'s index. */
async function createMany(
  api: CityApi,
  count: number,
  make: (i: number) => BeadCreate,
  concurrency = 32,
): Promise<Bead[]> {
  const out: Bead[] = new Array<Bead>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await api.create(make(i));
      }
    }),
  );
  return out;
}

/** Asserts a list is newest first: ids strictly descending by number, `created_at` never increasing. */
function expectNewestFirst(items: { id: string; created_at: string }[], what: string): void {
  for (let k = 1; k < items.length; k++) {
    const [a, b] = [items[k - 1], items[k]];
    expect(idNumber(a.id), `${what}: ${a.id} before ${b.id}`).to.be.greaterThan(idNumber(b.id));
    expect(Date.parse(a.created_at), `${what}: created_at of ${a.id} ≥ ${b.id}`).to.be.at.least(
      Date.parse(b.created_at),
    );
  }
}

function ids(items: { id: string }[]): string[] {
  return items.map((b) => b.id);
}

/** A page token decoded by the test's own reading of §6.2: `v1:` + base64url JSON. */
function decodeCursor(token: string): Record<string, unknown> {
  expect(token.startsWith('v1:'), token).to.equal(true);
  expect(token.slice(3)).to.match(/^[A-Za-z0-9_-]+$/);
  return JSON.parse(Buffer.from(token.slice(3), 'base64url').toString('utf8')) as Record<string, unknown>;
}

function encodeCursor(value: unknown): string {
  return 'v1:' + Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(30_000);
  let sup: TestSupervisor;
  let api: CityApi;

  before(async function () {
    sup = await TestSupervisor.start();
    await sup.createCity('work-city');
    api = new CityApi(sup, 'work-city');
  });

  after(async function () {
    await sup?.cleanup();
  });

  describe('create and get', function () {
    it('creates a bead: 201, id `wc-<n>` (the prefix of work-city), forced open, type task by default', async function () {
      const reply = await api.post<Bead>('/beads', { title: 'first bead' });
      expect(reply.status).to.equal(201);
      expect(reply.headers.get('content-type')).to.match(/^application\/json/);
      const bead = reply.body;
      expect(bead.id).to.match(/^wc-\d+$/);
      expect(bead.title).to.equal('first bead');
      expect(bead.status).to.equal('open');
      expect(bead.issue_type).to.equal('task');
      expect(bead.created_at).to.match(RFC3339);
      // GET answers with the same bead.
      expect(await api.bead(bead.id)).to.deep.equal(bead);
      // Numbers go up, one create after another.
      const next = await api.create({ title: 'second bead' });
      expect(idNumber(next.id)).to.be.greaterThan(idNumber(bead.id));
    });

    it('keeps every field it was given, the type on output as `issue_type`', async function () {
      const parent = await api.create({ title: 'a parent' });
      const defer = FUTURE();
      const bead = await api.create({
        title: 'full bead',
        type: 'bug',
        description: 'what is wrong',
        priority: 1,
        assignee: 'ann',
        labels: ['red', 'blue'],
        metadata: { owner: 'ops', 'ctl.kind': 'x' },
        parent: parent.id,
        rig: 'frontend',
        defer_until: defer,
      });
      expect(bead.status).to.equal('open');
      expect(bead.issue_type).to.equal('bug');
      expect(bead.description).to.equal('what is wrong');
      expect(bead.priority).to.equal(1);
      expect(bead.assignee).to.equal('ann');
      expect(bead.labels).to.have.members(['red', 'blue']);
      expect(bead.metadata).to.include({ owner: 'ops', 'ctl.kind': 'x' });
      expect(bead.parent).to.equal(parent.id);
      expect(Date.parse(bead.defer_until!)).to.equal(Date.parse(defer));
      expect(await api.bead(bead.id)).to.deep.equal(bead);
      // The rig is what the `rig` filter finds it by.
      expect(ids((await api.list({ rig: 'frontend' })).items)).to.deep.equal([bead.id]);
    });

    it('refuses a bad body with 422 `validation-failed` naming the field in errors[].location, creating nothing', async function () {
      const head = await api.head();
      const cases: [unknown, string][] = [
        [{ title: 'x', bogus: 1 }, 'body.bogus'],
        [{ title: 'x', status: 'closed' }, 'body.status'],
        [{}, 'body.title'],
        [{ title: '' }, 'body.title'],
        [{ title: 'x', priority: 9 }, 'body.priority'],
        [{ title: 'x', priority: 1.5 }, 'body.priority'],
        [{ title: 'x', labels: 'red' }, 'body.labels'],
        [{ title: 'x', defer_until: 'tomorrow' }, 'body.defer_until'],
        [{ title: 'x', parent: 'wc-999999' }, 'body.parent'],
      ];
      for (const [body, location] of cases) {
        const reply = await api.post('/beads', body);
        expectProblem(reply, 422, 'validation-failed', { location });
      }
      const metadata = expectProblem(
        await api.post('/beads', { title: 'x', metadata: { k: 1 } }),
        422,
        'validation-failed',
      );
      expect(
        metadata.errors!.some((e) => e.location.startsWith('body.metadata')),
        JSON.stringify(metadata),
      ).to.equal(true);
      // Nothing was recorded: no bead, no event.
      expect(await api.head()).to.equal(head);
    });

    it('an unparseable body is 400, another content type 415; a city that does not run is 404 `city-not-found`', async function () {
      const head = await api.head();
      const broken = await api.post('/beads', '{"title": ');
      expect(broken.status).to.equal(400);
      expect(broken.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const text = await fetch(api.url('/beads'), {
        method: 'POST',
        headers: { ...CSRF, 'content-type': 'text/plain' },
        body: 'title=x',
      });
      expect(text.status).to.equal(415);
      await text.arrayBuffer();
      expect(await api.head()).to.equal(head);
      const nowhere = new CityApi(sup, 'no-such-city');
      expectProblem(await nowhere.get('/beads'), 404, 'city-not-found', { detail: 'not_found:' });
      expectProblem(await nowhere.post('/beads', { title: 'x' }), 404, 'city-not-found');
    });

    it('needs X-CTL-Request on every bead mutation (403 `csrf:`)', async function () {
      const bead = await api.create({ title: 'csrf target' });
      const noCsrf = { 'X-CTL-Request': '' };
      const calls: [string, string, unknown][] = [
        ['POST', '/beads', { title: 'x' }],
        ['PATCH', `/bead/${bead.id}`, { title: 'y' }],
        ['POST', `/bead/${bead.id}/update`, { title: 'y' }],
        ['POST', `/bead/${bead.id}/close`, undefined],
        ['POST', `/bead/${bead.id}/assign`, { assignee: 'x' }],
        ['DELETE', `/bead/${bead.id}`, undefined],
      ];
      for (const [method, path, body] of calls) {
        const reply = await api.call<{ detail: string }>(method, path, body, noCsrf);
        expect(reply.status, `${method} ${path}`).to.equal(403);
        expect(reply.body.detail).to.match(/^csrf: /);
      }
      expect(await api.bead(bead.id)).to.deep.equal(bead);
    });

    it('404 `bead-not-found` (detail `not_found:`) for every operation on a missing bead', async function () {
      const missing = 'wc-999999';
      const calls: [string, string, unknown][] = [
        ['GET', `/bead/${missing}`, undefined],
        ['PATCH', `/bead/${missing}`, { title: 'x' }],
        ['POST', `/bead/${missing}/update`, { title: 'x' }],
        ['POST', `/bead/${missing}/close`, undefined],
        ['POST', `/bead/${missing}/reopen`, undefined],
        ['POST', `/bead/${missing}/assign`, { assignee: 'x' }],
        ['DELETE', `/bead/${missing}`, undefined],
        ['GET', `/bead/${missing}/deps`, undefined],
        ['POST', `/bead/${missing}/deps`, { depends_on: 'wc-1' }],
        ['GET', `/beads/graph/${missing}`, undefined],
      ];
      for (const [method, path, body] of calls) {
        expectProblem(await api.call(method, path, body), 404, 'bead-not-found', { detail: 'not_found:' });
      }
    });
  });

  describe('update: labels, metadata, parent, status', function () {
    it('appends labels (no duplicates) and removes `remove_labels`, by PATCH and by POST …/update', async function () {
      const bead = await api.create({ title: 'labelled', labels: ['a', 'b'] });
      await api.update(bead.id, { labels: ['c', 'a'] });
      expect((await api.bead(bead.id)).labels).to.have.members(['a', 'b', 'c']);
      expect((await api.bead(bead.id)).labels).to.have.length(3);

      const viaPost = await api.post(`/bead/${bead.id}/update`, { remove_labels: ['b'] });
      expect(viaPost.status).to.equal(200);
      expect(viaPost.body).to.deep.equal({ status: 'ok' });
      expect((await api.bead(bead.id)).labels).to.have.members(['a', 'c']);

      await api.update(bead.id, { labels: ['d'], remove_labels: ['a', 'not-there'] });
      expect((await api.bead(bead.id)).labels).to.have.members(['c', 'd']);
      // An update without labels leaves them alone; the label index follows every change.
      await api.update(bead.id, { title: 'labelled again' });
      expect((await api.bead(bead.id)).labels).to.have.members(['c', 'd']);
      expect(ids((await api.list({ label: 'd' })).items)).to.include(bead.id);
      expect(ids((await api.list({ label: 'a' })).items)).to.not.include(bead.id);
    });

    it('merges metadata; an empty value deletes a key; absent fields stay as they were', async function () {
      const bead = await api.create({
        title: 'meta',
        description: 'keep me',
        priority: 2,
        assignee: 'ann',
        labels: ['keep'],
        metadata: { k1: 'v1', k2: 'v2' },
      });
      await api.update(bead.id, { metadata: { k2: 'changed', k3: 'new' } });
      let now = await api.bead(bead.id);
      expect(now.metadata).to.deep.equal({ k1: 'v1', k2: 'changed', k3: 'new' });
      await api.post(`/bead/${bead.id}/update`, { metadata: { k1: '' } });
      now = await api.bead(bead.id);
      expect(now.metadata).to.deep.equal({ k2: 'changed', k3: 'new' });
      // Fields the update did not name are what they were.
      expect(now).to.include({
        title: 'meta',
        description: 'keep me',
        priority: 2,
        assignee: 'ann',
        status: 'open',
        issue_type: 'task',
      });
      expect(now.labels).to.deep.equal(['keep']);
      expect(now.created_at).to.equal(bead.created_at);
      expect(Date.parse(now.updated_at!)).to.be.at.least(Date.parse(bead.updated_at!));
      // An empty update changes nothing it can see.
      await api.update(bead.id, {});
      expect({ ...(await api.bead(bead.id)), updated_at: undefined }).to.deep.equal({ ...now, updated_at: undefined });
    });

    it('sets and changes `parent`, and clears it with null (and with ""), by PATCH and by POST …/update', async function () {
      const p1 = await api.create({ title: 'parent 1' });
      const p2 = await api.create({ title: 'parent 2' });
      const child = await api.create({ title: 'child' });
      await api.update(child.id, { parent: p1.id });
      expect((await api.bead(child.id)).parent).to.equal(p1.id);
      await api.post(`/bead/${child.id}/update`, { parent: p2.id });
      expect((await api.bead(child.id)).parent).to.equal(p2.id);
      await api.update(child.id, { parent: null });
      expect((await api.bead(child.id)).parent).to.equal(undefined);
      await api.update(child.id, { parent: p1.id });
      expect((await api.post(`/bead/${child.id}/update`, { parent: null })).status).to.equal(200);
      expect((await api.bead(child.id)).parent).to.equal(undefined);
      await api.update(child.id, { parent: p1.id });
      await api.update(child.id, { parent: '' });
      expect((await api.bead(child.id)).parent).to.equal(undefined);
    });

    it('refuses a missing parent, the bead itself, or a parent cycle (422), leaving the bead as it was', async function () {
      const a = await api.create({ title: 'cycle a' });
      const b = await api.create({ title: 'cycle b', parent: a.id });
      const c = await api.create({ title: 'cycle c', parent: b.id });
      expectProblem(await api.patch(`/bead/${a.id}`, { parent: 'wc-999999' }), 422, 'validation-failed', {
        location: 'body.parent',
      });
      expectProblem(await api.patch(`/bead/${a.id}`, { parent: a.id }), 422, 'validation-failed');
      expectProblem(await api.patch(`/bead/${a.id}`, { parent: c.id }), 422, 'validation-failed');
      expect((await api.bead(a.id)).parent).to.equal(undefined);
    });

    it('changes status (in_progress, closed: `bead.closed`), and refuses an unknown one', async function () {
      const bead = await api.create({ title: 'status' });
      await api.update(bead.id, { status: 'in_progress', type: 'chore' });
      expect((await api.bead(bead.id)).status).to.equal('in_progress');
      expect((await api.bead(bead.id)).issue_type).to.equal('chore');
      expect(ids((await api.list({ type: 'chore', status: 'in_progress' })).items)).to.include(bead.id);
      expect(ids((await api.list({ type: 'task' })).items)).to.not.include(bead.id);
      expect(await api.eventsAbout('bead.updated', bead.id)).to.have.length(1);
      await api.post(`/bead/${bead.id}/update`, { status: 'closed' });
      expect((await api.bead(bead.id)).status).to.equal('closed');
      const closed = await api.eventsAbout('bead.closed', bead.id);
      expect(closed).to.have.length(1);
      expect(closed[0].payload).to.deep.equal({ bead: await api.bead(bead.id) });
      expectProblem(await api.patch(`/bead/${bead.id}`, { status: 'done' }), 422, 'validation-failed', {
        location: 'body.status',
      });
      expect((await api.bead(bead.id)).status).to.equal('closed');
    });

    it('refuses a bad update body with 422 naming the field', async function () {
      const bead = await api.create({ title: 'bad updates' });
      const cases: [unknown, string][] = [
        [{ bogus: true }, 'body.bogus'],
        [{ title: '' }, 'body.title'],
        [{ priority: 7 }, 'body.priority'],
        [{ labels: [''] }, 'body.labels'],
        [{ defer_until: 'soon' }, 'body.defer_until'],
      ];
      for (const [body, location] of cases) {
        expectProblem(await api.patch(`/bead/${bead.id}`, body), 422, 'validation-failed', { location });
        expectProblem(await api.post(`/bead/${bead.id}/update`, body), 422, 'validation-failed', { location });
      }
      expect(await api.bead(bead.id)).to.deep.equal(bead);
    });
  });

  describe('close, reopen, assign, delete', function () {
    it('close is idempotent: 200 each time, one `bead.closed`, and the bead leaves the default list', async function () {
      const bead = await api.create({ title: 'to close', labels: ['close-test'] });
      expect(await api.close(bead.id)).to.deep.equal({ status: 'ok' });
      expect(await api.close(bead.id)).to.deep.equal({ status: 'ok' });
      const closed = await api.bead(bead.id);
      expect(closed.status).to.equal('closed');
      const events = await api.eventsAbout('bead.closed', bead.id);
      expect(events).to.have.length(1);
      expect(events[0].payload).to.deep.equal({ bead: closed });
      expect((await api.list({ label: 'close-test' })).items).to.deep.equal([]);
      expect(ids((await api.list({ label: 'close-test', all: true })).items)).to.deep.equal([bead.id]);
    });

    it('reopen returns a closed bead to open; 409 `conflict-wrong-state` for one that is not closed', async function () {
      const bead = await api.create({ title: 'to reopen' });
      expectProblem(await api.post(`/bead/${bead.id}/reopen`), 409, 'conflict-wrong-state', { detail: 'conflict:' });
      await api.update(bead.id, { status: 'in_progress' });
      expectProblem(await api.post(`/bead/${bead.id}/reopen`), 409, 'conflict-wrong-state', { detail: 'conflict:' });
      await api.close(bead.id);
      expect(await api.reopen(bead.id)).to.deep.equal({ status: 'ok' });
      const reopened = await api.bead(bead.id);
      expect(reopened.status).to.equal('open');
      const updates = await api.eventsAbout('bead.updated', bead.id);
      expect(updates.at(-1)!.payload).to.deep.equal({ bead: reopened });
      expect(await api.readyIds()).to.include(bead.id);
    });

    it('assign sets and clears the assignee (`bead.updated`), and the assignee filter follows', async function () {
      const bead = await api.create({ title: 'to assign' });
      const set = await api.post(`/bead/${bead.id}/assign`, { assignee: 'carol' });
      expect(set.status).to.equal(200);
      expect(set.body).to.deep.equal({ id: bead.id, assignee: 'carol' });
      expect((await api.bead(bead.id)).assignee).to.equal('carol');
      expect(ids((await api.list({ assignee: 'carol' })).items)).to.include(bead.id);
      const events = await api.eventsAbout('bead.updated', bead.id);
      expect(events).to.have.length(1);
      expect(events[0].payload).to.deep.equal({ bead: await api.bead(bead.id) });

      await api.post(`/bead/${bead.id}/assign`, { assignee: 'dave' });
      expect(ids((await api.list({ assignee: 'carol' })).items)).to.not.include(bead.id);
      const cleared = await api.post(`/bead/${bead.id}/assign`, { assignee: '' });
      expect(cleared.body).to.deep.equal({ id: bead.id, assignee: '' });
      expect((await api.bead(bead.id)).assignee).to.equal(undefined);
      expectProblem(await api.post(`/bead/${bead.id}/assign`, { who: 'x' }), 422, 'validation-failed', {
        location: 'body.who',
      });
    });

    it('delete removes the bead (`bead.deleted` with its last state), then 404; its edges and child links go too', async function () {
      const bead = await api.create({ title: 'to delete', labels: ['del-test'] });
      const dependent = await api.create({ title: 'depends on the deleted one' });
      const child = await api.create({ title: 'child of the deleted one', parent: bead.id });
      await api.addDep(dependent.id, bead.id, 'blocks');
      expect(await api.readyIds()).to.not.include(dependent.id);
      const last = await api.bead(bead.id);

      const reply = await api.del(`/bead/${bead.id}`);
      expect(reply.status).to.equal(200);
      expect(reply.body).to.deep.equal({ status: 'ok' });
      expectProblem(await api.get(`/bead/${bead.id}`), 404, 'bead-not-found', { detail: 'not_found:' });
      expectProblem(await api.del(`/bead/${bead.id}`), 404, 'bead-not-found');
      expectProblem(await api.post(`/bead/${bead.id}/close`), 404, 'bead-not-found');
      expect((await api.list({ label: 'del-test', all: true })).items).to.deep.equal([]);
      const deleted = await api.eventsAbout('bead.deleted', bead.id);
      expect(deleted).to.have.length(1);
      expect(deleted[0].payload).to.deep.equal({ bead: last });

      // A dependency on a bead that no longer exists must not block forever; a child has no parent left.
      const after = await api.bead(dependent.id);
      expect(after.dependencies).to.deep.equal([]);
      expect(after.is_blocked).to.equal(false);
      expect(await api.readyIds()).to.include(dependent.id);
      expect((await api.bead(child.id)).parent).to.equal(undefined);
      // Those changes are mutations too: each records `bead.updated` with the bead as it is now.
      for (const other of [dependent, child]) {
        const updates = await api.eventsAbout('bead.updated', other.id);
        expect(updates.at(-1)?.payload, other.title).to.deep.equal({ bead: await api.bead(other.id) });
      }
    });
  });

  describe('dependencies', function () {
    it('adds, lists and removes a dependency of each kind; `needs` holds only the blocking ones', async function () {
      const bead = await api.create({ title: 'depends on many' });
      const targets: Record<string, Bead> = {};
      for (const kind of DEP_KINDS) {
        targets[kind] = await api.create({ title: `target of ${kind}` });
        const added = (await api.addDep(bead.id, targets[kind].id, kind)) as Bead;
        expect(added.id).to.equal(bead.id);
        expect(added.dependencies).to.deep.include({ issue_id: bead.id, depends_on_id: targets[kind].id, type: kind });
      }
      const now = await api.bead(bead.id);
      expect(now.dependencies).to.have.deep.members(
        DEP_KINDS.map((kind) => ({ issue_id: bead.id, depends_on_id: targets[kind].id, type: kind })),
      );
      expect(now.needs).to.have.members(BLOCKING.map((k) => targets[k].id));
      expect(now.is_blocked).to.equal(true);

      const deps = await api.get<{ dependencies: unknown[]; depends_on: Bead[]; dependents: Bead[]; children: Bead[] }>(
        `/bead/${bead.id}/deps`,
      );
      expect(deps.status).to.equal(200);
      expect(deps.body.dependencies).to.have.deep.members(now.dependencies!);
      expect(ids(deps.body.depends_on)).to.have.members(DEP_KINDS.map((k) => targets[k].id));
      for (const kind of DEP_KINDS) {
        const other = await api.get<{ dependents: Bead[] }>(`/bead/${targets[kind].id}/deps`);
        expect(ids(other.body.dependents), kind).to.deep.equal([bead.id]);
      }

      // Removing one kind leaves the others.
      for (const kind of DEP_KINDS) {
        const removed = (await api.removeDep(bead.id, targets[kind].id, kind)) as Bead;
        expect(removed.dependencies!.map((d) => d.type)).to.not.include(kind);
      }
      const bare = await api.bead(bead.id);
      expect(bare.dependencies).to.deep.equal([]);
      expect(bare.needs).to.deep.equal([]);
      expect(bare.is_blocked).to.equal(false);
    });

    it('defaults to `blocks`; a second edge of another kind to the same bead is kept apart; removal without a kind removes all', async function () {
      const bead = await api.create({ title: 'two edges' });
      const target = await api.create({ title: 'one target' });
      await api.addDep(bead.id, target.id);
      expect((await api.bead(bead.id)).dependencies).to.deep.equal([
        { issue_id: bead.id, depends_on_id: target.id, type: 'blocks' },
      ]);
      // The same edge again changes nothing.
      await api.addDep(bead.id, target.id, 'blocks');
      await api.addDep(bead.id, target.id, 'relates-to');
      expect((await api.bead(bead.id)).dependencies).to.have.length(2);
      await api.removeDep(bead.id, target.id);
      expect((await api.bead(bead.id)).dependencies).to.deep.equal([]);
    });

    it('lists children (beads whose parent it is) in GET …/deps', async function () {
      const parent = await api.create({ title: 'deps parent' });
      const c1 = await api.create({ title: 'deps child 1', parent: parent.id });
      const c2 = await api.create({ title: 'deps child 2' });
      await api.update(c2.id, { parent: parent.id });
      const deps = await api.get<{ children: Bead[] }>(`/bead/${parent.id}/deps`);
      expect(ids(deps.body.children)).to.have.members([c1.id, c2.id]);
      await api.update(c1.id, { parent: null });
      expect(ids((await api.get<{ children: Bead[] }>(`/bead/${parent.id}/deps`)).body.children)).to.deep.equal([
        c2.id,
      ]);
    });

    it('refuses a dependency cycle with 422: direct, transitive, across blocking kinds, and through parent-child', async function () {
      const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((t) => api.create({ title: `cycle ${t}` })));
      await api.addDep(a.id, b.id, 'blocks');
      await api.addDep(b.id, c.id, 'waits-for');
      const direct = await api.post(`/bead/${b.id}/deps`, { depends_on: a.id, type: 'blocks' });
      expectProblem(direct, 422, 'validation-failed');
      for (const kind of ['blocks', 'waits-for', 'conditional-blocks', 'parent-child'] as const) {
        const transitive = await api.post(`/bead/${c.id}/deps`, { depends_on: a.id, type: kind });
        expectProblem(transitive, 422, 'validation-failed');
      }
      expectProblem(await api.post(`/bead/${a.id}/deps`, { depends_on: a.id }), 422, 'validation-failed');
      // Nothing was added by the refused requests.
      expect((await api.bead(c.id)).dependencies).to.deep.equal([]);
      expect((await api.bead(b.id)).dependencies).to.have.length(1);
    });

    it('refuses a dependency on a missing bead (422), an unknown kind (422), and removing an edge that is not there (404)', async function () {
      const bead = await api.create({ title: 'dep errors' });
      expectProblem(await api.post(`/bead/${bead.id}/deps`, { depends_on: 'wc-999999' }), 422, 'validation-failed', {
        location: 'body.depends_on',
      });
      expectProblem(
        await api.post(`/bead/${bead.id}/deps`, { depends_on: bead.id, type: 'likes' }),
        422,
        'validation-failed',
        {
          location: 'body.type',
        },
      );
      expectProblem(await api.post(`/bead/${bead.id}/deps`, {}), 422, 'validation-failed', {
        location: 'body.depends_on',
      });
      const other = await api.create({ title: 'not a dependency' });
      expectProblem(await api.del(`/bead/${bead.id}/deps/${other.id}`), 404, 'bead-not-found');
      await api.addDep(bead.id, other.id, 'tracks');
      expectProblem(await api.del(`/bead/${bead.id}/deps/${other.id}?type=blocks`), 404, 'bead-not-found');
      expectProblem(await api.del(`/bead/${bead.id}/deps/${other.id}?type=likes`), 422, 'validation-failed', {
        location: 'query.type',
      });
      await api.removeDep(bead.id, other.id, 'tracks');
      expect((await api.bead(bead.id)).dependencies).to.deep.equal([]);
    });
  });

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

  describe('graph from a root', function () {
    it('holds the root, its parent closure, the `ctl.root_bead_id` members and their children, with the edges among them', async function () {
      const root = await api.create({ title: 'graph root', type: 'epic' });
      const child = await api.create({ title: 'graph child', parent: root.id });
      const grandchild = await api.create({ title: 'graph grandchild', parent: child.id });
      const member = await api.create({ title: 'graph member', metadata: { 'ctl.root_bead_id': root.id } });
      const memberChild = await api.create({ title: 'graph member child', parent: member.id });
      const outsider = await api.create({ title: 'graph outsider' });
      await api.addDep(grandchild.id, member.id, 'waits-for');
      await api.addDep(child.id, outsider.id, 'blocks');
      await api.close(grandchild.id);

      const reply = await api.get<{
        root: Bead;
        beads: Bead[];
        deps: { from: string; to: string; kind?: string }[];
        membership: string;
      }>(`/beads/graph/${root.id}`);
      expect(reply.status).to.equal(200);
      const graph = reply.body;
      expect(graph.root).to.deep.equal(await api.bead(root.id));
      expect(ids(graph.beads)).to.have.members([root.id, child.id, grandchild.id, member.id, memberChild.id]);
      expect(graph.membership).to.equal('direct-root-id+parent-closure');
      expect(graph.deps).to.have.deep.members([
        { from: child.id, to: root.id, kind: 'parent-child' },
        { from: grandchild.id, to: child.id, kind: 'parent-child' },
        { from: memberChild.id, to: member.id, kind: 'parent-child' },
        { from: grandchild.id, to: member.id, kind: 'waits-for' },
      ]);
      // A bead whose root metadata names another root is not a member.
      const elsewhere = await api.create({ title: 'other root member', metadata: { 'ctl.root_bead_id': child.id } });
      const again = await api.get<{ beads: Bead[] }>(`/beads/graph/${root.id}`);
      expect(ids(again.body.beads)).to.not.include(elsewhere.id);
    });

    it('from a convoy: its tracked members (and their children) too', async function () {
      const a = await api.create({ title: 'convoy graph a' });
      const b = await api.create({ title: 'convoy graph b' });
      const bChild = await api.create({ title: 'convoy graph b child', parent: b.id });
      const convoy = (await api.post<Bead>('/convoys', { title: 'graph convoy', items: [a.id, b.id] })).body;
      const graph = await api.get<{
        beads: Bead[];
        deps: { from: string; to: string; kind?: string }[];
        membership: string;
      }>(`/beads/graph/${convoy.id}`);
      expect(graph.status).to.equal(200);
      expect(ids(graph.body.beads)).to.have.members([convoy.id, a.id, b.id, bChild.id]);
      expect(graph.body.membership).to.equal('direct-root-id+parent-closure+convoy-members');
      expect(graph.body.deps).to.deep.include({ from: convoy.id, to: a.id, kind: 'tracks' });
      expect(graph.body.deps).to.deep.include({ from: convoy.id, to: b.id, kind: 'tracks' });
      expect(graph.body.deps).to.deep.include({ from: bChild.id, to: b.id, kind: 'parent-child' });
    });
  });

  describe('lists: filters', function () {
    let list: CityApi;
    const seeded: Record<string, Bead> = {};

    before(async function () {
      await sup.createCity('list-city');
      list = new CityApi(sup, 'list-city');
      seeded.a1 = await list.create({ title: 'a1', labels: ['red'], assignee: 'ann', rig: 'r1' });
      seeded.a2 = await list.create({ title: 'a2', type: 'bug', labels: ['red', 'blue'], assignee: 'bob' });
      seeded.a3 = await list.create({ title: 'a3', type: 'bug', labels: ['blue'], assignee: 'ann', rig: 'r2' });
      seeded.a4 = await list.create({ title: 'a4', type: 'feature', labels: ['red'], assignee: 'ann', rig: 'r1' });
      seeded.a5 = await list.create({ title: 'a5' });
      await list.update(seeded.a3.id, { status: 'in_progress' });
      await list.close(seeded.a4.id);
      await list.close(seeded.a5.id);
    });

    const cases: [string, Record<string, string | boolean>, string[]][] = [
      ['default: open and in progress', {}, ['a3', 'a2', 'a1']],
      ['all: closed too', { all: true }, ['a5', 'a4', 'a3', 'a2', 'a1']],
      ['status=open', { status: 'open' }, ['a2', 'a1']],
      ['status=in_progress', { status: 'in_progress' }, ['a3']],
      ['status=closed', { status: 'closed' }, ['a5', 'a4']],
      ['type=bug', { type: 'bug' }, ['a3', 'a2']],
      ['type=feature (closed, so not by default)', { type: 'feature' }, []],
      ['type=feature&all', { type: 'feature', all: true }, ['a4']],
      ['label=red', { label: 'red' }, ['a2', 'a1']],
      ['label=red&all', { label: 'red', all: true }, ['a4', 'a2', 'a1']],
      ['assignee=ann', { assignee: 'ann' }, ['a3', 'a1']],
      ['assignee=ann&all', { assignee: 'ann', all: true }, ['a4', 'a3', 'a1']],
      ['rig=r1', { rig: 'r1' }, ['a1']],
      ['rig=r1&all', { rig: 'r1', all: true }, ['a4', 'a1']],
      ['label=blue&assignee=ann', { label: 'blue', assignee: 'ann' }, ['a3']],
      ['type=bug&label=red&status=open', { type: 'bug', label: 'red', status: 'open' }, ['a2']],
      ['no match', { label: 'green' }, []],
      ['labels match exactly, not by prefix', { label: 're' }, []],
    ];
    for (const [name, query, expected] of cases) {
      it(`${name}: newest first, total = matches`, async function () {
        const page = await list.list(query);
        expect(page.items.map((b) => b.title)).to.deep.equal(expected);
        expect(page.total).to.equal(expected.length);
        expect(page.next_cursor).to.equal(undefined);
        expectNewestFirst(page.items, name);
        for (const bead of page.items) expect(bead).to.deep.equal(await list.bead(bead.id));
      });
    }

    it('`limit` is 1–1000 (0 means the default); anything else is 422 on query.limit', async function () {
      expect((await list.list({ limit: 1000, all: true })).items).to.have.length(5);
      expect((await list.list({ limit: 0, all: true })).items).to.have.length(5);
      for (const limit of ['1001', '-1', 'x', '2.5']) {
        expectProblem(await list.get(`/beads?limit=${limit}`), 422, 'validation-failed', { location: 'query.limit' });
      }
    });

    it('a cursor the server did not issue is 400 `invalid-cursor`', async function () {
      const bad = [
        'zzz',
        'v2:' + Buffer.from('{"k":"cb","ca":"2026-01-01T00:00:00Z","id":"lc-1"}').toString('base64url'),
        'v1:!!!',
        'v1:' + Buffer.from('not json').toString('base64url'),
        encodeCursor({ k: 'sq', s: 5 }),
        encodeCursor({ k: 'cb', ca: '2026-01-01T00:00:00Z' }),
        encodeCursor({ k: 'cb', ca: '2026-01-01T00:00:00Z', id: '' }),
      ];
      for (const cursor of bad) {
        expectProblem(await list.get(`/beads?cursor=${encodeURIComponent(cursor)}`), 400, 'invalid-cursor');
      }
    });
  });

  describe('lists: keyset pagination while beads are being created', function () {
    let pages: CityApi;
    let seeded: Bead[];
    const closedIds = new Set<string>();
    /** Every bead this city holds: the seeded ones and those created while an earlier test paged. */
    const known: string[] = [];

    before(async function () {
      this.timeout(60_000);
      await sup.createCity('page-city');
      pages = new CityApi(sup, 'page-city');
      seeded = await createMany(pages, 600, (i) => ({ title: `seed ${i}`, labels: ['seed'] }));
      const toClose = seeded.filter((_, i) => i % 6 === 0);
      await Promise.all(toClose.map((b) => pages.close(b.id)));
      for (const b of toClose) closedIds.add(b.id);
      known.push(...ids(seeded));
    });

    const variants: [string, Record<string, string | number | boolean>, (id: string) => boolean][] = [
      ['the default list, limit 37', { limit: 37 }, (id) => !closedIds.has(id)],
      ['all=true, limit 50', { all: true, limit: 50 }, () => true],
      ['label=seed, limit 100', { label: 'seed', limit: 100 }, (id) => !closedIds.has(id)],
      ['status=closed, limit 7', { status: 'closed', limit: 7 }, (id) => closedIds.has(id)],
      ['status=closed, limit 1', { status: 'closed', limit: 1 }, (id) => closedIds.has(id)],
    ];
    for (const [name, query, existed] of variants) {
      it(`${name}: every bead that existed at the start exactly once, newest first`, async function () {
        this.timeout(60_000);
        const expected = new Set(known.filter(existed));
        const createdDuring = new Set<string>();
        let acked = 0;
        let stop = false;
        const creators = Array.from({ length: 8 }, async () => {
          while (!stop) {
            const bead = await pages.create({ title: 'created while paging', labels: ['seed'] });
            createdDuring.add(bead.id);
            acked++;
          }
        });
        const seen: Bead[] = [];
        let pagesRead = 0;
        try {
          let cursor: string | undefined;
          do {
            // At least one create lands between any two pages.
            const before = acked;
            await waitUntil('a create between two pages', () => acked > before);
            const page = await pages.list({ ...query, ...(cursor ? { cursor } : {}) });
            pagesRead++;
            expect(page.items.length).to.be.at.most(Number(query.limit));
            expect(page.total).to.be.at.least(page.items.length);
            if (page.next_cursor) {
              expect(page.items).to.have.length(Number(query.limit));
              const token = decodeCursor(page.next_cursor);
              const last = page.items.at(-1)!;
              expect(token).to.deep.equal({ k: 'cb', ca: last.created_at, id: last.id });
            }
            seen.push(...page.items);
            cursor = page.next_cursor;
          } while (cursor && pagesRead < 2000);
        } finally {
          stop = true;
          await Promise.all(creators);
          known.push(...createdDuring);
        }
        const seenIds = ids(seen);
        const repeated = seenIds.filter((id, k) => seenIds.indexOf(id) !== k);
        expect(repeated, 'repeated beads').to.deep.equal([]);
        const seenSet = new Set(seenIds);
        const skipped = [...expected].filter((id) => !seenSet.has(id));
        expect(skipped.length, `skipped beads (${skipped.slice(0, 10).join(' ')} …)`).to.equal(0);
        const strangers = seenIds.filter((id) => !expected.has(id) && !createdDuring.has(id));
        expect(strangers.length, `beads the query should not list (${strangers.slice(0, 10).join(' ')} …)`).to.equal(0);
        expectNewestFirst(seen, name);
        expect(createdDuring.size, 'beads created while paging').to.be.at.least(pagesRead);
      });
    }

    it('a page after the last holds nothing and has no next_cursor', async function () {
      const oldest = seeded[0];
      const page = await pages.list({
        all: true,
        cursor: encodeCursor({ k: 'cb', ca: oldest.created_at, id: oldest.id }),
      });
      expect(page.items).to.deep.equal([]);
      expect(page.next_cursor).to.equal(undefined);
    });
  });

  describe('blocking lists (`index`, `wait`)', function () {
    it('GET …/beads with index = X-CTL-Index waits for the next change, then lists the new bead with a newer index', async function () {
      const first = await api.list({ label: 'blocking-test' });
      expect(first.items).to.deep.equal([]);
      expect(first.index).to.be.a('number').and.be.at.least(1);
      let settled = false;
      const blocked = api.list({ label: 'blocking-test', index: first.index, wait: '30s' }).finally(() => {
        settled = true;
      });
      // A later request over the same path has been answered: the blocking list, sent before it, waits at the
      // controller by now.
      expect((await api.list({ label: 'blocking-test' })).items).to.deep.equal([]);
      expect(settled, 'the blocking list answered before anything changed').to.equal(false);
      const bead = await api.create({ title: 'wakes the list', labels: ['blocking-test'] });
      const page = await blocked;
      expect(ids(page.items)).to.deep.equal([bead.id]);
      expect(page.index).to.be.greaterThan(first.index);
    });

    it('GET …/beads/ready with index waits too, and sees the bead that became ready', async function () {
      const blocker = await api.create({ title: 'ready-wait blocker' });
      const bead = await api.create({ title: 'ready-wait bead', assignee: 'hank' });
      await api.addDep(bead.id, blocker.id);
      const start = await api.get<Page<Bead>>('/beads/ready?assignee=hank');
      expect(ids(start.body.items)).to.deep.equal([]);
      const index = Number(start.headers.get('x-ctl-index'));
      const blocked = api.get<Page<Bead>>(`/beads/ready?assignee=hank&index=${index}&wait=30s`);
      await api.close(blocker.id);
      const reply = await blocked;
      expect(reply.status).to.equal(200);
      expect(ids(reply.body.items)).to.deep.equal([bead.id]);
      expect(Number(reply.headers.get('x-ctl-index'))).to.be.greaterThan(index);
    });

    it('GET …/mail and …/convoys are blocking queries too', async function () {
      const mail = await api.get<Page<Message>>('/mail?agent=wendy');
      expect(mail.body.items).to.deep.equal([]);
      const mailIndex = Number(mail.headers.get('x-ctl-index'));
      expect(mailIndex).to.be.at.least(1);
      const mailWait = api.get<Page<Message>>(`/mail?agent=wendy&index=${mailIndex}&wait=30s`);
      const sent = await api.post<Message>('/mail', { to: 'wendy', subject: 'wake up' });
      const woken = await mailWait;
      expect(woken.status).to.equal(200);
      expect(ids(woken.body.items)).to.deep.equal([sent.body.id]);
      expect(Number(woken.headers.get('x-ctl-index'))).to.be.greaterThan(mailIndex);

      const convoys = await api.get<Page<Bead>>('/convoys?limit=1');
      const convoyIndex = Number(convoys.headers.get('x-ctl-index'));
      expect(convoyIndex).to.be.at.least(1);
      const convoyWait = api.get<Page<Bead>>(`/convoys?limit=1&index=${convoyIndex}&wait=30s`);
      const convoy = await api.post<Bead>('/convoys', { title: 'wakes the convoy list' });
      const listed = await convoyWait;
      expect(ids(listed.body.items)).to.deep.equal([convoy.body.id]);
      expect(Number(listed.headers.get('x-ctl-index'))).to.be.greaterThan(convoyIndex);
    });

    it('without a change it answers after `wait` with the same index; index is ignored when already passed', async function () {
      const now = await api.list({ limit: 1 });
      const waited = await api.list({ limit: 1, index: now.index, wait: '200ms' });
      expect(waited.index).to.equal(now.index);
      const passed = await api.list({ limit: 1, index: 0 });
      expect(passed.index).to.equal(now.index);
    });

    it('refuses a bad index or wait with 422', async function () {
      expectProblem(await api.get('/beads?index=-1'), 422, 'validation-failed', { location: 'query.index' });
      expectProblem(await api.get('/beads?index=x'), 422, 'validation-failed', { location: 'query.index' });
      for (const wait of ['abc', '0s', '-5s']) {
        expectProblem(await api.get(`/beads?index=0&wait=${wait}`), 422, 'validation-failed', {
          location: 'query.wait',
        });
      }
    });
  });

  describe('Idempotency-Key on create', function () {
    it('the same key and body answer with the same bead (201), recorded once', async function () {
      const key = `idem-${Date.now()}`;
      const body = { title: 'idempotent', labels: ['idem'], metadata: { a: '1', b: '2' } };
      const first = await api.post<Bead>('/beads', body, { 'Idempotency-Key': key });
      expect(first.status).to.equal(201);
      const again = await api.post<Bead>('/beads', body, { 'Idempotency-Key': key });
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      // The same JSON with its keys in another order is the same body.
      const reordered = await api.post<Bead>(
        '/beads',
        { metadata: { b: '2', a: '1' }, labels: ['idem'], title: 'idempotent' },
        { 'Idempotency-Key': key },
      );
      expect(reordered.status).to.equal(201);
      expect(reordered.body.id).to.equal(first.body.id);
      expect(await api.eventsAbout('bead.created', first.body.id)).to.have.length(1);
      expect((await api.list({ label: 'idem' })).items).to.have.length(1);
      // Another key is another bead.
      const other = await api.post<Bead>('/beads', body, { 'Idempotency-Key': `${key}-other` });
      expect(other.body.id).to.not.equal(first.body.id);
    });

    it('the same key with another body is 422 `idempotency-mismatch`, creating nothing', async function () {
      const key = `mismatch-${Date.now()}`;
      const first = await api.post<Bead>('/beads', { title: 'one body' }, { 'Idempotency-Key': key });
      expect(first.status).to.equal(201);
      const head = await api.head();
      const other = await api.post('/beads', { title: 'another body' }, { 'Idempotency-Key': key });
      expectProblem(other, 422, 'idempotency-mismatch', { detail: 'idempotency_mismatch:' });
      expect(await api.head()).to.equal(head);
    });

    it('a create that failed does not use up its key', async function () {
      const key = `failed-${Date.now()}`;
      expectProblem(
        await api.post('/beads', { title: 'bad parent', parent: 'wc-999999' }, { 'Idempotency-Key': key }),
        422,
        'validation-failed',
      );
      const retry = await api.post<Bead>('/beads', { title: 'good now' }, { 'Idempotency-Key': key });
      expect(retry.status).to.equal(201);
      expect(retry.body.title).to.equal('good now');
    });

    it('concurrent repeats of one keyed create make one bead', async function () {
      const key = `concurrent-${Date.now()}`;
      const body = { title: 'concurrent idempotent', labels: ['idem-concurrent'] };
      const replies = await Promise.all(
        Array.from({ length: 16 }, () => api.post<Bead>('/beads', body, { 'Idempotency-Key': key })),
      );
      const created = replies.filter((r) => r.status === 201);
      expect(created.length).to.be.at.least(1);
      // A repeat arriving while the first runs may be told so (409 `idempotency-in-flight`), never a second bead.
      for (const r of replies.filter((r) => r.status !== 201)) expectProblem(r, 409, 'idempotency-in-flight');
      expect(new Set(created.map((r) => r.body.id)).size).to.equal(1);
      expect((await api.list({ label: 'idem-concurrent' })).items).to.have.length(1);
      expect(await api.eventsAbout('bead.created', created[0].body.id)).to.have.length(1);
    });

    it('a replay answers with the original response, even after the bead has changed (§6.3)', async function () {
      const key = `replay-${Date.now()}`;
      const body = { title: 'replayed' };
      const first = await api.post<Bead>('/beads', body, { 'Idempotency-Key': key });
      await api.update(first.body.id, { labels: ['changed-later'], status: 'in_progress' });
      const again = await api.post<Bead>('/beads', body, { 'Idempotency-Key': key });
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
    });

    it('a replay after the bead was deleted creates no second bead (§6.3)', async function () {
      const key = `deleted-${Date.now()}`;
      const body = { title: 'keyed then deleted', labels: ['idem-deleted'] };
      const first = await api.post<Bead>('/beads', body, { 'Idempotency-Key': key });
      expect((await api.del(`/bead/${first.body.id}`)).status).to.equal(200);
      const again = await api.post<Bead>('/beads', body, { 'Idempotency-Key': key });
      expect(again.status).to.equal(201);
      expect(again.body.id).to.equal(first.body.id);
      expect((await api.list({ label: 'idem-deleted', all: true })).items).to.deep.equal([]);
    });

    it('keys are per endpoint: one key on POST …/beads, …/mail and …/convoys makes one of each (§6.3)', async function () {
      const key = `per-endpoint-${Date.now()}`;
      const bead = await api.post<Bead>('/beads', { title: 'keyed bead' }, { 'Idempotency-Key': key });
      expect(bead.status).to.equal(201);
      const mail = await api.post<Message>('/mail', { to: 'ivy', subject: 'keyed mail' }, { 'Idempotency-Key': key });
      expect(mail.status, JSON.stringify(mail.body)).to.equal(201);
      expect(mail.body.subject).to.equal('keyed mail');
      const convoy = await api.post<Bead>('/convoys', { title: 'keyed convoy' }, { 'Idempotency-Key': key });
      expect(convoy.status, JSON.stringify(convoy.body)).to.equal(201);
      expect(convoy.body.issue_type).to.equal('convoy');
      expect(new Set([bead.body.id, mail.body.id, convoy.body.id]).size).to.equal(3);
    });
  });

  describe('events: every mutation records `bead.*` with payload {bead}', function () {
    let ev: CityApi;

    before(async function () {
      await sup.createCity('event-city');
      ev = new CityApi(sup, 'event-city');
    });

    /** The newest event of the city (no other writer runs here). */
    async function latest(): Promise<Envelope> {
      const reply = await ev.get<{ items: Envelope[] }>('/events?limit=1');
      return reply.body.items[0];
    }

    it('create, PATCH, POST update, assign, deps, close, reopen and delete each record their event', async function () {
      const target = await ev.create({ title: 'event target' });
      const bead = await ev.create({ title: 'event bead', type: 'bug', labels: ['x'] });
      let event = await latest();
      expect(event).to.include({ type: 'bead.created', subject: bead.id, actor: 'api' });
      expect(event.payload).to.deep.equal({ bead });

      const steps: [string, () => Promise<unknown>, string][] = [
        ['PATCH', () => ev.update(bead.id, { title: 'renamed', metadata: { m: '1' } }), 'bead.updated'],
        ['POST update', () => ev.post(`/bead/${bead.id}/update`, { remove_labels: ['x'] }), 'bead.updated'],
        ['assign', () => ev.post(`/bead/${bead.id}/assign`, { assignee: 'joe' }), 'bead.updated'],
        ['dep add', () => ev.addDep(bead.id, target.id, 'waits-for'), 'bead.updated'],
        ['dep remove', () => ev.removeDep(bead.id, target.id, 'waits-for'), 'bead.updated'],
        ['close', () => ev.close(bead.id), 'bead.closed'],
        ['reopen', () => ev.reopen(bead.id), 'bead.updated'],
        ['status closed', () => ev.update(bead.id, { status: 'closed' }), 'bead.closed'],
      ];
      for (const [name, step, type] of steps) {
        const head = await ev.head();
        await step();
        event = await latest();
        expect(event.seq, name).to.equal(head + 1);
        expect(event.type, name).to.equal(type);
        expect(event.subject, name).to.equal(bead.id);
        expect(event.payload, name).to.deep.equal({ bead: await ev.bead(bead.id) });
      }
      const last = await ev.bead(bead.id);
      await ev.del(`/bead/${bead.id}`);
      event = await latest();
      expect(event).to.include({ type: 'bead.deleted', subject: bead.id });
      expect(event.payload).to.deep.equal({ bead: last });

      // The type filter of the list finds them.
      const created = await ev.events('bead.created');
      expect(created.map((e) => e.subject)).to.deep.equal([target.id, bead.id]);
      expect(created.every((e) => e.type === 'bead.created')).to.equal(true);
      expect((await ev.events('bead.deleted')).map((e) => e.subject)).to.deep.equal([bead.id]);
    });

    it('`ctl events --city NAME --payload-match bead.issue_type=bug` prints exactly the bug beads’ events', async function () {
      const bugs = await createMany(ev, 4, (i) => ({ title: `bug ${i}`, type: 'bug' }), 1);
      const tasks = await createMany(ev, 3, (i) => ({ title: `task ${i}` }), 1);
      await ev.update(bugs[0].id, { priority: 0 });
      await ev.close(bugs[1].id);
      await ev.update(tasks[0].id, { type: 'bug' }); // a task that became a bug: its later events match
      await ev.close(tasks[1].id);
      await ev.post('/mail', { to: 'kim', subject: 'mail is not a bug' });

      const expected = (await ev.events())
        .filter((e) => e.type.startsWith('bead.'))
        .filter((e) => (e.payload.bead as Bead | undefined)?.issue_type === 'bug')
        .map((e) => e.seq);
      expect(expected.length).to.be.at.least(8);

      const out = await sup.ctl(['events', '--city', 'event-city', '--payload-match', 'bead.issue_type=bug']);
      expect(out.code, out.stderr).to.equal(0);
      const lines = out.stdout.split('\n').filter((l) => l !== '');
      const printed = lines.map((l) => JSON.parse(l) as Envelope);
      expect(printed.map((e) => e.seq)).to.deep.equal(expected);
      for (const e of printed) expect((e.payload.bead as Bead).issue_type).to.equal('bug');

      const closedBugs = await sup.ctl([
        'events',
        '--city',
        'event-city',
        '--type',
        'bead.closed',
        '--payload-match',
        'bead.issue_type=bug',
      ]);
      expect(closedBugs.code, closedBugs.stderr).to.equal(0);
      const closedSubjects = closedBugs.stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as Envelope).subject);
      expect(closedSubjects).to.include(bugs[1].id);
      expect(closedSubjects).to.not.include(tasks[1].id);
    });
  });

  describe('mail', function () {
    /** Sends through the typed client; 201 expected. */
    async function send(body: { to: string; subject: string; body?: string; from?: string; rig?: string }) {
      const { data, error, response } = await sup.api.POST('/v0/city/{cityName}/mail', {
        params: { path: { cityName: 'work-city' }, header: CSRF },
        body,
      });
      if (response.status !== 201 || !data) throw new Error(`send ${response.status}: ${JSON.stringify(error)}`);
      return data;
    }

    async function inbox(query: string): Promise<Page<Message>> {
      const reply = await api.get<Page<Message>>(`/mail?${query}`);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body;
    }

    async function message(id: string): Promise<Message> {
      const reply = await api.get<Message>(`/mail/${id}`);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body;
    }

    /** The mail.* events about a message, checking each payload is {rig, message}. */
    async function mailEvents(type: string, id: string): Promise<Envelope[]> {
      const events = await api.eventsAbout(type, id);
      for (const e of events) {
        expect(Object.keys(e.payload).sort(), type).to.deep.equal(['message', 'rig']);
        const msg = e.payload.message as Message;
        expect(msg.id).to.equal(id);
        expect(e.payload.rig).to.equal(msg.rig ?? '');
      }
      return events;
    }

    it('send: 201 Message stored as a `message` bead; `from` defaults to human; `mail.sent` with {rig, message}', async function () {
      const reply = await api.post<Message>('/mail', {
        to: 'lena',
        subject: 'Hello',
        body: 'first line\nsecond',
        from: 'mayor',
      });
      expect(reply.status).to.equal(201);
      const msg = reply.body;
      expect(msg).to.include({ from: 'mayor', to: 'lena', subject: 'Hello', body: 'first line\nsecond', read: false });
      expect(msg.id).to.match(/^wc-\d+$/);
      expect(msg.created_at).to.match(RFC3339);
      expect(msg.thread_id).to.be.a('string').and.not.equal('');
      expect(msg.reply_to).to.equal(undefined);
      expect(await message(msg.id)).to.deep.equal(msg);
      const bead = await api.bead(msg.id);
      expect(bead.issue_type).to.equal('message');
      expect(bead.status).to.equal('open');
      const sent = await mailEvents('mail.sent', msg.id);
      expect(sent).to.have.length(1);
      expect(sent[0].payload).to.deep.equal({ rig: '', message: msg });

      const human = await send({ to: 'lena', subject: 'From nobody in particular' });
      expect(human.from).to.equal('human');
      // Each send starts a thread of its own.
      expect(human.thread_id).to.not.equal(msg.thread_id);

      const rigged = await send({ to: 'lena', subject: 'rig mail', rig: 'backend' });
      expect(rigged.rig).to.equal('backend');
      const rigSent = await mailEvents('mail.sent', rigged.id);
      expect(rigSent[0].payload).to.deep.equal({ rig: 'backend', message: rigged });
      expect(ids((await inbox('agent=lena&rig=backend')).items)).to.deep.equal([rigged.id]);
    });

    it('send and reply with an Idempotency-Key: a repeat is the same message, sent once; another body is 422', async function () {
      const key = `mail-key-${Date.now()}`;
      const body = { to: 'vera', subject: 'only once' };
      const first = await api.post<Message>('/mail', body, { 'Idempotency-Key': key });
      expect(first.status).to.equal(201);
      const again = await api.post<Message>('/mail', body, { 'Idempotency-Key': key });
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expect(await mailEvents('mail.sent', first.body.id)).to.have.length(1);
      expect((await inbox('agent=vera')).items).to.have.length(1);
      expectProblem(
        await api.post('/mail', { ...body, subject: 'twice?' }, { 'Idempotency-Key': key }),
        422,
        'idempotency-mismatch',
      );

      const replyKey = `reply-key-${Date.now()}`;
      const r1 = await api.post<Message>(
        `/mail/${first.body.id}/reply`,
        { body: 'ok' },
        { 'Idempotency-Key': replyKey },
      );
      const r2 = await api.post<Message>(
        `/mail/${first.body.id}/reply`,
        { body: 'ok' },
        { 'Idempotency-Key': replyKey },
      );
      expect(r1.status).to.equal(201);
      expect(r2.status).to.equal(201);
      expect(r2.body.id).to.equal(r1.body.id);
      expect(await mailEvents('mail.replied', r1.body.id)).to.have.length(1);
      expect(ids((await api.get<Page<Message>>(`/mail/thread/${first.body.id}`)).body.items)).to.deep.equal([
        first.body.id,
        r1.body.id,
      ]);
    });

    it('refuses a bad send body with 422', async function () {
      const cases: [unknown, string][] = [
        [{ subject: 'no recipient' }, 'body.to'],
        [{ to: '', subject: 'empty recipient' }, 'body.to'],
        [{ to: 'x' }, 'body.subject'],
        [{ to: 'x', subject: 'y', cc: ['z'] }, 'body.cc'],
      ];
      for (const [body, location] of cases) {
        expectProblem(await api.post('/mail', body), 422, 'validation-failed', { location });
      }
      expectProblem(await api.get('/mail?status=bogus'), 422, 'validation-failed', { location: 'query.status' });
    });

    it('inbox per recipient (unread by default, `status=all`), count, get without side effects, read and mark-unread', async function () {
      const m1 = await send({ to: 'mia', subject: 'one', from: 'ned' });
      const m2 = await send({ to: 'mia', subject: 'two', from: 'ned' });
      const other = await send({ to: 'olga', subject: 'not for mia' });
      let box = await inbox('agent=mia');
      expect(ids(box.items)).to.deep.equal([m2.id, m1.id]);
      expect(box.total).to.equal(2);
      expect(ids((await inbox('agent=olga')).items)).to.deep.equal([other.id]);
      expect(ids((await inbox('')).items)).to.include.members([m1.id, m2.id, other.id]);
      expect((await api.get('/mail/count?agent=mia')).body).to.deep.equal({ total: 2, unread: 2 });

      // Reading a message through GET does not mark it read.
      expect((await message(m1.id)).read).to.equal(false);

      const read = await api.post(`/mail/${m1.id}/read`);
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.equal({ status: 'read' });
      expect((await message(m1.id)).read).to.equal(true);
      box = await inbox('agent=mia');
      expect(ids(box.items)).to.deep.equal([m2.id]);
      expect(ids((await inbox('agent=mia&status=unread')).items)).to.deep.equal([m2.id]);
      const all = await inbox('agent=mia&status=all');
      expect(ids(all.items)).to.deep.equal([m2.id, m1.id]);
      expect(all.items[1].read).to.equal(true);
      expect((await api.get('/mail/count?agent=mia')).body).to.deep.equal({ total: 2, unread: 1 });
      const readEvents = await mailEvents('mail.read', m1.id);
      expect(readEvents).to.have.length(1);
      expect((readEvents[0].payload.message as Message).read).to.equal(true);

      const unread = await api.post(`/mail/${m1.id}/mark-unread`);
      expect(unread.body).to.deep.equal({ status: 'unread' });
      expect((await message(m1.id)).read).to.equal(false);
      expect(ids((await inbox('agent=mia')).items)).to.deep.equal([m2.id, m1.id]);
      expect((await api.get('/mail/count?agent=mia')).body).to.deep.equal({ total: 2, unread: 2 });
      const unreadEvents = await mailEvents('mail.marked_unread', m1.id);
      expect(unreadEvents).to.have.length(1);
      expect(unreadEvents[0].payload.message).to.deep.equal(await message(m1.id));
    });

    it('pages an inbox newest first with next_cursor', async function () {
      const sent: Message[] = [];
      for (let i = 0; i < 5; i++) sent.push(await send({ to: 'pam', subject: `page ${i}` }));
      const seen: Message[] = [];
      let cursor: string | undefined;
      do {
        const page = await inbox(`agent=pam&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(page.total).to.equal(5);
        seen.push(...page.items);
        cursor = page.next_cursor;
      } while (cursor);
      expect(ids(seen)).to.deep.equal(ids(sent).reverse());
      expectProblem(await api.get('/mail?cursor=nope'), 400, 'invalid-cursor');
      expectProblem(await api.get('/mail?limit=1001'), 422, 'validation-failed', { location: 'query.limit' });
    });

    it('archive: the message leaves the inbox (and the count), stays in its thread; archiving again changes nothing', async function () {
      const msg = await send({ to: 'quinn', subject: 'archive me' });
      const keep = await send({ to: 'quinn', subject: 'keep me' });
      const archived = await api.post(`/mail/${msg.id}/archive`);
      expect(archived.status).to.equal(200);
      expect(archived.body).to.deep.equal({ status: 'archived' });
      expect(ids((await inbox('agent=quinn')).items)).to.deep.equal([keep.id]);
      expect(ids((await inbox('agent=quinn&status=all')).items)).to.deep.equal([keep.id]);
      expect((await api.get('/mail/count?agent=quinn')).body).to.deep.equal({ total: 1, unread: 1 });
      const again = await api.post(`/mail/${msg.id}/archive`);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal({ status: 'archived' });
      expect(await mailEvents('mail.archived', msg.id)).to.have.length(1);
      // Archived is closed, not gone.
      expect((await api.bead(msg.id)).status).to.equal('closed');
      expect(await message(msg.id)).to.include({ id: msg.id, subject: 'archive me' });
      expect(ids((await api.get<Page<Message>>(`/mail/thread/${msg.thread_id}`)).body.items)).to.deep.equal([msg.id]);
    });

    it('reply: same thread, reply_to, `Re: …` (never `Re: Re: …`), to the original sender; thread oldest first', async function () {
      const original = await send({ to: 'rose', subject: 'Status?', body: 'how is it going', from: 'sam' });
      const replyReply = await api.post<Message>(`/mail/${original.id}/reply`, { body: 'going well' });
      expect(replyReply.status).to.equal(201);
      const reply = replyReply.body;
      expect(reply).to.include({
        subject: 'Re: Status?',
        to: 'sam',
        from: 'rose',
        body: 'going well',
        thread_id: original.thread_id,
        reply_to: original.id,
        read: false,
      });
      expect(await mailEvents('mail.replied', reply.id)).to.have.length(1);

      const second = (await api.post<Message>(`/mail/${reply.id}/reply`, { body: 'great' })).body;
      expect(second).to.include({
        subject: 'Re: Status?',
        to: 'rose',
        from: 'sam',
        thread_id: original.thread_id,
        reply_to: reply.id,
      });
      const custom = (await api.post<Message>(`/mail/${second.id}/reply`, { subject: 'New topic', from: 'tom' })).body;
      expect(custom).to.include({ subject: 'New topic', from: 'tom', to: 'sam', thread_id: original.thread_id });
      const shouted = await send({ to: 'rose', subject: 'RE: shouting', from: 'sam' });
      const calm = (await api.post<Message>(`/mail/${shouted.id}/reply`, {})).body;
      expect(calm.subject).to.equal('RE: shouting');

      // The thread, oldest first, by thread id and by any of its messages' ids.
      const expected = [original.id, reply.id, second.id, custom.id];
      const byThread = await api.get<Page<Message>>(`/mail/thread/${original.thread_id}`);
      expect(byThread.status).to.equal(200);
      expect(ids(byThread.body.items)).to.deep.equal(expected);
      expect(byThread.body.total).to.equal(4);
      expect(byThread.body.items[1]).to.deep.equal(await message(reply.id));
      for (const id of expected) {
        expect(ids((await api.get<Page<Message>>(`/mail/thread/${id}`)).body.items), id).to.deep.equal(expected);
      }
      expect(ids((await inbox('agent=sam')).items)).to.include.members([reply.id, custom.id]);
      expectProblem(await api.get('/mail/thread/no-such-thread'), 404, 'mail-not-found');
      expectProblem(await api.post(`/mail/${original.id}/reply`, { bogus: 1 }), 422, 'validation-failed', {
        location: 'body.bogus',
      });
    });

    it('a thread holds messages only: a bead of another type carrying a `thread:` label is not in it', async function () {
      const msg = await send({ to: 'walt', subject: 'threaded' });
      const task = await api.create({ title: 'labelled like mail', labels: [`thread:${msg.thread_id}`] });
      const thread = await api.get<Page<Message>>(`/mail/thread/${msg.thread_id}`);
      expect(ids(thread.body.items)).to.deep.equal([msg.id]);
      const stray = await api.create({ title: 'a task in a thread of its own', labels: ['thread:tasks-only'] });
      expectProblem(await api.get('/mail/thread/tasks-only'), 404, 'mail-not-found');
      expect(await api.bead(task.id)).to.deep.equal(task);
      expect(await api.bead(stray.id)).to.deep.equal(stray);
    });

    it('delete is archive by another name: `{status: deleted}`, closed, out of the inbox, still in its thread; `mail.deleted` once', async function () {
      const msg = await send({ to: 'uma', subject: 'delete me' });
      const reply = (await api.post<Message>(`/mail/${msg.id}/reply`, { body: 'answer' })).body;
      const deleted = await api.del(`/mail/${msg.id}`);
      expect(deleted.status).to.equal(200);
      expect(deleted.body).to.deep.equal({ status: 'deleted' });
      expect((await api.bead(msg.id)).status).to.equal('closed');
      expect(await message(msg.id)).to.include({ id: msg.id, subject: 'delete me' });
      expect(ids((await inbox('agent=uma&status=all')).items)).to.not.include(msg.id);
      expect(ids((await api.get<Page<Message>>(`/mail/thread/${reply.thread_id}`)).body.items)).to.deep.equal([
        msg.id,
        reply.id,
      ]);
      const again = await api.del(`/mail/${msg.id}`);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal({ status: 'deleted' });
      const events = await mailEvents('mail.deleted', msg.id);
      expect(events).to.have.length(1);
      expect((events[0].payload.message as Message).subject).to.equal('delete me');
      expect(await mailEvents('mail.archived', msg.id)).to.have.length(0);
    });

    it('answers a message named with its rig, and 404 `mail-not-found` for it with another rig, changing nothing', async function () {
      const msg = await send({ to: 'rita', subject: 'rigged', rig: 'r1' });
      const plain = await send({ to: 'rita', subject: 'no rig' });
      expect((await api.get<Message>(`/mail/${msg.id}?rig=r1`)).body).to.include({ id: msg.id, rig: 'r1' });
      expect(ids((await api.get<Page<Message>>(`/mail/thread/${msg.thread_id}?rig=r1`)).body.items)).to.deep.equal([
        msg.id,
      ]);
      const elsewhere: [string, string, unknown][] = [
        ['GET', `/mail/${msg.id}?rig=r2`, undefined],
        ['GET', `/mail/${plain.id}?rig=r1`, undefined],
        ['GET', `/mail/thread/${msg.thread_id}?rig=r2`, undefined],
        ['POST', `/mail/${msg.id}/read?rig=r2`, undefined],
        ['POST', `/mail/${msg.id}/mark-unread?rig=r2`, undefined],
        ['POST', `/mail/${msg.id}/archive?rig=r2`, undefined],
        ['POST', `/mail/${msg.id}/reply?rig=r2`, { body: 'wrong rig' }],
        ['DELETE', `/mail/${msg.id}?rig=r2`, undefined],
      ];
      for (const [method, path, body] of elsewhere) {
        expectProblem(await api.call(method, path, body), 404, 'mail-not-found', { detail: 'not_found:' });
      }
      expect(await message(msg.id)).to.deep.equal(msg);
      expect((await api.post(`/mail/${msg.id}/read?rig=r1`)).body).to.deep.equal({ status: 'read' });
      expect((await message(msg.id)).read).to.equal(true);
    });

    it('404 `mail-not-found` for a bead that is not a message, and for a missing id, on every mail route', async function () {
      const task = await api.create({ title: 'not a message' });
      for (const id of [task.id, 'wc-999999']) {
        const calls: [string, string, unknown][] = [
          ['GET', `/mail/${id}`, undefined],
          ['POST', `/mail/${id}/read`, undefined],
          ['POST', `/mail/${id}/mark-unread`, undefined],
          ['POST', `/mail/${id}/archive`, undefined],
          ['POST', `/mail/${id}/reply`, { body: 'x' }],
          ['DELETE', `/mail/${id}`, undefined],
          ['GET', `/mail/thread/${id}`, undefined],
        ];
        for (const [method, path, body] of calls) {
          expectProblem(await api.call(method, path, body), 404, 'mail-not-found', { detail: 'not_found:' });
        }
      }
      // The task was not touched.
      expect(await api.bead(task.id)).to.deep.equal(task);
    });
  });

  describe('convoys', function () {
    interface ConvoyView {
      convoy: Bead;
      children: Bead[];
      progress: { total: number; closed: number };
    }

    async function check(id: string) {
      const reply = await api.get<{ convoy_id: string; total: number; closed: number; complete: boolean }>(
        `/convoy/${id}/check`,
      );
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body;
    }

    async function createConvoy(title: string, items?: string[]): Promise<Bead> {
      const { data, error, response } = await sup.api.POST('/v0/city/{cityName}/convoys', {
        params: { path: { cityName: 'work-city' }, header: CSRF },
        body: items ? { title, items } : { title },
      });
      if (response.status !== 201 || !data) throw new Error(`convoy ${response.status}: ${JSON.stringify(error)}`);
      return data;
    }

    it('create with items: 201 convoy bead with `tracks` edges in `dependencies`; `convoy.created`', async function () {
      const a = await api.create({ title: 'convoy item a' });
      const b = await api.create({ title: 'convoy item b' });
      const convoy = await createConvoy('first convoy', [a.id, b.id, a.id]);
      expect(convoy.id).to.match(/^wc-\d+$/);
      expect(convoy).to.include({ title: 'first convoy', issue_type: 'convoy', status: 'open' });
      const tracks = [
        { issue_id: convoy.id, depends_on_id: a.id, type: 'tracks' },
        { issue_id: convoy.id, depends_on_id: b.id, type: 'tracks' },
      ];
      expect(convoy.dependencies).to.have.deep.members(tracks);
      expect((await api.bead(convoy.id)).dependencies).to.have.deep.members(tracks);
      const created = await api.eventsAbout('convoy.created', convoy.id);
      expect(created).to.have.length(1);
      expect(await api.eventsAbout('bead.created', convoy.id)).to.have.length(1);

      const view = await api.get<ConvoyView>(`/convoy/${convoy.id}`);
      expect(view.status).to.equal(200);
      expect(view.body.convoy).to.deep.equal(await api.bead(convoy.id));
      expect(ids(view.body.children)).to.have.members([a.id, b.id]);
      expect(view.body.progress).to.deep.equal({ total: 2, closed: 0 });
      // Tracking holds nothing out of ready.
      expect(await api.readyIds()).to.include.members([a.id, b.id]);
    });

    it('refuses unknown items (422 on body.items) and creates nothing; refuses a bad body', async function () {
      const a = await api.create({ title: 'known item' });
      const head = await api.head();
      const reply = await api.post('/convoys', { title: 'bad convoy', items: [a.id, 'wc-999999'] });
      expectProblem(reply, 422, 'validation-failed', { location: 'body.items' });
      expect(await api.head()).to.equal(head);
      expectProblem(await api.post('/convoys', { items: [a.id] }), 422, 'validation-failed', {
        location: 'body.title',
      });
      expectProblem(await api.post('/convoys', { title: 'x', bogus: 1 }), 422, 'validation-failed', {
        location: 'body.bogus',
      });
      expect(await api.head()).to.equal(head);
    });

    it('check: complete only once every tracked bead is closed, and never while it tracks nothing', async function () {
      const empty = await createConvoy('empty convoy');
      expect(await check(empty.id)).to.deep.equal({ convoy_id: empty.id, total: 0, closed: 0, complete: false });

      const a = await api.create({ title: 'check a' });
      const b = await api.create({ title: 'check b' });
      const convoy = await createConvoy('check convoy', [a.id, b.id]);
      expect(await check(convoy.id)).to.deep.equal({ convoy_id: convoy.id, total: 2, closed: 0, complete: false });
      await api.update(a.id, { status: 'in_progress' });
      expect((await check(convoy.id)).closed).to.equal(0);
      await api.close(a.id);
      expect(await check(convoy.id)).to.deep.equal({ convoy_id: convoy.id, total: 2, closed: 1, complete: false });
      await api.close(b.id);
      expect(await check(convoy.id)).to.deep.equal({ convoy_id: convoy.id, total: 2, closed: 2, complete: true });
      expect((await api.get<ConvoyView>(`/convoy/${convoy.id}`)).body.progress).to.deep.equal({ total: 2, closed: 2 });
      // Its last member closing closed the convoy (once).
      expect((await api.bead(convoy.id)).status).to.equal('closed');
      expect(await api.eventsAbout('convoy.closed', convoy.id)).to.have.length(1);

      // add: an open item makes it incomplete again; remove: complete once more.
      const c = await api.create({ title: 'check c' });
      const added = await api.post(`/convoy/${convoy.id}/add`, { items: [c.id] });
      expect(added.status).to.equal(200);
      expect(added.body).to.deep.equal({ status: 'ok' });
      expect(await check(convoy.id)).to.deep.equal({ convoy_id: convoy.id, total: 3, closed: 2, complete: false });
      // Adding what it tracks already adds nothing.
      await api.post(`/convoy/${convoy.id}/add`, { items: [c.id, a.id] });
      expect((await api.bead(convoy.id)).dependencies).to.have.length(3);
      const removed = await api.post(`/convoy/${convoy.id}/remove`, { items: [c.id] });
      expect(removed.status).to.equal(200);
      expect(await check(convoy.id)).to.deep.equal({ convoy_id: convoy.id, total: 2, closed: 2, complete: true });
      expect((await api.bead(convoy.id)).dependencies!.map((d) => d.depends_on_id)).to.not.include(c.id);
      // Reopening a tracked bead undoes completion.
      await api.reopen(b.id);
      expect((await check(convoy.id)).complete).to.equal(false);
    });

    it('add refuses unknown items, remove refuses untracked ones (422 on body.items), changing nothing', async function () {
      const a = await api.create({ title: 'tracked' });
      const stranger = await api.create({ title: 'untracked' });
      const convoy = await createConvoy('strict convoy', [a.id]);
      expectProblem(await api.post(`/convoy/${convoy.id}/add`, { items: ['wc-999999'] }), 422, 'validation-failed', {
        location: 'body.items',
      });
      expectProblem(await api.post(`/convoy/${convoy.id}/remove`, { items: [stranger.id] }), 422, 'validation-failed', {
        location: 'body.items',
      });
      expectProblem(
        await api.post(`/convoy/${convoy.id}/remove`, { items: [a.id, stranger.id] }),
        422,
        'validation-failed',
      );
      // No items (absent or null, as the reference allows) changes nothing.
      for (const body of [{}, { items: null }]) {
        expect((await api.post(`/convoy/${convoy.id}/add`, body)).status).to.equal(200);
        expect((await api.post(`/convoy/${convoy.id}/remove`, body)).status).to.equal(200);
      }
      expect((await api.bead(convoy.id)).dependencies).to.deep.equal([
        { issue_id: convoy.id, depends_on_id: a.id, type: 'tracks' },
      ]);
    });

    it('takes null for the arrays the reference types as array-or-null: labels, remove_labels, items', async function () {
      const created = await api.post<Bead>('/beads', { title: 'null labels', labels: null });
      expect(created.status).to.equal(201);
      expect(created.body.labels).to.deep.equal([]);
      const labelled = await api.create({ title: 'labelled', labels: ['keep'] });
      const patched = await api.call('PATCH', `/bead/${labelled.id}`, { labels: null, remove_labels: null });
      expect(patched.status).to.equal(200);
      expect((await api.bead(labelled.id)).labels).to.deep.equal(['keep']);
      const convoy = await api.post<Bead>('/convoys', { title: 'null items', items: null });
      expect(convoy.status).to.equal(201);
      expect(await check(convoy.body.id)).to.include({ total: 0 });
      expectProblem(await api.post('/beads', { title: 'bad labels', labels: 'one' }), 422, 'validation-failed', {
        location: 'body.labels',
      });
    });

    it('close: the convoy bead closes, `convoy.closed` once, it leaves the list; its items stay as they were', async function () {
      const a = await api.create({ title: 'close item' });
      const convoy = await createConvoy('closing convoy', [a.id]);
      expect(ids((await api.get<Page<Bead>>('/convoys?limit=1000')).body.items)).to.include(convoy.id);
      const closed = await api.post(`/convoy/${convoy.id}/close`);
      expect(closed.status).to.equal(200);
      expect(closed.body).to.deep.equal({ status: 'ok' });
      expect((await api.post(`/convoy/${convoy.id}/close`)).status).to.equal(200);
      expect((await api.bead(convoy.id)).status).to.equal('closed');
      expect(await api.eventsAbout('convoy.closed', convoy.id)).to.have.length(1);
      expect(await api.eventsAbout('bead.closed', convoy.id)).to.have.length(1);
      expect(ids((await api.get<Page<Bead>>('/convoys?limit=1000')).body.items)).to.not.include(convoy.id);
      expect((await api.bead(a.id)).status).to.equal('open');
    });

    it('counts a tracked bead that was deleted as not closed: losing its open member never completes a convoy', async function () {
      const done = await api.create({ title: 'done member' });
      await api.close(done.id);
      const doomed = await api.create({ title: 'doomed member' });
      const convoy = await createConvoy('losing convoy', [done.id, doomed.id]);
      expect((await api.del(`/bead/${doomed.id}`)).status).to.equal(200);
      expect(await check(convoy.id)).to.deep.equal({ convoy_id: convoy.id, total: 2, closed: 1, complete: false });
      const view = (await api.get<ConvoyView>(`/convoy/${convoy.id}`)).body;
      expect(ids(view.children)).to.deep.equal([done.id]);
      expect(view.progress).to.deep.equal({ total: 2, closed: 1 });
      expect((await api.bead(convoy.id)).status).to.equal('open');
      // The convoy itself did not change, so no `bead.updated` for it; an untracking remove still works.
      expect(await api.eventsAbout('bead.updated', convoy.id)).to.have.length(0);
      expect((await api.post(`/convoy/${convoy.id}/remove`, { items: [doomed.id] })).status).to.equal(200);
      expect(await check(convoy.id)).to.deep.equal({ convoy_id: convoy.id, total: 1, closed: 1, complete: true });
    });

    it('closes a convoy that tracks a convoy once the inner one closes with its last member', async function () {
      const item = await api.create({ title: 'nested item' });
      const inner = await createConvoy('inner convoy', [item.id]);
      const outer = await createConvoy('outer convoy', [inner.id]);
      await api.close(item.id);
      expect((await api.bead(inner.id)).status).to.equal('closed');
      expect((await api.bead(outer.id)).status).to.equal('closed');
      expect(await api.eventsAbout('convoy.closed', outer.id)).to.have.length(1);
    });

    it('records `convoy.closed` however the convoy bead is closed (PATCH, /bead/{id}/close), once', async function () {
      const patched = await createConvoy('patched convoy');
      expect((await api.call('PATCH', `/bead/${patched.id}`, { status: 'closed' })).status).to.equal(200);
      const closedAsBead = await createConvoy('closed as a bead');
      expect((await api.post(`/bead/${closedAsBead.id}/close`)).status).to.equal(200);
      expect((await api.post(`/bead/${closedAsBead.id}/close`)).status).to.equal(200);
      for (const convoy of [patched, closedAsBead]) {
        expect(await api.eventsAbout('convoy.closed', convoy.id)).to.have.length(1);
      }
    });

    it('delete closes the convoy and keeps it (`convoy.closed` once); list: open convoys newest first, in pages', async function () {
      const a = await api.create({ title: 'delete item' });
      const convoy = await createConvoy('deleted convoy', [a.id]);
      const item = await api.bead(a.id);
      const reply = await api.del(`/convoy/${convoy.id}`);
      expect(reply.status).to.equal(200);
      expect(reply.body).to.deep.equal({ status: 'ok' });
      expect(ids((await api.get<Page<Bead>>('/convoys?limit=1000')).body.items)).to.not.include(convoy.id);
      const after = await api.get<ConvoyView>(`/convoy/${convoy.id}`);
      expect(after.status).to.equal(200);
      expect(after.body.convoy.status).to.equal('closed');
      expect(ids(after.body.children)).to.deep.equal([a.id]);
      expect((await api.del(`/convoy/${convoy.id}`)).status).to.equal(200);
      expect(await api.eventsAbout('convoy.closed', convoy.id)).to.have.length(1);
      expect(await api.eventsAbout('bead.deleted', convoy.id)).to.have.length(0);
      // The items stay as they were.
      expect(await api.bead(a.id)).to.deep.equal(item);

      const made = [];
      for (let i = 0; i < 3; i++) made.push(await createConvoy(`listed convoy ${i}`));
      const all = await api.get<Page<Bead>>('/convoys?limit=1000');
      expect(all.status).to.equal(200);
      expect(all.body.items.every((b) => b.issue_type === 'convoy' && b.status !== 'closed')).to.equal(true);
      expect(all.body.total).to.equal(all.body.items.length);
      expectNewestFirst(all.body.items, 'convoys');
      expect(ids(all.body.items).slice(0, 3)).to.deep.equal(ids(made).reverse());
      const first = await api.get<Page<Bead>>('/convoys?limit=2');
      expect(ids(first.body.items)).to.deep.equal(ids(made).reverse().slice(0, 2));
      const second = await api.get<Page<Bead>>(
        `/convoys?limit=2&cursor=${encodeURIComponent(first.body.next_cursor!)}`,
      );
      expect(second.body.items[0].id).to.equal(made[0].id);
      expectProblem(await api.get('/convoys?cursor=bad'), 400, 'invalid-cursor');
    });

    it('404 `convoy-not-found` for a bead that is not a convoy, and for a missing id, on every convoy route', async function () {
      const task = await api.create({ title: 'not a convoy' });
      for (const id of [task.id, 'wc-999999']) {
        const calls: [string, string, unknown][] = [
          ['GET', `/convoy/${id}`, undefined],
          ['GET', `/convoy/${id}/check`, undefined],
          ['POST', `/convoy/${id}/add`, { items: [task.id] }],
          ['POST', `/convoy/${id}/remove`, { items: [task.id] }],
          ['POST', `/convoy/${id}/close`, undefined],
          ['DELETE', `/convoy/${id}`, undefined],
        ];
        for (const [method, path, body] of calls) {
          expectProblem(await api.call(method, path, body), 404, 'convoy-not-found', { detail: 'not_found:' });
        }
      }
      expect(await api.bead(task.id)).to.deep.equal(task);
    });
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
