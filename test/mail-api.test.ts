import { expect } from 'chai';
import { CityApi, expectProblem, type Envelope, type Message } from './helpers/city-api.js';
import { CSRF, type TestSupervisor } from './helpers/supervisor.js';
import { ids, RFC3339, withWorkCity, type Page } from './helpers/work-units.js';

// Mail over the API: messages as `message` beads, inboxes, threads, replies and the `mail.*` events.
// A supervisor and city of this file's own; what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  withWorkCity((city) => ({ sup, api } = city));

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
});
