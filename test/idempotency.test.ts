import { expect } from 'chai';
import { CityApi, expectProblem, type Bead, type Message } from './helpers/city-api.js';
import { withWorkCity } from './helpers/work-units.js';

// `Idempotency-Key` on the creates (beads, and per endpoint mail and convoys).
// A supervisor and city of this file's own; what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let api: CityApi;
  withWorkCity((city) => ({ api } = city));

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
});
