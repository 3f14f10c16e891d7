import { expect } from 'chai';
import { CityApi, expectProblem, type Bead } from './helpers/city-api.js';
import { CSRF, type TestSupervisor } from './helpers/supervisor.js';
import { expectNewestFirst, ids, withWorkCity, type Page } from './helpers/work-units.js';

// Convoys over the API: `convoy` beads tracking others, their completion, and the `convoy.*` events.
// A supervisor and city of this file's own; what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  withWorkCity((city) => ({ sup, api } = city));

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
});
