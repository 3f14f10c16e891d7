import { expect } from 'chai';
import {
  createSession,
  deliver,
  session,
  startSessionCity,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { closeAllStreams, SseStreamReader, type SseFrame } from './helpers/sse.js';
import { waitUntil } from './helpers/wait.js';

const data = (frame: SseFrame) => JSON.parse(frame.data) as Record<string, unknown>;

describe('GET …/session/{id}/stream (stream-session)', function () {
  let city: SessionCity;
  const url = (id: string, query = '') => city.api.url(`/session/${id}/stream${query}`);

  before(async function () {
    city = await startSessionCity('streams');
  });

  afterEach(function () {
    closeAllStreams();
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it('says the state in its headers, replays the conversation, then streams turns and activity live', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'echo', message: 'before' });
    await waitForTurn(api, id, 'assistant', 'echo: before');
    const stream = await SseStreamReader.open(url(id));
    expect(stream.status).to.equal(200);
    expect(stream.response.headers.get('content-type')).to.match(/^text\/event-stream/);
    expect(stream.response.headers.get('ctl-session-state')).to.equal('active');
    expect(stream.response.headers.get('ctl-session-status')).to.equal(null);
    const replay = await stream.until((f) => f.event === 'activity');
    const replayedTurns = replay.filter((f) => f.event === 'turn').map(data);
    expect(replayedTurns.map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'before'],
      ['assistant', 'echo: before'],
    ]);
    for (const frame of replay.filter((f) => f.event === 'turn')) expect(frame.id).to.equal(String(data(frame).seq));
    expect(data(replay.at(-1)!)).to.deep.equal({ activity: 'idle' });

    await deliver(api, id, 'live one');
    const live = await stream.until((f) => f.event === 'turn' && data(f).text === 'echo: live one');
    expect(live.map((f) => f.event)).to.include('activity');
    expect(live.filter((f) => f.event === 'activity').map((f) => data(f).activity)).to.include('in-turn');
    expect(live.filter((f) => f.event === 'turn').map((f) => data(f).text)).to.deep.equal([
      'live one',
      'echo: live one',
    ]);
    const ended = await stream.until((f) => f.event === 'activity');
    expect(data(ended.at(-1)!)).to.deep.equal({ activity: 'idle' });
  });

  it('format=raw sends every entry as a message frame; a reconnect by Last-Event-ID misses and repeats nothing', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'echo' });
    await deliver(api, id, 'first');
    await waitForTurn(api, id, 'assistant', 'echo: first');
    const stream = await SseStreamReader.open(url(id, '?format=raw&after_seq=0'));
    const frames = await stream.until((f) => f.event === 'message' && data(f).kind === 'turn_end');
    const messages = frames.filter((f) => f.event === 'message').map(data);
    expect(messages.map((m) => m.kind)).to.deep.equal(['start', 'user', 'assistant', 'turn_end']);
    expect(messages.map((m) => m.seq)).to.deep.equal([1, 2, 3, 4]);
    const lastId = frames.filter((f) => f.id !== undefined).at(-1)!.id!;
    stream.close();
    await deliver(api, id, 'second');
    await waitForTurn(api, id, 'assistant', 'echo: second');
    const resumed = await SseStreamReader.open(url(id, '?format=raw&after_seq=1'), { 'Last-Event-ID': lastId });
    const next = await resumed.until((f) => f.event === 'message' && data(f).kind === 'turn_end');
    const seqs = next.filter((f) => f.event === 'message').map((f) => data(f).seq);
    expect(seqs).to.deep.equal([5, 6, 7]);
  });

  it('pending and pending_cleared frames as a question is asked and answered', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'echo' });
    const stream = await SseStreamReader.open(url(id));
    await stream.until((f) => f.event === 'activity');
    await deliver(api, id, 'ask ready?');
    const asked = await stream.until((f) => f.event === 'pending');
    const pending = data(asked.at(-1)!);
    expect(pending).to.include({ kind: 'question', prompt: 'ready?' });
    await api.post(`/session/${id}/respond`, { action: 'answer', text: 'yes' });
    const cleared = await stream.until((f) => f.event === 'pending_cleared');
    expect(data(cleared.at(-1)!)).to.deep.equal({ request_id: pending.request_id });
    await stream.until((f) => f.event === 'turn' && data(f).text === 'answer: yes');
  });

  it('a session whose program is not running: CTL-Session-Status: stopped; a closed one: its snapshot, then the end', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'echo', message: 'hi' });
    await waitForTurn(api, id, 'assistant', 'echo: hi');
    await api.post(`/session/${id}/kill`);
    await waitUntil('asleep', async () => (await session(api, id)).state === 'asleep');
    const asleep = await SseStreamReader.open(url(id));
    expect(asleep.status).to.equal(200);
    expect(asleep.response.headers.get('ctl-session-state')).to.equal('asleep');
    expect(asleep.response.headers.get('ctl-session-status')).to.equal('stopped');
    // It stays open: a message wakes the session, and the stream shows it.
    await deliver(api, id, 'wake');
    await asleep.until((f) => f.event === 'turn' && data(f).text === 'echo: wake');
    asleep.close();

    await api.post(`/session/${id}/close`);
    const closed = await SseStreamReader.open(url(id));
    expect(closed.response.headers.get('ctl-session-state')).to.equal('closed');
    expect(closed.response.headers.get('ctl-session-status')).to.equal('stopped');
    const snapshot = await closed.drainToEnd();
    expect(snapshot.filter((f) => f.event === 'turn').map((f) => data(f).text)).to.include('echo: wake');
  });

  it('an open stream ends when its session is closed', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'echo' });
    const stream = await SseStreamReader.open(url(id));
    await stream.until((f) => f.event === 'activity');
    await api.post(`/session/${id}/close`);
    await stream.drainToEnd();
    expect(stream.ended).to.equal(true);
  });

  it('problems before any 200: an unknown session (404), a bad format (422), a malformed position (400)', async function () {
    const { api } = city;
    const unknown = await SseStreamReader.open(url('nope'));
    expect(unknown.status).to.equal(404);
    expect((await unknown.json()).code).to.equal('session-not-found');
    const id = await createSession(api, { name: 'echo' });
    const bad = await SseStreamReader.open(url(id, '?format=html'));
    expect(bad.status).to.equal(422);
    const position = await SseStreamReader.open(url(id, '?after_seq=abc'));
    expect(position.status).to.equal(400);
    expect((await position.json()).code).to.equal('invalid-cursor');
    const method = await fetch(url(id), { method: 'DELETE', headers: { 'X-CTL-Request': '1' } });
    expect(method.status).to.equal(405);
    expect(method.headers.get('allow')).to.equal('GET, HEAD');
  });
});
