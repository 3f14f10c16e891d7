import { expect } from 'chai';
import { userInfo } from 'node:os';
import { CityApi, expectProblem, idNumber, type Bead, type Envelope } from './helpers/city-api.js';
import { CSRF, type TestSupervisor } from './helpers/supervisor.js';
import { createMany, FUTURE, ids, RFC3339, withWorkCity } from './helpers/work-units.js';

// Beads over the API: create, get, update, close, reopen, assign and delete, how they validate, and the
// `bead.*` event each mutation records.
// A supervisor and city of this file's own; what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  withWorkCity((city) => ({ sup, api } = city));

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
      expect(event).to.include({ type: 'bead.created', subject: bead.id, actor: userInfo().username });
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
});
