import { expect } from 'chai';
import { CityApi, expectProblem, type Bead, type Message } from './helpers/city-api.js';
import type { TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';
import {
  createMany,
  decodeCursor,
  encodeCursor,
  expectNewestFirst,
  ids,
  withWorkCity,
  type Page,
} from './helpers/work-units.js';

// Bead lists: filters, keyset pages while beads are being created, and blocking queries (`index`, `wait`).
// A supervisor and city of this file's own; what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  withWorkCity((city) => ({ sup, api } = city));

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
});
