import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import {
  createSession,
  deliver,
  ECHO_AGENT,
  send,
  session,
  sessionEvents,
  startSessionCity,
  terminalOf,
  turns,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

describe('sessions (real controller, real agent programs on the pipe runtime)', function () {
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity(
      'sessions',
      '\n[[agent]]\nname = "helper"\nprovider = "echo"\ndir = "agents/helper"\n',
    );
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  describe('create, talk, transcript', function () {
    it('creates a session (202, then request.result.session.create) whose program runs in a group of its own', async function () {
      const { api } = city;
      const reply = await api.post<{ status: string; request_id: string; event_cursor: string; session_id: string }>(
        '/sessions',
        { kind: 'provider', name: 'echo', title: 'first' },
      );
      expect(reply.status).to.equal(202);
      expect(reply.body.status).to.equal('accepted');
      expect(reply.body.request_id).to.match(/^req-[0-9a-f]{24}$/);
      expect(reply.body.event_cursor).to.match(/^\d+$/);
      const id = reply.body.session_id;
      const result = await terminalOf(api, reply.body.request_id);
      expect(result.type).to.equal('request.result.session.create');
      expect(result.payload).to.deep.equal({ request_id: reply.body.request_id, session_id: id });
      // Nothing of it before the cursor; created, then woke, then the result, after it.
      const after = (await api.events()).filter((e) => e.seq > Number(reply.body.event_cursor));
      const types = after.filter((e) => e.payload.session_id === id || e.payload.request_id === reply.body.request_id);
      expect(types.map((e) => e.type)).to.deep.equal([
        'session.created',
        'session.woke',
        'request.result.session.create',
      ]);
      const view = await session(api, id);
      expect(view).to.include({ id, state: 'active', running: true, title: 'first', queued: 0 });
      expect(view).to.include({ template: 'echo', provider: 'echo', kind: 'provider', attached: false });
      expect(view.session_name).to.match(/^echo-\d+$/);
      expect(view.pid).to.be.a('number');
      expect(isAlive(view.pid!)).to.equal(true);
      // Its own process group: the program leads it.
      const stat = readFileSync(`/proc/${view.pid}/stat`, 'utf8');
      expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])).to.equal(view.pid);
    });

    it('delivers a message (request.result.session.message with the message id) and keeps the reply in its own transcript', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      const result = await deliver(api, id, 'hello there');
      expect(result.type).to.equal('request.result.session.message');
      expect(result.payload.session_id).to.equal(id);
      expect(result.payload.message_id).to.match(/^msg-[0-9a-f]{16}$/);
      await waitForTurn(api, id, 'assistant', 'echo: hello there');
      const conversation = await turns(api, id);
      expect(conversation.map((t) => [t.role, t.text])).to.deep.equal([
        ['user', 'hello there'],
        ['assistant', 'echo: hello there'],
      ]);
      for (const turn of conversation) expect(Date.parse(turn.timestamp)).to.be.a('number').and.not.NaN;
      // Raw: every entry as stored, with ids and times; the user entry carries the delivered message's id.
      const raw = await api.get<{ format: string; messages: { seq: number; kind: string; message_id?: string }[] }>(
        `/session/${id}/transcript?format=raw`,
      );
      expect(raw.body.format).to.equal('raw');
      const kinds = raw.body.messages.map((m) => m.kind);
      expect(kinds.slice(0, 4)).to.deep.equal(['start', 'user', 'assistant', 'turn_end']);
      expect(raw.body.messages.find((m) => m.kind === 'user')!.message_id).to.equal(result.payload.message_id);
      expect(raw.body.messages.map((m) => m.seq)).to.deep.equal(raw.body.messages.map((_, i) => i + 1));
      // On disk, where decisions.md says it is.
      const file = join(city.dir, '.ctl', 'sessions', id, 'transcript.jsonl');
      expect(readFileSync(file, 'utf8')).to.include('echo: hello there');
      expect((await session(api, id)).last_output).to.equal('echo: hello there');
    });

    it('a first message in the create is its first turn', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo', message: 'from the start' });
      await waitForTurn(api, id, 'assistant', 'echo: from the start');
      expect((await session(api, id)).title).to.equal('from the start');
    });

    it('messages to a session still starting are queued and delivered in order once it is ready', async function () {
      const { api } = city;
      // A program that takes a while to be ready: its messages wait, in order.
      const reply = await api.post<{ session_id: string; request_id: string }>('/sessions', { name: 'slow-echo' });
      expect(reply.status).to.equal(202);
      const id = reply.body.session_id;
      const sent = [];
      for (const text of ['one', 'two', 'three', 'four']) sent.push(await send(api, id, text));
      expect((await session(api, id)).queued).to.be.greaterThan(0);
      for (const accepted of sent)
        expect((await terminalOf(api, accepted.request_id)).type).to.equal('request.result.session.message');
      await waitForTurn(api, id, 'assistant', 'echo: four');
      const conversation = await turns(api, id);
      expect(conversation.filter((t) => t.role === 'user').map((t) => t.text)).to.deep.equal([
        'one',
        'two',
        'three',
        'four',
      ]);
      expect(conversation.filter((t) => t.role === 'assistant').map((t) => t.text)).to.deep.equal([
        'echo: one',
        'echo: two',
        'echo: three',
        'echo: four',
      ]);
    });

    it('creates a session of an agent: its provider, in its directory', async function () {
      const { api } = city;
      const id = await createSession(api, { kind: 'agent', name: 'helper', message: 'where am I?' });
      const view = await session(api, id);
      expect(view).to.include({ template: 'helper', provider: 'echo', kind: 'agent' });
      expect((view as unknown as { work_dir: string }).work_dir).to.equal(join(city.dir, 'agents', 'helper'));
      expect(readlinkSync(`/proc/${view.pid}/cwd`)).to.equal(join(city.dir, 'agents', 'helper'));
      await waitForTurn(api, id, 'assistant', 'echo: where am I?');
    });

    it('a program that floods its output: every line reaches the transcript, memory stays bounded, the city answers', async function () {
      const { api, sup } = city;
      const id = await createSession(api, { name: 'echo' });
      const controller = (await sup.city('sessions'))!.pid!;
      const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${controller}/status`, 'utf8'))![1]);
      const before = rss();
      let peak = before;
      await deliver(api, id, 'flood 300000');
      await waitUntil(
        'the whole flood in the transcript',
        async () => {
          peak = Math.max(peak, rss());
          expect((await api.get(`/session/${id}`)).status, 'the city answers meanwhile').to.equal(200);
          const last = await api.get<{ messages: { kind: string; text?: string }[] }>(
            `/session/${id}/transcript?format=raw&tail=3`,
          );
          return last.body.messages.some(
            (m) => m.kind === 'assistant' && m.text?.endsWith('line 299999 of a flood of output'),
          );
        },
        60_000,
      );
      // ~12 MB of output went through; the controller held at most a small part of it at a time.
      expect(peak - before, `RSS grew by ${peak - before} KiB`).to.be.lessThan(150 * 1024);
    });

    it('pages its transcript: tail, before and after', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      for (const text of ['a', 'b', 'c']) await deliver(api, id, text);
      await waitForTurn(api, id, 'assistant', 'echo: c');
      type Page = {
        messages: { seq: number }[];
        pagination: { first_seq: number; last_seq: number; has_older: boolean; head: number };
      };
      const tail = (await api.get<Page>(`/session/${id}/transcript?format=raw&tail=2`)).body;
      expect(tail.messages.map((m) => m.seq)).to.deep.equal([tail.pagination.head - 1, tail.pagination.head]);
      expect(tail.pagination.has_older).to.equal(true);
      const before = (
        await api.get<Page>(`/session/${id}/transcript?format=raw&tail=2&before=${tail.pagination.first_seq}`)
      ).body;
      expect(before.messages.map((m) => m.seq)).to.deep.equal([
        tail.pagination.first_seq - 2,
        tail.pagination.first_seq - 1,
      ]);
      const after = (await api.get<Page>(`/session/${id}/transcript?format=raw&after=2&tail=3`)).body;
      expect(after.messages.map((m) => m.seq)).to.deep.equal([3, 4, 5]);
      expectProblem(await api.get(`/session/${id}/transcript?format=html`), 422, 'validation-failed');
      expectProblem(await api.get(`/session/${id}/transcript?tail=5000`), 422, 'validation-failed');
    });

    it('lists sessions (state and template filters, pages), and finds one by id, alias or session name', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo', alias: 'listed' });
      const view = await session(api, 'listed');
      expect(view.id).to.equal(id);
      expect((await session(api, view.session_name)).id).to.equal(id);
      type List = { items: { id: string; state: string; template: string }[]; total: number; next_cursor?: string };
      const all = (await api.get<List>('/sessions?template=echo')).body;
      expect(all.items.map((s) => s.id)).to.include(id);
      expect(all.items.every((s) => s.template === 'echo')).to.equal(true);
      const active = (await api.get<List>('/sessions?state=active')).body;
      expect(active.items.every((s) => s.state === 'active')).to.equal(true);
      const first = (await api.get<List>('/sessions?limit=1')).body;
      expect(first.items).to.have.length(1);
      expect(first.next_cursor).to.be.a('string');
      const second = (await api.get<List>(`/sessions?limit=1&cursor=${encodeURIComponent(first.next_cursor!)}`)).body;
      expect(second.items[0].id).to.not.equal(first.items[0].id);
      expectProblem(await api.get('/sessions?cursor=nonsense'), 400, 'invalid-cursor');
      expectProblem(await api.get('/sessions?state=sideways'), 422, 'validation-failed');

      // peek: each running program's last lines now, as GET /session/{id}?peek=true gives them.
      await deliver(api, id, 'flood 12');
      await waitForTurn(api, id, 'assistant', /line 11 of a flood of output$/);
      type Peeked = { items: { id: string; last_output?: string }[] };
      const mine = (list: Peeked) => list.items.find((s) => s.id === id)!;
      const plain = mine((await api.get<Peeked>('/sessions?template=echo')).body);
      expect(plain.last_output).to.include('line 0 of a flood of output');
      const peeked = mine((await api.get<Peeked>('/sessions?template=echo&peek=true&peek_lines=3')).body);
      expect(peeked.last_output?.split('\n')).to.deep.equal([9, 10, 11].map((i) => `line ${i} of a flood of output`));
      expect(
        mine((await api.get<Peeked>('/sessions?template=echo&peek=true')).body).last_output?.split('\n'),
      ).to.have.length(5);
      expectProblem(await api.get('/sessions?peek=true&peek_lines=0'), 422, 'validation-failed');
    });

    it('renames, and changes alias and title (session.updated); an alias already in use is a 409', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo', alias: 'taken' });
      const other = await createSession(api, { name: 'echo' });
      expect((await api.post<{ title: string }>(`/session/${other}/rename`, { title: 'renamed' })).body.title).to.equal(
        'renamed',
      );
      const patched = await api.patch<{ alias: string; title: string }>(`/session/${other}`, {
        alias: 'mine',
        title: 'patched',
      });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.include({ alias: 'mine', title: 'patched' });
      expect((await sessionEvents(api, 'session.updated', other)).length).to.equal(2);
      expectProblem(await api.patch(`/session/${other}`, { alias: 'taken' }), 409, 'conflict-wrong-state', {
        detail: 'conflict: ',
      });
      expectProblem(await api.post('/sessions', { name: 'echo', alias: 'taken' }), 409, 'conflict-wrong-state');
      expect((await session(api, 'taken')).id).to.equal(id);
      expectProblem(await api.patch(`/session/${other}`, { title: '' }), 422, 'validation-failed', {
        location: 'body.title',
      });
    });
  });

  describe('intents, stop, kill, suspend, wake, close', function () {
    it('follow_up waits for the turn in progress to end; interrupt_now ends it first', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      await send(api, id, 'sleep 1');
      const follow = await deliver(api, id, 'after the sleep', 'follow_up');
      expect(follow.type).to.equal('request.result.session.submit');
      expect(follow.payload).to.include({ intent: 'follow_up', queued: true });
      await waitForTurn(api, id, 'assistant', 'echo: after the sleep');
      let conversation = await turns(api, id);
      const slept = conversation.findIndex((t) => t.text === 'slept 1');
      expect(slept, 'the sleep answered first').to.be.greaterThan(-1);
      expect(conversation.findIndex((t) => t.text === 'after the sleep')).to.be.greaterThan(slept);

      await send(api, id, 'sleep 30');
      await waitUntil('the sleep to be in progress', async () => (await session(api, id)).activity === 'in-turn');
      const urgent = await deliver(api, id, 'urgent', 'interrupt_now');
      expect(urgent.payload).to.include({ intent: 'interrupt_now' });
      await waitForTurn(api, id, 'assistant', 'echo: urgent');
      conversation = await turns(api, id);
      expect(conversation.map((t) => t.text)).to.not.include('slept 30');
      expect(conversation.map((t) => t.text)).to.include('interrupted');
    });

    it('stop ends the current turn and keeps the program; with no turn it answers idle', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      const pid = (await session(api, id)).pid;
      expect((await api.post<{ status: string }>(`/session/${id}/stop`)).body).to.deep.equal({ status: 'idle', id });
      await send(api, id, 'sleep 30');
      await waitUntil('in turn', async () => (await session(api, id)).activity === 'in-turn');
      expect((await api.post<{ status: string }>(`/session/${id}/stop`)).body).to.deep.equal({ status: 'ok', id });
      await waitForTurn(api, id, 'assistant', 'interrupted');
      // The turn ends with the ready marker the program prints after its answer, which may come a moment later.
      const view = await waitUntil('the turn to end', async () => {
        const now = await session(api, id);
        return now.activity === 'idle' ? now : undefined;
      });
      expect(view).to.include({ running: true, pid, activity: 'idle' });
    });

    it('kill ends the program (session.stopped, asleep); a message wakes it and is its first turn', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      const pid = (await session(api, id)).pid!;
      expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
      await waitUntil('asleep', async () => (await session(api, id)).state === 'asleep');
      expect(isAlive(pid)).to.equal(false);
      const stopped = await sessionEvents(api, 'session.stopped', id);
      expect(stopped.map((e) => e.payload.reason)).to.deep.equal(['killed']);
      expectProblem(await api.post(`/session/${id}/kill`), 409, 'conflict-wrong-state', { detail: 'conflict: ' });
      expectProblem(await api.post(`/session/${id}/stop`), 409, 'conflict-wrong-state');
      await deliver(api, id, 'are you back?');
      await waitForTurn(api, id, 'assistant', 'echo: are you back?');
      const view = await session(api, id);
      expect(view).to.include({ state: 'active', running: true });
      expect(view.pid).to.not.equal(pid);
      expect((await sessionEvents(api, 'session.woke', id)).length).to.equal(2);
    });

    it('suspend ends the program and keeps it suspended (session.suspended); a message wakes it; wake and close check the state', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      const suspended = await api.post<{ state: string; running: boolean }>(`/session/${id}/suspend`);
      expect(suspended.body).to.include({ state: 'suspended' });
      await waitUntil('its program to end', async () => !(await session(api, id)).running);
      expect((await sessionEvents(api, 'session.suspended', id)).length).to.equal(1);
      expectProblem(await api.post(`/session/${id}/suspend`), 409, 'conflict-wrong-state');
      await deliver(api, id, 'wake up');
      await waitForTurn(api, id, 'assistant', 'echo: wake up');
      expectProblem(await api.post(`/session/${id}/wake`), 409, 'conflict-wrong-state');
      await api.post(`/session/${id}/kill`);
      await waitUntil('asleep', async () => (await session(api, id)).state === 'asleep');
      const woken = await api.post<{ state: string }>(`/session/${id}/wake`);
      expect(woken.status).to.equal(200);
      await waitUntil('active again', async () => (await session(api, id)).state === 'active');
    });

    it('close ends it for good (session.closed); its transcript stays; close?delete=true removes it', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      await deliver(api, id, 'before closing');
      await waitForTurn(api, id, 'assistant', 'echo: before closing');
      const pid = (await session(api, id)).pid!;
      expect((await api.post(`/session/${id}/close`)).body).to.deep.equal({ status: 'closed', id });
      await waitUntil('its program to end', () => !isAlive(pid));
      expect((await session(api, id)).state).to.equal('closed');
      expect((await sessionEvents(api, 'session.closed', id)).length).to.equal(1);
      expect((await turns(api, id)).map((t) => t.text)).to.include('echo: before closing');
      expectProblem(await api.post(`/session/${id}/messages`, { message: 'hello?' }), 409, 'conflict-wrong-state');
      expectProblem(await api.post(`/session/${id}/close`), 409, 'conflict-wrong-state');
      expectProblem(await api.post(`/session/${id}/wake`), 409, 'conflict-wrong-state');
      const listed = await api.get<{ items: { id: string }[] }>('/sessions?state=closed');
      expect(listed.body.items.map((s) => s.id)).to.include(id);
      expect((await api.post(`/session/${id}/close?delete=true`)).body).to.deep.equal({ status: 'deleted', id });
      expectProblem(await api.get(`/session/${id}`), 404, 'session-not-found');
      expect(existsSync(join(city.dir, '.ctl', 'sessions', id))).to.equal(false);
    });
  });

  describe('a session closed while its program starts', function () {
    it('ends its create with request.failed (exactly one terminal event), and stops the program', async function () {
      const { api } = city;
      const reply = await api.post<{ request_id: string; session_id: string }>('/sessions', { name: 'slow-echo' });
      expect(reply.status).to.equal(202);
      expect((await api.post(`/session/${reply.body.session_id}/close`)).status).to.equal(200);
      const result = await terminalOf(api, reply.body.request_id);
      expect(result.type).to.equal('request.failed');
      expect(result.payload).to.include({ operation: 'session.create', error_code: 'session_start_failed' });
      expect(String(result.payload.error_message)).to.match(/closed/);
      const terminals = (await api.events()).filter(
        (e) =>
          e.payload.request_id === reply.body.request_id &&
          (e.type === 'request.failed' || e.type.startsWith('request.result.')),
      );
      expect(terminals).to.have.length(1);
      expect((await session(api, reply.body.session_id)).running).to.equal(false);
    });
  });

  describe('pending interactions', function () {
    it('a question from a text program is pending (session.pending, GET …/pending, the city list); the answer reaches it', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      await deliver(api, id, 'ask what is your name?');
      const pending = await waitUntil('the question', async () => (await session(api, id)).pending);
      expect(pending).to.include({ kind: 'question', prompt: 'what is your name?' });
      const own = await api.get<{ supported: boolean; pending: { request_id: string } }>(`/session/${id}/pending`);
      expect(own.body.supported).to.equal(true);
      expect(own.body.pending.request_id).to.equal(pending.request_id);
      const all = await api.get<{ items: { session_id: string; request_id: string }[] }>('/pending');
      expect(all.body.items).to.deep.include({
        session_id: id,
        request_id: pending.request_id,
        kind: 'question',
        prompt: 'what is your name?',
      });
      const [event] = await sessionEvents(api, 'session.pending', id);
      expect(event.payload).to.include({ request_id: pending.request_id, kind: 'question' });
      // A message now would be read as the answer: it waits until the question is answered.
      const later = await send(api, id, 'after the answer');
      expectProblem(await api.post(`/session/${id}/respond`, { action: 'allow' }), 422, 'validation-failed');
      const responded = await api.post<{ status: string; id: string; request_id: string }>(`/session/${id}/respond`, {
        action: 'answer',
        text: 'Ada',
      });
      expect(responded.status).to.equal(202);
      expect(responded.body).to.deep.equal({ status: 'accepted', id, request_id: pending.request_id });
      await waitForTurn(api, id, 'assistant', 'answer: Ada');
      await terminalOf(api, later.request_id);
      await waitForTurn(api, id, 'assistant', 'echo: after the answer');
      const conversation = (await turns(api, id)).map((t) => t.text);
      expect(conversation.indexOf('answer: Ada')).to.be.lessThan(conversation.indexOf('after the answer'));
      const [cleared] = await sessionEvents(api, 'session.pending_cleared', id);
      expect(cleared.payload).to.include({ request_id: pending.request_id, action: 'answer' });
      expect((await session(api, id)).pending).to.equal(undefined);
      expectProblem(
        await api.post(`/session/${id}/respond`, { action: 'answer', text: 'again' }),
        409,
        'conflict-wrong-state',
      );
    });

    it('a program without questions says pending is not supported; respond with nothing pending is a 409', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'quiet-echo' });
      expect((await api.get(`/session/${id}/pending`)).body).to.deep.equal({ supported: false });
      expectProblem(await api.post(`/session/${id}/respond`, { action: 'allow' }), 409, 'conflict-wrong-state', {
        detail: `conflict: session ${id} has no pending interaction`,
      });
      expectProblem(await api.post(`/session/${id}/respond`, {}), 422, 'validation-failed', {
        location: 'body.action',
      });
    });
  });

  describe('failures', function () {
    it('a program that cannot be found, or exits at once: request.failed with the reason, never a hang', async function () {
      const { api } = city;
      for (const [name, why] of [
        ['missing', /agent-program not found/],
        ['dies', /exited with code 1 before it was ready|exited with code 1/],
      ] as const) {
        const reply = await api.post<{ request_id: string; session_id: string }>('/sessions', { name });
        expect(reply.status).to.equal(202);
        const result = await terminalOf(api, reply.body.request_id);
        expect(result.type, name).to.equal('request.failed');
        expect(result.payload).to.include({ operation: 'session.create', error_code: 'session_start_failed' });
        expect(String(result.payload.error_message)).to.match(why);
        const view = await session(api, reply.body.session_id);
        expect(view.state).to.equal('failed-create');
        expect(view.running).to.equal(false);
        expect(view.reason).to.match(why);
      }
    });

    it('a program that crashes: session.crashed with its exit code; undelivered messages fail; the next message wakes it', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'echo' });
      const pid = (await session(api, id)).pid;
      await deliver(api, id, 'exit 3');
      const [crash] = await waitUntil('session.crashed', async () => {
        const events = await sessionEvents(api, 'session.crashed', id);
        return events.length ? events : undefined;
      });
      expect(crash.payload).to.include({ session_id: id, exit_code: 3, signal: null, pid });
      const view = await session(api, id);
      expect(view).to.include({ state: 'asleep', running: false });
      expect(view.reason).to.equal('its program exited with code 3');
      const raw = await api.get<{ messages: { kind: string; code?: number }[] }>(
        `/session/${id}/transcript?format=raw`,
      );
      expect(raw.body.messages.at(-1)).to.include({ kind: 'exit', code: 3 });
      await deliver(api, id, 'again');
      await waitForTurn(api, id, 'assistant', 'echo: again');
    });

    it('bad input: unknown provider, agent or session (404), empty message (422), unknown intent (422), a mode the provider lacks (422)', async function () {
      const { api } = city;
      expectProblem(await api.post('/sessions', { name: 'nope' }), 404, 'provider-not-found', {
        detail: 'not_found: provider not found: nope',
      });
      expectProblem(await api.post('/sessions', { kind: 'agent', name: 'nobody' }), 404, 'agent-not-found');
      expectProblem(await api.get('/session/nope'), 404, 'session-not-found', {
        detail: 'not_found: session not found: nope',
      });
      expectProblem(await api.post('/session/nope/messages', { message: 'x' }), 404, 'session-not-found');
      const id = await createSession(api, { name: 'echo' });
      for (const body of [{ message: '' }, { message: '   ' }, {}]) {
        expectProblem(await api.post(`/session/${id}/messages`, body), 422, 'validation-failed', {
          location: 'body.message',
        });
      }
      expectProblem(
        await api.post(`/session/${id}/submit`, { message: 'x', intent: 'whenever' }),
        422,
        'validation-failed',
      );
      expectProblem(await api.post('/sessions', { name: 'echo', extra: 1 }), 422, 'validation-failed');
      expectProblem(
        await api.post(`/session/${id}/permission-mode`, { permission_mode: 'yolo' }),
        422,
        'validation-failed',
        {
          location: 'body.permission_mode',
        },
      );
      expectProblem(
        await api.post('/sessions', { name: 'pretend-claude', permission_mode: 'yolo' }),
        422,
        'validation-failed',
      );
    });

    it('a blank title or first message is a 422 naming the field, on create, rename and patch (never a 500)', async function () {
      const { api } = city;
      for (const [body, location] of [
        [{ name: 'echo', title: '' }, 'body.title'],
        [{ name: 'echo', title: '   ' }, 'body.title'],
        [{ name: 'echo', message: '   ' }, 'body.message'],
        [{ name: 'echo', message: ' \n\t ' }, 'body.message'],
      ] as const) {
        expectProblem(await api.post('/sessions', body), 422, 'validation-failed', { location });
      }
      const id = await createSession(api, { name: 'echo' });
      expectProblem(await api.patch(`/session/${id}`, { title: '   ' }), 422, 'validation-failed', {
        location: 'body.title',
      });
      expectProblem(await api.post(`/session/${id}/rename`, { title: ' \t' }), 422, 'validation-failed', {
        location: 'body.title',
      });
      expect((await session(api, id)).title).to.not.match(/^\s*$/);
    });
  });

  describe('stream-json (the claude preset over the stream-json example agent)', function () {
    it('talks in stream-json: replies, the provider session id kept for resume, usage recorded', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'pretend-claude', message: 'hello claude' });
      await waitForTurn(api, id, 'assistant', 'You said: hello claude');
      const view = await waitUntil('the provider session key', async () => {
        const v = await session(api, id);
        return v.provider_session_key ? v : undefined;
      });
      expect(view.provider_session_key).to.match(/^[0-9a-f-]{36}$/);
      expect(view.permission_mode).to.equal('default');
      const raw = await api.get<{ messages: { kind: string; usage?: unknown; subtype?: string }[] }>(
        `/session/${id}/transcript?format=raw`,
      );
      const end = raw.body.messages.find((m) => m.kind === 'turn_end');
      expect(end).to.include({ subtype: 'success' });
      expect(end!.usage).to.be.an('object');
    });

    it('a permission request (can_use_tool) is pending; allowed, the tool runs; denied, the program hears why', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'pretend-claude' });
      await deliver(api, id, 'run ls -la');
      const pending = await waitUntil('the permission request', async () => (await session(api, id)).pending);
      expect(pending).to.include({ kind: 'tool-approval' });
      expect(pending.options).to.deep.equal(['allow', 'deny']);
      expect(pending.prompt).to.match(/^Allow Bash\?/);
      await waitForTurn(api, id, 'tool', /^Bash \{"command":"ls -la"\}$/);
      expectProblem(
        await api.post(`/session/${id}/respond`, { action: 'answer', text: 'sure' }),
        422,
        'validation-failed',
      );
      expectProblem(
        await api.post(`/session/${id}/respond`, { action: 'allow', request_id: 'someone-else' }),
        409,
        'conflict-wrong-state',
      );
      expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
      await waitForTurn(api, id, 'tool', 'ran: ls -la');
      await waitForTurn(api, id, 'assistant', 'I ran `ls -la`.');

      await deliver(api, id, 'run rm -rf /');
      await waitUntil('the second request', async () => (await session(api, id)).pending);
      await api.post(`/session/${id}/respond`, { action: 'deny', text: 'not that one' });
      await waitForTurn(api, id, 'assistant', 'I was not allowed to run it: not that one');
      const cleared = await sessionEvents(api, 'session.pending_cleared', id);
      expect(cleared.map((e) => e.payload.action)).to.deep.equal(['allow', 'deny']);
    });

    it('stop sends its interrupt control request: the turn ends, the program keeps running', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'pretend-claude' });
      const pid = (await session(api, id)).pid;
      await deliver(api, id, 'slow 30');
      expect((await api.post<{ status: string }>(`/session/${id}/stop`)).body.status).to.equal('ok');
      await waitUntil('idle', async () => (await session(api, id)).activity === 'idle');
      const raw = await api.get<{ messages: { kind: string; subtype?: string }[] }>(
        `/session/${id}/transcript?format=raw`,
      );
      expect(raw.body.messages.at(-1)).to.include({ kind: 'turn_end', subtype: 'error_during_execution' });
      expect((await session(api, id)).pid).to.equal(pid);
      await deliver(api, id, 'still there?');
      await waitForTurn(api, id, 'assistant', 'You said: still there?');
    });

    it('permission-mode changes the running program by control request (session.updated)', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'pretend-claude' });
      const changed = await api.post<{ permission_mode: string; reason: string }>(`/session/${id}/permission-mode`, {
        permission_mode: 'bypassPermissions',
      });
      expect(changed.status).to.equal(200);
      expect(changed.body).to.include({
        permission_mode: 'bypassPermissions',
        reason: 'permission mode bypassPermissions',
      });
      // In that mode the agent no longer asks.
      await deliver(api, id, 'run date');
      await waitForTurn(api, id, 'assistant', 'I ran `date`.');
      expect((await session(api, id)).pending).to.equal(undefined);
    });

    it('a woken session resumes its conversation (--resume with the provider session id)', async function () {
      const { api } = city;
      const id = await createSession(api, { name: 'pretend-claude', message: 'remember the lighthouse' });
      await waitForTurn(api, id, 'assistant', 'You said: remember the lighthouse');
      const key = (await session(api, id)).provider_session_key;
      await api.post(`/session/${id}/kill`);
      await waitUntil('asleep', async () => (await session(api, id)).state === 'asleep');
      await deliver(api, id, 'recall');
      await waitForTurn(api, id, 'assistant', 'You first said: remember the lighthouse');
      const raw = await api.get<{ messages: { kind: string; resumed?: string }[] }>(
        `/session/${id}/transcript?format=raw`,
      );
      expect(raw.body.messages.filter((m) => m.kind === 'start').map((m) => m.resumed)).to.deep.equal([undefined, key]);
    });
  });

  describe('the controller restarts, the supervisor stops', function () {
    it('sessions outlive their controller: the program is restarted (resumed), its transcript continued, nothing left behind', async function () {
      const { api, sup } = city;
      const echo = await createSession(api, { name: 'echo', alias: 'survivor' });
      await deliver(api, echo, 'before the restart');
      const claude = await createSession(api, { name: 'pretend-claude', message: 'the password is swordfish' });
      await waitForTurn(api, claude, 'assistant', 'You said: the password is swordfish');
      const oldEcho = (await session(api, echo)).pid!;
      const oldClaude = (await session(api, claude)).pid!;
      const controller = (await sup.city('sessions'))!.pid!;
      process.kill(controller, 'SIGKILL');
      await waitUntil('a new controller', async () => {
        const info = await sup.city('sessions');
        return info?.running === true && info.pid !== controller;
      });
      // The old programs are gone (reaped by the new controller), new ones run.
      await waitUntil('the old programs to be gone', () => !isAlive(oldEcho) && !isAlive(oldClaude));
      const restarted = await waitUntil('the echo session running again', async () => {
        const v = await session(api, 'survivor');
        return v.running && v.state === 'active' ? v : undefined;
      });
      expect(restarted.pid).to.not.equal(oldEcho);
      await deliver(api, echo, 'after the restart');
      await waitForTurn(api, echo, 'assistant', 'echo: after the restart');
      expect((await turns(api, echo)).map((t) => t.text)).to.include('echo: before the restart');
      await deliver(api, claude, 'recall');
      await waitForTurn(api, claude, 'assistant', 'You first said: the password is swordfish');
    });

    it('ctl supervisor stop leaves no program behind, and no zombie', async function () {
      const { api, sup, dir } = city;
      const id = await createSession(api, { name: 'echo' });
      const pid = (await session(api, id)).pid!;
      const result = await sup.ctl(['supervisor', 'stop']);
      expect(result.code, result.stderr).to.equal(0);
      await waitUntil(
        'every process of the city to be gone',
        () => processesMentioning(dir).length === 0 && !isAlive(pid),
      );
      expect(processesMentioning(ECHO_AGENT)).to.deep.equal([]);
      expect(processesMentioning(sup.root)).to.deep.equal([]);
    });
  });
});
