import { appendFileSync, mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { execa } from 'execa';
import { expectProblem, readReply } from './helpers/city-api.js';
import { socketsOf } from './helpers/processes.js';
import { closeAllStreams, SseStreamReader, type SseFrame } from './helpers/sse.js';
import { CSRF, TestSupervisor, withSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// The event bus end to end: real supervisors and controllers, events injected through the public API
// (`POST /v0/city/{cityName}/events`) or by separate writer processes, read back through the city and
// supervisor streams (the city ones through the supervisor's proxy) and the city list.

const HEARTBEAT_MS = 250;
const SUPERVISOR = '__supervisor__';
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const APPEND_FIXTURE = fileURLToPath(new URL('./fixtures/append-events.mjs', import.meta.url));

interface Envelope {
  seq: number;
  type: string;
  ts: string;
  actor: string;
  subject?: string;
  message?: string;
  payload: Record<string, unknown>;
  city?: string;
}

interface NewEvent {
  type: string;
  actor?: string;
  subject?: string;
  message?: string;
  payload?: Record<string, unknown>;
}

function envelope(frame: SseFrame): Envelope {
  return JSON.parse(frame.data) as Envelope;
}

function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}

/** Compares long seq lists, reporting the first difference instead of a 10,000-line diff. */
function expectSeqs(actual: number[], expected: number[], what: string): void {
  let at = actual.findIndex((v, k) => v !== expected[k]);
  if (at < 0 && actual.length !== expected.length) at = Math.min(actual.length, expected.length);
  const around = (list: number[]) => JSON.stringify(list.slice(Math.max(0, at - 2), at + 3));
  expect(
    at,
    `${what}: first difference at index ${at}: got ${around(actual)}, expected ${around(expected)} ` +
      `(${actual.length} vs ${expected.length} items)`,
  ).to.equal(-1);
}

function seqsOf(frames: SseFrame[]): number[] {
  return frames.map((f) => envelope(f).seq);
}

function idsOf(frames: SseFrame[]): number[] {
  return frames.map((f) => Number(f.id));
}

/** A composite cursor as a map (the test's own parser: `name:seq` entries, comma-separated). */
function parseComposite(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const entry of text.split(',')) {
    const colon = entry.lastIndexOf(':');
    expect(colon, `cursor entry ${entry}`).to.be.greaterThan(0);
    const seq = entry.slice(colon + 1);
    expect(seq, `cursor entry ${entry}`).to.match(/^\d+$/);
    map.set(entry.slice(0, colon), Number(seq));
  }
  return map;
}

/** Entries sorted by name (byte order), joined by commas. */
function formatComposite(map: Map<string, number>): string {
  return [...map.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, seq]) => `${name}:${seq}`)
    .join(',');
}

/**
 * Follows the `id:` of supervisor-stream frames: each frame's id is the whole cursor after it, so exactly one
 * log's entry moves, to that event's seq. Returns which log the event came from.
 */
class CursorTracker {
  constructor(public position: Map<string, number>) {}

  take(frame: SseFrame): { scope: string; event: Envelope } {
    expect(frame.event).to.equal('tagged_event');
    expect(frame.id, 'a tagged_event frame carries an id').to.be.a('string');
    const event = envelope(frame);
    const next = parseComposite(frame.id!);
    expect(frame.id, 'cursor entries are sorted by name').to.equal(formatComposite(next));
    for (const [scope, seq] of this.position) {
      expect(next.has(scope), `cursor ${frame.id} keeps ${scope}`).to.equal(true);
      expect(next.get(scope)!, `cursor entry ${scope} never goes back`).to.be.at.least(seq);
    }
    const moved = [...next].filter(
      ([scope, seq]) => this.position.get(scope) !== seq && !(seq === 0 && !this.position.has(scope)),
    );
    expect(moved, `exactly one entry of ${frame.id} moved`).to.have.length(1);
    const [scope, seq] = moved[0];
    expect(seq, `the moved entry of ${frame.id} is the event's seq`).to.equal(event.seq);
    this.position = next;
    return { scope, event };
  }
}

async function expectStreamProblem(url: string, headers: Record<string, string>, status: number, prefix?: string) {
  const stream = await SseStreamReader.open(url, headers);
  try {
    return expectProblem(await readReply(stream.response), status, undefined, { detail: prefix, requestId: true });
  } finally {
    stream.close();
  }
}

async function emit(sup: TestSupervisor, city: string, event: NewEvent): Promise<number> {
  const { data, error, response } = await sup.api.POST('/v0/city/{cityName}/events', {
    params: { path: { cityName: city }, header: CSRF },
    body: { actor: 'test', ...event },
  });
  if (response.status !== 201 || !data) throw new Error(`emit ${response.status}: ${JSON.stringify(error)}`);
  return data.seq;
}

/** `count` events, one after another (so in seq order). */
async function emitSeries(sup: TestSupervisor, city: string, count: number, type = 'test.series'): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < count; i++) seqs.push(await emit(sup, city, { type, payload: { i } }));
  return seqs;
}

/** `count` events from `concurrency` parallel requests. */
async function emitParallel(
  sup: TestSupervisor,
  city: string,
  count: number,
  concurrency: number,
  make: (i: number) => NewEvent,
): Promise<void> {
  let next = 0;
  await Promise.all(
    range(1, concurrency).map(async () => {
      while (next < count) await emit(sup, city, make(next++));
    }),
  );
}

async function list(
  sup: TestSupervisor,
  city: string,
  query: Record<string, string | number> = {},
): Promise<{ res: Response; items: Envelope[]; total: number; next_cursor?: string; index: number }> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const res = await fetch(`${sup.base}/v0/city/${city}/events?${qs}`);
  if (res.status !== 200) throw new Error(`list ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { items: Envelope[]; total: number; next_cursor?: string };
  return { res, ...body, index: Number(res.headers.get('x-ctl-index')) };
}

async function cityHead(sup: TestSupervisor, city: string): Promise<number> {
  return (await list(sup, city, { limit: 1 })).index;
}

/** Every seq of a city's log, through the list's pages (newest first). */
async function listAll(sup: TestSupervisor, city: string, limit = 1000): Promise<number[]> {
  const seqs: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await list(sup, city, cursor ? { limit, cursor } : { limit });
    seqs.push(...page.items.map((e) => e.seq));
    cursor = page.next_cursor;
  } while (cursor);
  return seqs;
}

async function supervisorCursor(sup: TestSupervisor): Promise<string> {
  const { data } = await sup.api.GET('/v0/events', { params: { query: { limit: 1 } } });
  return data!.event_cursor;
}

function cityStreamUrl(sup: TestSupervisor, city: string, query = ''): string {
  return `${sup.base}/v0/city/${city}/events/stream${query}`;
}

function supervisorStreamUrl(sup: TestSupervisor, query = ''): string {
  return `${sup.base}/v0/events/stream${query}`;
}

async function openStream(
  url: string,
  headers: Record<string, string> = {},
  options: { ownConnection?: boolean } = {},
): Promise<SseStreamReader> {
  const stream = await SseStreamReader.open(url, headers, options);
  if (stream.status !== 200) throw new Error(`${url}: ${stream.status} ${JSON.stringify(await stream.json())}`);
  return stream;
}

/**
 * Reads non-heartbeat frames until one has seq `last` (per `seqOf`; frames it maps to undefined are left out),
 * or until nothing arrives for `stallMs`; returns the frames read, for `expectSeqs` to compare.
 */
async function framesUntil(
  stream: SseStreamReader,
  last: number,
  seqOf: (frame: SseFrame) => number | undefined,
  stallMs = 3_000,
): Promise<SseFrame[]> {
  const frames: SseFrame[] = [];
  let seq: number | undefined;
  while (seq !== last) {
    let frame: SseFrame | undefined;
    try {
      frame = await stream.nextEvent(stallMs);
    } catch {
      break; // stalled: what is missing shows in the comparison
    }
    if (!frame) break;
    seq = seqOf(frame);
    if (seq !== undefined) frames.push(frame);
  }
  return frames;
}

async function seqsUntil(
  stream: SseStreamReader,
  last: number,
  seqOf: (frame: SseFrame) => number | undefined,
): Promise<number[]> {
  return (await framesUntil(stream, last, seqOf)).map((f) => seqOf(f)!);
}

/** Creates a city unless it exists, and waits until it runs. */
async function ensureCity(sup: TestSupervisor, name: string): Promise<void> {
  if (!(await sup.city(name))) await sup.createCity(name);
  await waitUntil(`${name} to run`, async () => (await sup.city(name))?.running);
}

function eventsPath(sup: TestSupervisor, city: string): string {
  return join(sup.cityDir(city), '.ctl', 'events.jsonl');
}

/**
 * A HEAD request with a GET of `/health` pipelined behind it on one connection: the two responses' heads (status
 * line and headers) and the bytes that came after each. The server answers the GET only once it has finished
 * the HEAD response, so a stream left open would never let it through.
 */
async function headThenHealth(url: string): Promise<string[]> {
  const target = new URL(url);
  const socket = connect({ host: target.hostname, port: Number(target.port) });
  try {
    socket.write(
      `HEAD ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n\r\n` +
        `GET /health HTTP/1.1\r\nHost: ${target.host}\r\nConnection: close\r\n\r\n`,
    );
    let text = '';
    for await (const chunk of socket) text += (chunk as Buffer).toString();
    return text.split(/(?=HTTP\/1\.1 )/);
  } finally {
    socket.destroy();
  }
}

describe('event streams and the city event list', function () {
  this.timeout(60_000);

  afterEach(function () {
    closeAllStreams();
  });

  describe('city stream: GET /v0/city/{cityName}/events/stream (through the supervisor proxy)', function () {
    let sup: TestSupervisor;
    const city = 'alpha';
    const url = (query = '') => cityStreamUrl(sup, city, query);

    withSupervisor(
      async (started) => {
        sup = started;
        await sup.createCity(city);
      },
      { env: { CTL_SSE_HEARTBEAT_MS: String(HEARTBEAT_MS) } },
    );

    it('commits 200 and the SSE headers before any event exists, then one `event` frame per event', async function () {
      const stream = await SseStreamReader.open(url());
      // fetch resolved on the headers alone: nothing has been recorded since the stream opened.
      expect(stream.status).to.equal(200);
      expect(stream.response.headers.get('content-type')).to.match(/^text\/event-stream/);
      expect(stream.response.headers.get('cache-control')).to.equal('no-cache');
      expect(stream.response.headers.get('x-ctl-request-id')).to.match(/^[0-9a-f]{16}$/);

      const plain = await emit(sup, city, { type: 'test.plain' });
      const full = await emit(sup, city, {
        type: 'test.full',
        subject: 'the-subject',
        message: 'a message',
        payload: { nested: { key: 'value' }, n: 1 },
      });
      const frames = await stream.events(2);
      expect(frames.map((f) => f.event)).to.deep.equal(['event', 'event']);
      expect(idsOf(frames)).to.deep.equal([plain, full]);
      expect(frames.map((f) => f.id)).to.deep.equal([String(plain), String(full)]);
      const [a, b] = frames.map(envelope);
      // payload is always present, `{}` when the event had none; no `city` on the city stream.
      expect(a).to.deep.equal({ seq: plain, type: 'test.plain', ts: a.ts, actor: 'test', payload: {} });
      expect(a.ts).to.match(RFC3339_UTC);
      expect(b).to.deep.equal({
        seq: full,
        type: 'test.full',
        ts: b.ts,
        actor: 'test',
        subject: 'the-subject',
        message: 'a message',
        payload: { nested: { key: 'value' }, n: 1 },
      });
    });

    it('answers HEAD with the stream headers and ends at once', async function () {
      const [head, next] = await headThenHealth(url());
      expect(head).to.match(/^HTTP\/1\.1 200 /);
      expect(head).to.match(/\r\ncontent-type: text\/event-stream/i);
      expect(head).to.match(/\r\nx-ctl-request-id: [0-9a-f]{16}\r\n/i);
      expect(head).to.match(/\r\n\r\n$/); // no body
      expect(next).to.match(/^HTTP\/1\.1 200 /);
    });

    it('resumes exclusively after `after_seq=N` and after `Last-Event-ID: N`, then continues live', async function () {
      const [, s2, s3, s4] = await emitSeries(sup, city, 4, 'test.resume');
      const byQuery = await openStream(url(`?after_seq=${s2}`));
      const byHeader = await openStream(url(), { 'Last-Event-ID': String(s3) });
      expect(idsOf(await byQuery.events(2))).to.deep.equal([s3, s4]);
      expect(idsOf(await byHeader.events(1))).to.deep.equal([s4]);
      // Nothing repeated or left out when the stream turns live: the next event is the next frame.
      const s5 = await emit(sup, city, { type: 'test.resume.live' });
      expect(idsOf(await byQuery.events(1))).to.deep.equal([s5]);
      expect(idsOf(await byHeader.events(1))).to.deep.equal([s5]);
      // Resuming at the head replays nothing.
      const atHead = await openStream(url(`?after_seq=${s5}`));
      const s6 = await emit(sup, city, { type: 'test.resume.head' });
      expect(idsOf(await atHead.events(1))).to.deep.equal([s6]);
    });

    it('lets `Last-Event-ID` win over `after_seq`, whichever is older', async function () {
      const [s1, s2, s3, s4] = await emitSeries(sup, city, 4, 'test.precedence');
      const newerHeader = await openStream(url(`?after_seq=${s1}`), { 'Last-Event-ID': String(s3) });
      expect(idsOf(await newerHeader.events(1))).to.deep.equal([s4]);
      const olderHeader = await openStream(url(`?after_seq=${s3}`), { 'Last-Event-ID': String(s1) });
      expect(idsOf(await olderHeader.events(3))).to.deep.equal([s2, s3, s4]);
    });

    it('starts at the head without a position: only events recorded after connecting', async function () {
      await emit(sup, city, { type: 'test.before-connect' });
      const stream = await openStream(url());
      const after = await emit(sup, city, { type: 'test.after-connect' });
      const [frame] = await stream.events(1);
      expect(frame.id).to.equal(String(after));
      expect(envelope(frame).type).to.equal('test.after-connect');
    });

    it('replays the whole log from seq 1 with `after_seq=0`', async function () {
      const head = await cityHead(sup, city);
      const stream = await openStream(url('?after_seq=0'));
      const frames = await stream.events(head);
      expect(idsOf(frames)).to.deep.equal(range(1, head));
      expect(seqsOf(frames)).to.deep.equal(range(1, head));
      expect(envelope(frames[0])).to.include({ seq: 1, type: 'city.created', subject: city });
      const next = await emit(sup, city, { type: 'test.after-replay' });
      expect(idsOf(await stream.events(1))).to.deep.equal([next]);
    });

    it('answers a malformed position with a 400 problem, never a 200', async function () {
      for (const [query, headers] of [
        ['?after_seq=abc', {}],
        ['?after_seq=-1', {}],
        ['?after_seq=1.5', {}],
        ['', { 'Last-Event-ID': 'x' }],
        ['?after_seq=1', { 'Last-Event-ID': 'x' }],
      ] as [string, Record<string, string>][]) {
        await expectStreamProblem(url(query), headers, 400);
      }
    });

    it('sends heartbeats: `event: heartbeat`, no id, data {"timestamp"} in UTC whole seconds', async function () {
      const stream = await openStream(url());
      const heartbeats: SseFrame[] = [];
      while (heartbeats.length < 2) {
        const frame = await stream.next();
        expect(frame, 'the stream stays open').to.not.equal(undefined);
        if (frame!.event === 'heartbeat') heartbeats.push(frame!);
      }
      for (const heartbeat of heartbeats) {
        expect(heartbeat.id).to.equal(undefined);
        const data = JSON.parse(heartbeat.data) as Record<string, unknown>;
        expect(Object.keys(data)).to.deep.equal(['timestamp']);
        expect(data.timestamp).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      }
    });
  });

  describe('supervisor stream: GET /v0/events/stream', function () {
    let sup: TestSupervisor;
    const url = (query = '') => supervisorStreamUrl(sup, query);

    withSupervisor(
      (started) => {
        sup = started;
      },
      { env: { CTL_SSE_HEARTBEAT_MS: String(HEARTBEAT_MS) } },
    );

    it('answers 503 no_providers before the first city, and never after the 202 of POST /v0/city', async function () {
      await expectStreamProblem(url(), {}, 503, 'no_providers: ');
      await expectStreamProblem(url('?after_cursor=0'), {}, 503, 'no_providers: ');

      const dir = sup.cityDir('alpha');
      const { data, response } = await sup.api.POST('/v0/city', {
        params: { header: CSRF },
        body: { dir, start_command: 'sleep 3600' },
      });
      expect(response.status).to.equal(202);
      const { request_id: requestId, event_cursor: cursor } = data!;
      const start = parseComposite(cursor);
      expect(start.get('alpha')).to.equal(0);
      expect(start.has(SUPERVISOR)).to.equal(true);

      // Right after the 202, with or without a position: always a stream.
      const [fromCursor, fromHead, fromZero] = await Promise.all([
        SseStreamReader.open(url(`?after_cursor=${encodeURIComponent(cursor)}`)),
        SseStreamReader.open(url()),
        SseStreamReader.open(url('?after_cursor=0')),
      ]);
      expect([fromCursor.status, fromHead.status, fromZero.status]).to.deep.equal([200, 200, 200]);

      const tracker = new CursorTracker(start);
      const frames = await fromCursor.until((f) => {
        const e = envelope(f);
        return e.type === 'request.result.city.create' && e.payload.request_id === requestId;
      });
      const events = frames.map((f) => tracker.take(f));
      const created = events.findIndex((e) => e.event.type === 'city.created');
      expect(created, 'city.created arrives before the terminal event').to.be.within(0, events.length - 2);
      expect(events[created].scope).to.equal('alpha');
      expect(events[created].event).to.include({ seq: 1, city: 'alpha', subject: 'alpha' });
      expect(events[created].event.payload).to.deep.equal({ name: 'alpha', path: dir });
      const terminal = events.at(-1)!;
      expect(terminal.scope).to.equal(SUPERVISOR);
      expect(terminal.event.city).to.equal('alpha');
      expect(terminal.event.payload).to.include({ request_id: requestId, name: 'alpha' });
      expect(events.filter((e) => e.event.payload.request_id === requestId)).to.have.length(1);

      // And from then on, however it is asked.
      for (const query of ['', '?after_cursor=0', `?after_cursor=${encodeURIComponent(cursor)}`]) {
        const again = await SseStreamReader.open(url(query));
        expect(again.status).to.equal(200);
        again.close();
      }
    });

    describe('with cities alpha and bravo', function () {
      before(async function () {
        await ensureCity(sup, 'alpha');
        await ensureCity(sup, 'bravo');
      });

      it('sends `tagged_event` frames whose id is the whole composite cursor after the event', async function () {
        const start = parseComposite(await supervisorCursor(sup));
        const stream = await openStream(url());
        expect(stream.response.headers.get('content-type')).to.match(/^text\/event-stream/);
        expect(stream.response.headers.get('cache-control')).to.equal('no-cache');
        expect(stream.response.headers.get('x-ctl-request-id')).to.match(/^[0-9a-f]{16}$/);
        const a = await emit(sup, 'alpha', { type: 'test.tagged', payload: { k: 'a' } });
        const [fa] = await stream.events(1);
        const b = await emit(sup, 'bravo', { type: 'test.tagged' });
        const [fb] = await stream.events(1);

        expect([fa.event, fb.event]).to.deep.equal(['tagged_event', 'tagged_event']);
        const expected = new Map(start).set('alpha', a);
        expect(fa.id).to.equal(formatComposite(expected));
        expected.set('bravo', b);
        expect(fb.id).to.equal(formatComposite(expected));
        expect(fb.id).to.match(/^__supervisor__:\d+,alpha:\d+,bravo:\d+$/);
        const ea = envelope(fa);
        expect(ea).to.deep.equal({
          seq: a,
          type: 'test.tagged',
          ts: ea.ts,
          actor: 'test',
          payload: { k: 'a' },
          city: 'alpha',
        });
        expect(envelope(fb)).to.include({ seq: b, city: 'bravo', type: 'test.tagged' });
        expect(envelope(fb).payload).to.deep.equal({});
      });

      it('round-trips a received id: resuming by `Last-Event-ID` or `after_cursor` gives exactly what followed it', async function () {
        const start = await supervisorCursor(sup);
        const live = await openStream(url(`?after_cursor=${encodeURIComponent(start)}`));
        const tracker = new CursorTracker(parseComposite(start));
        const a1 = await emit(sup, 'alpha', { type: 'test.roundtrip' });
        const [f1] = await live.events(1);
        const b1 = await emit(sup, 'bravo', { type: 'test.roundtrip' });
        const [f2] = await live.events(1);
        const a2 = await emit(sup, 'alpha', { type: 'test.roundtrip' });
        const [f3] = await live.events(1);
        expect([f1, f2, f3].map((f) => tracker.take(f)).map((e) => `${e.scope}:${e.event.seq}`)).to.deep.equal([
          `alpha:${a1}`,
          `bravo:${b1}`,
          `alpha:${a2}`,
        ]);

        const byHeader = await openStream(url(), { 'Last-Event-ID': f1.id! });
        const byQuery = await openStream(url(`?after_cursor=${encodeURIComponent(f1.id!)}`));
        for (const resumed of [byHeader, byQuery]) {
          const frames = await resumed.events(2);
          const t = new CursorTracker(parseComposite(f1.id!));
          expect(frames.map((f) => t.take(f)).map((e) => `${e.scope}:${e.event.seq}`)).to.have.members([
            `bravo:${b1}`,
            `alpha:${a2}`,
          ]);
          // After both, the resumed stream is exactly where the live one is.
          expect(frames[1].id).to.equal(f3.id);
        }
        // Nothing else was pending on them: the next frame is the next event.
        const b2 = await emit(sup, 'bravo', { type: 'test.roundtrip.next' });
        for (const stream of [live, byHeader, byQuery]) {
          const [next] = await stream.events(1);
          expect(envelope(next)).to.include({ city: 'bravo', seq: b2 });
          expect(next.id).to.equal(formatComposite(parseComposite(f3.id!).set('bravo', b2)));
        }
      });

      it('lets `Last-Event-ID` win over `after_cursor`, whichever is older', async function () {
        const start = await supervisorCursor(sup);
        const live = await openStream(url(`?after_cursor=${encodeURIComponent(start)}`));
        const a1 = await emit(sup, 'alpha', { type: 'test.precedence' });
        const [f1] = await live.events(1);
        const a2 = await emit(sup, 'alpha', { type: 'test.precedence' });
        await live.events(1);

        const newerHeader = await openStream(url(`?after_cursor=${encodeURIComponent(start)}`), {
          'Last-Event-ID': f1.id!,
        });
        expect(seqsOf(await newerHeader.events(1))).to.deep.equal([a2]);
        const olderHeader = await openStream(url(`?after_cursor=${encodeURIComponent(f1.id!)}`), {
          'Last-Event-ID': start,
        });
        expect(seqsOf(await olderHeader.events(2))).to.deep.equal([a1, a2]);
      });

      it('replays every log from its first event with the literal cursor `0` (query or header)', async function () {
        const heads = parseComposite(await supervisorCursor(sup));
        expect([...heads.keys()]).to.have.members([SUPERVISOR, 'alpha', 'bravo']);
        for (const [query, headers] of [
          ['?after_cursor=0', {}],
          ['', { 'Last-Event-ID': '0' }],
        ] as [string, Record<string, string>][]) {
          const stream = await openStream(url(query), headers);
          const tracker = new CursorTracker(new Map());
          const seen = new Map<string, number[]>([...heads.keys()].map((k) => [k, []]));
          const total = [...heads.values()].reduce((sum, n) => sum + n, 0);
          for (const frame of await stream.events(total)) {
            const { scope, event } = tracker.take(frame);
            seen.get(scope)!.push(event.seq);
          }
          for (const [scope, head] of heads) expect(seen.get(scope), scope).to.deep.equal(range(1, head));
          stream.close();
        }
      });

      it('starts a log the cursor does not name at its head', async function () {
        const heads = parseComposite(await supervisorCursor(sup));
        const alphaHead = heads.get('alpha')!;
        // Only alpha named, one event back: alpha replays that one; bravo and the supervisor log start at their heads.
        const stream = await openStream(url(`?after_cursor=alpha:${alphaHead - 1}`));
        const [first] = await stream.events(1);
        expect(envelope(first)).to.include({ city: 'alpha', seq: alphaHead });
        expect(first.id).to.equal(formatComposite(heads));
        const b = await emit(sup, 'bravo', { type: 'test.unnamed' });
        const [second] = await stream.events(1);
        expect(envelope(second)).to.include({ city: 'bravo', seq: b, type: 'test.unnamed' });
        expect(second.id).to.equal(formatComposite(new Map(heads).set('bravo', b)));
      });

      it('answers a malformed cursor with a 400 problem, never a 200', async function () {
        for (const bad of ['alpha:x', 'alpha', ':5', 'alpha:1,bravo:-2', 'alpha:1,,bravo:2']) {
          await expectStreamProblem(url(`?after_cursor=${encodeURIComponent(bad)}`), {}, 400);
          await expectStreamProblem(url(), { 'Last-Event-ID': bad }, 400);
        }
      });

      it('answers HEAD with the stream headers and ends at once', async function () {
        const [head, next] = await headThenHealth(url());
        expect(head).to.match(/^HTTP\/1\.1 200 /);
        expect(head).to.match(/\r\ncontent-type: text\/event-stream/i);
        expect(head).to.match(/\r\n\r\n$/); // no body
        expect(next).to.match(/^HTTP\/1\.1 200 /);
      });

      it('sends heartbeats without an id', async function () {
        const stream = await openStream(url());
        let heartbeat: SseFrame | undefined;
        while (!heartbeat) {
          const frame = await stream.next();
          expect(frame, 'the stream stays open').to.not.equal(undefined);
          if (frame!.event === 'heartbeat') heartbeat = frame;
        }
        expect(heartbeat.id).to.equal(undefined);
        expect(JSON.parse(heartbeat.data)).to.have.all.keys('timestamp');
        expect(JSON.parse(heartbeat.data).timestamp).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      });

      it('lets a city created while a stream is open join that stream from its first event', async function () {
        const start = parseComposite(await supervisorCursor(sup));
        const stream = await openStream(url());
        const tracker = new CursorTracker(start);
        const { request_id: requestId } = await sup.createCity('charlie');
        const charlie: Envelope[] = [];
        let terminal: Envelope | undefined;
        await stream.until((f) => {
          const { scope, event } = tracker.take(f);
          if (scope === 'charlie') charlie.push(event);
          if (event.type === 'request.result.city.create' && event.payload.request_id === requestId) terminal = event;
          return terminal !== undefined && charlie.some((e) => e.type === 'controller.started');
        });
        expect(charlie[0]).to.include({ seq: 1, type: 'city.created', city: 'charlie', subject: 'charlie' });
        expect(charlie.map((e) => e.seq)).to.deep.equal(range(1, charlie.length));
        expect(terminal!.city).to.equal('charlie');
        // Live from then on, like every other log.
        const c = await emit(sup, 'charlie', { type: 'test.joined' });
        const [next] = await stream.events(1);
        expect(tracker.take(next)).to.deep.include({ scope: 'charlie' });
        expect(envelope(next).seq).to.equal(c);
      });
    });
  });

  describe('city list: GET /v0/city/{cityName}/events', function () {
    let sup: TestSupervisor;
    const city = 'alpha';

    withSupervisor(async (started) => {
      sup = started;
      await sup.createCity(city);
    });

    it('lists newest first, with X-CTL-Index = head = the number of events (right after creation)', async function () {
      const page = await list(sup, city, { limit: 1000 });
      expect(page.res.headers.get('x-ctl-index')).to.match(/^\d+$/);
      expect(page.index).to.be.greaterThan(0);
      expect(page.items.map((e) => e.seq)).to.deep.equal(range(1, page.index).reverse());
      expect(page.total).to.equal(page.index);
      expect(page.next_cursor).to.equal(undefined);
      expect(page.items.at(-1)).to.include({ seq: 1, type: 'city.created' });
      for (const item of page.items) expect(item.payload).to.be.an('object');
    });

    it('pages 100 by default and at most 1000 (more is a 422)', async function () {
      await emitParallel(sup, city, 150, 8, (i) => ({ type: 'test.page', payload: { i } }));
      const head = await cityHead(sup, city);
      const page = await list(sup, city);
      expect(page.items.map((e) => e.seq)).to.deep.equal(range(head - 99, head).reverse());
      expect(page.next_cursor).to.be.a('string');
      expect(page.total).to.equal(head);
      for (const limit of ['1001', '-1']) {
        expectProblem(
          await readReply(await fetch(`${sup.base}/v0/city/${city}/events?limit=${limit}`)),
          422,
          undefined,
          { requestId: true },
        );
      }
      expect((await list(sup, city, { limit: 1000 })).items).to.have.length(head);
    });

    it('records custom events only: a type ctl records itself is a 422 naming body.type, and nothing is written', async function () {
      const head = await cityHead(sup, city);
      for (const type of ['bead.created', 'controller.crashed', 'request.failed']) {
        const res = await fetch(`${sup.base}/v0/city/${city}/events`, {
          method: 'POST',
          headers: { ...CSRF, 'Content-Type': 'application/json' },
          body: JSON.stringify({ type, actor: 'test', payload: { bead: 'not a bead' } }),
        });
        const problem = expectProblem(await readReply(res), 422, undefined, { requestId: true });
        expect(problem.errors?.map((e) => e.location)).to.deep.equal(['body.type']);
      }
      expect(await cityHead(sup, city)).to.equal(head);
    });

    it('answers a bad `since` with a 400, and filters by a good one', async function () {
      for (const since of ['bogus', '5d', '10']) {
        expectProblem(
          await readReply(await fetch(`${sup.base}/v0/city/${city}/events?since=${since}`)),
          400,
          undefined,
          { requestId: true },
        );
      }
      const head = await cityHead(sup, city);
      const recent = await list(sup, city, { since: '1h', limit: 1000 });
      expect(recent.items.map((e) => e.seq)).to.deep.equal(range(1, head).reverse());
      const future = await list(sup, city, { since: '0s', limit: 1000 });
      expect(future.items.length).to.be.at.most(1);
    });

    it('answers a cursor it did not issue with a 400 `invalid-cursor`', async function () {
      const token = (value: unknown) => 'v1:' + Buffer.from(JSON.stringify(value)).toString('base64url');
      for (const cursor of [
        'garbage',
        'v1:!!!',
        token({ k: 'ts', s: 5 }),
        token({ k: 'sq', s: 0 }),
        token({ k: 'sq' }),
      ]) {
        const res = await fetch(`${sup.base}/v0/city/${city}/events?cursor=${encodeURIComponent(cursor)}`);
        const problem = expectProblem(await readReply(res), 400, undefined, { requestId: true });
        expect(problem.code, cursor).to.equal('invalid-cursor');
      }
    });

    it('pages by keyset while events are appended: no event skipped or repeated', async function () {
      await emitParallel(sup, city, 200, 8, (i) => ({ type: 'test.keyset.seed', payload: { i } }));
      let appending = true;
      const appender = (async () => {
        while (appending) await emit(sup, city, { type: 'test.keyset.concurrent' });
      })();
      const seen: number[] = [];
      let pages = 0;
      try {
        let cursor: string | undefined;
        do {
          const page = await list(sup, city, cursor ? { limit: 25, cursor } : { limit: 25 });
          seen.push(...page.items.map((e) => e.seq));
          cursor = page.next_cursor;
          pages++;
          // At least one event lands between any two pages.
          await emit(sup, city, { type: 'test.keyset.between' });
        } while (cursor);
      } finally {
        appending = false;
        await appender;
      }
      expect(pages).to.be.greaterThan(10);
      expect(seen).to.deep.equal(range(1, seen[0]).reverse());
    });

    it('blocks on `index=<head>&wait=5s` until a new event is recorded, and returns it', async function () {
      const head = await cityHead(sup, city);
      const pending = list(sup, city, { index: head, wait: '5s', limit: 5 });
      // The blocking list is sent before a later request over the same path has been answered: by then it
      // waits at the controller, and the event below comes after it.
      expect(await cityHead(sup, city)).to.equal(head);
      const seq = await emit(sup, city, { type: 'test.wakeup' });
      const page = await pending;
      expect(seq).to.equal(head + 1);
      expect(page.index).to.equal(head + 1);
      expect(page.items[0]).to.include({ seq: head + 1, type: 'test.wakeup' });
      // An index already behind the head answers at once with what is there.
      const behind = await list(sup, city, { index: head - 1, wait: '5s', limit: 1 });
      expect(behind.items[0]).to.include({ seq: head + 1 });
    });

    it('returns after the wait when nothing new arrives (and `wait` without `index` does not block)', async function () {
      const head = await cityHead(sup, city);
      const waited = await list(sup, city, { index: head, wait: '300ms', limit: 3 });
      expect(waited.index).to.equal(head);
      expect(waited.items.map((e) => e.seq)).to.deep.equal([head, head - 1, head - 2]);
      const alone = await list(sup, city, { wait: '300ms', limit: 1 });
      expect(alone.index).to.equal(head);
    });

    it('answers a bad `wait` or `index` with a 422', async function () {
      const head = await cityHead(sup, city);
      for (const query of [`index=${head}&wait=bogus`, `index=${head}&wait=-5s`, `index=${head}&wait=0`, 'index=abc']) {
        expectProblem(await readReply(await fetch(`${sup.base}/v0/city/${city}/events?${query}`)), 422, undefined, {
          requestId: true,
        });
      }
    });
  });

  describe('torn and garbage lines in events.jsonl', function () {
    let sup: TestSupervisor;
    const city = 'tango';

    withSupervisor(async (started) => {
      sup = started;
      await sup.createCity(city);
    });

    it('are skipped by lists and streams, and the next event still gets the next seq', async function () {
      const head = await cityHead(sup, city);
      const cityLive = await openStream(cityStreamUrl(sup, city));
      const supLive = await openStream(supervisorStreamUrl(sup));
      const now = new Date().toISOString();
      appendFileSync(
        eventsPath(sup, city),
        [
          'this is not json',
          '',
          '[1,2,3]',
          '{"seq":"7","type":"bad.seq","ts":"' + now + '","actor":"x"}',
          '{"seq":0,"type":"zero.seq","ts":"' + now + '","actor":"x"}',
          '{"seq":' + (head + 1) + ',"type":"torn.line","ts":"' + now.slice(0, 10),
        ].join('\n'),
      );
      const before = await list(sup, city, { limit: 1000 });
      expect(before.index).to.equal(head);
      expect(before.items.map((e) => e.seq)).to.deep.equal(range(1, head).reverse());

      const seq = await emit(sup, city, { type: 'test.after-garbage' });
      expect(seq).to.equal(head + 1);
      const [fromCity] = await cityLive.events(1);
      expect(fromCity.id).to.equal(String(head + 1));
      expect(envelope(fromCity).type).to.equal('test.after-garbage');
      const [fromSup] = await supLive.events(1);
      expect(envelope(fromSup)).to.include({ city, seq: head + 1, type: 'test.after-garbage' });

      const after = await list(sup, city, { limit: 1000 });
      expect(after.index).to.equal(head + 1);
      expect(after.items.map((e) => e.seq)).to.deep.equal(range(1, head + 1).reverse());
      expect(after.items[0].type).to.equal('test.after-garbage');
      // The torn fragment stayed on a line of its own: the new record is intact in the file.
      const lines = readFileSync(eventsPath(sup, city), 'utf8').split('\n');
      expect(lines.at(-1)).to.equal('');
      expect(JSON.parse(lines.at(-2)!)).to.include({ seq: head + 1, type: 'test.after-garbage' });

      const next = await emit(sup, city, { type: 'test.after-garbage.2' });
      expect(next).to.equal(head + 2);
      const replay = await openStream(cityStreamUrl(sup, city, '?after_seq=0'));
      expect(idsOf(await replay.events(head + 2))).to.deep.equal(range(1, head + 2));
      const supReplay = await openStream(supervisorStreamUrl(sup, `?after_cursor=${city}:0`));
      expect(seqsOf(await supReplay.events(head + 2))).to.deep.equal(range(1, head + 2));
    });

    it('delivers a line written in two pieces once, when its newline arrives', async function () {
      const head = await cityHead(sup, city);
      const cityLive = await openStream(cityStreamUrl(sup, city));
      const supLive = await openStream(supervisorStreamUrl(sup));
      const ts = new Date().toISOString();
      const whole = JSON.stringify({ seq: head + 1, type: 'test.before-split', ts, actor: 'test' });
      const line = JSON.stringify({ seq: head + 2, type: 'test.split', ts, actor: 'test' });
      // A whole record and the first piece of the next, in one write: once a stream has delivered the whole
      // record, its reader has read the piece too, and holds it.
      appendFileSync(eventsPath(sup, city), whole + '\n' + line.slice(0, 25));
      expect(idsOf(await cityLive.events(1))).to.deep.equal([head + 1]);
      expect(seqsOf(await supLive.events(1))).to.deep.equal([head + 1]);
      appendFileSync(eventsPath(sup, city), line.slice(25) + '\n');
      const [fromCity] = await cityLive.events(1);
      expect(fromCity.id).to.equal(String(head + 2));
      expect(envelope(fromCity)).to.deep.include({ seq: head + 2, type: 'test.split', payload: {} });
      const [fromSup] = await supLive.events(1);
      expect(envelope(fromSup)).to.include({ city, seq: head + 2, type: 'test.split' });
      const next = await emit(sup, city, { type: 'test.after-split' });
      expect(next).to.equal(head + 3);
      expect(idsOf(await cityLive.events(1))).to.deep.equal([head + 3]);
      expect(seqsOf(await supLive.events(1))).to.deep.equal([head + 3]);
    });
  });

  describe('rotation: POST /v0/city/{cityName}/events/rotate and the size threshold', function () {
    let sup: TestSupervisor;
    const city = 'rotor';

    before(async function () {
      sup = await TestSupervisor.start();
      await sup.createCity(city);
      // These tests read every event back across dozens of archives: keep them all.
      appendFileSync(join(sup.cityDir(city), 'city.toml'), '\n[events]\nmax_archives = 1000\n');
      await waitUntil('the retention to be taken', async () => {
        const res = await fetch(`${sup.base}/v0/city/${city}/events?type=config.reloaded`);
        return ((await res.json()) as { items: unknown[] }).items.length > 0;
      });
    });

    after(async function () {
      await sup?.cleanup();
    });

    async function rotate(name: string, wait = false) {
      const res = await fetch(`${sup.base}/v0/city/${name}/events/rotate${wait ? '?wait=true' : ''}`, {
        method: 'POST',
        headers: CSRF,
      });
      expect(res.status).to.equal(200);
      return (await res.json()) as {
        rotated: boolean;
        reason?: string;
        archive?: { path: string; first_seq: number; last_seq: number; compression_status: string };
        anchor_event?: { seq: number; type: string; ts: string };
      };
    }

    it('keeps live city and supervisor streams going: the anchor, then new events, no gap or repeat', async function () {
      const h0 = await cityHead(sup, city);
      const cityLive = await openStream(cityStreamUrl(sup, city));
      const supLive = await openStream(supervisorStreamUrl(sup));

      await emitSeries(sup, city, 5, 'test.before-rotation');
      const first = await rotate(city);
      expect(first.rotated).to.equal(true);
      expect(first.archive).to.include({ first_seq: 1, last_seq: h0 + 5 });
      expect(first.archive!.compression_status).to.be.oneOf(['pending', 'complete']);
      expect(first.anchor_event).to.include({ seq: h0 + 6, type: 'events.rotated' });
      expect(first.anchor_event!.ts).to.match(RFC3339_UTC);

      expect(await emitSeries(sup, city, 5, 'test.between-rotations')).to.deep.equal(range(h0 + 7, h0 + 11));
      const second = await rotate(city, true);
      expect(second.rotated).to.equal(true);
      expect(second.archive).to.include({ first_seq: h0 + 6, last_seq: h0 + 11, compression_status: 'complete' });
      expect(second.anchor_event).to.include({ seq: h0 + 12, type: 'events.rotated' });
      expect(await emitSeries(sup, city, 5, 'test.after-rotations')).to.deep.equal(range(h0 + 13, h0 + 17));

      const frames = await cityLive.events(17);
      expect(idsOf(frames)).to.deep.equal(range(h0 + 1, h0 + 17));
      const anchors = frames.map(envelope).filter((e) => e.type === 'events.rotated');
      expect(anchors.map((e) => e.seq)).to.deep.equal([h0 + 6, h0 + 12]);
      expect(anchors[0].payload).to.include({ prior_first_seq: 1, prior_last_seq: h0 + 5 });
      expect(anchors[1].payload).to.include({ prior_first_seq: h0 + 6, prior_last_seq: h0 + 11 });
      expect(anchors[1].payload.prior_archive).to.equal(second.archive!.path);

      const tagged = (await supLive.until((f) => envelope(f).city === city && envelope(f).seq === h0 + 17))
        .map(envelope)
        .filter((e) => e.city === city);
      expect(tagged.map((e) => e.seq)).to.deep.equal(range(h0 + 1, h0 + 17));
      expect(tagged[5].type).to.equal('events.rotated');
    });

    it('loses nothing on live streams when rotations and appends arrive together', async function () {
      const h0 = await cityHead(sup, city);
      const cityLive = await openStream(cityStreamUrl(sup, city));
      const supLive = await openStream(supervisorStreamUrl(sup));
      let anchors = 0;
      for (let round = 0; round < 20; round++) {
        const results = await Promise.all([
          rotate(city),
          emit(sup, city, { type: 'test.race', payload: { round } }),
          rotate(city),
          emit(sup, city, { type: 'test.race', payload: { round } }),
          rotate(city),
        ]);
        const rotations = results.filter((r) => typeof r === 'object' && 'rotated' in r) as {
          rotated: boolean;
          reason?: string;
        }[];
        expect(rotations).to.have.length(3);
        // A rotation finding nothing new since the last one (only its anchor) archives nothing, and says so.
        for (const r of rotations.filter((x) => !x.rotated))
          expect(r.reason).to.equal('nothing new since the last rotation');
        anchors += rotations.filter((r) => r.rotated).length;
      }
      const head = await cityHead(sup, city);
      expect(head).to.equal(h0 + 40 + anchors);
      expectSeqs(await seqsUntil(cityLive, head, (f) => Number(f.id)), range(h0 + 1, head), 'city stream seqs');
      expectSeqs(
        await seqsUntil(supLive, head, (f) => (envelope(f).city === city ? envelope(f).seq : undefined)),
        range(h0 + 1, head),
        'supervisor stream seqs',
      );
      // What the live streams show, lists and replays show too.
      expectSeqs(await listAll(sup, city, 30), range(1, head).reverse(), 'listed seqs');
      const replay = await openStream(cityStreamUrl(sup, city, `?after_seq=${h0}`));
      expectSeqs(await seqsUntil(replay, head, (f) => Number(f.id)), range(h0 + 1, head), 'replayed seqs');
    });

    it('reads lists, pages and replays across the archives', async function () {
      const head = await cityHead(sup, city);
      const archives = readdirSync(join(sup.cityDir(city), '.ctl')).filter((n) => n.includes('.archive-'));
      expect(archives.length).to.be.at.least(1);

      expect(await listAll(sup, city)).to.deep.equal(range(1, head).reverse());
      expect(await listAll(sup, city, 4)).to.deep.equal(range(1, head).reverse());
      const replay = await openStream(cityStreamUrl(sup, city, '?after_seq=0'));
      expect(idsOf(await replay.events(head))).to.deep.equal(range(1, head));
      const fromInside = await openStream(cityStreamUrl(sup, city), { 'Last-Event-ID': '3' });
      expect(idsOf(await fromInside.events(head - 3))).to.deep.equal(range(4, head));
      const supReplay = await openStream(supervisorStreamUrl(sup, `?after_cursor=${city}:2`));
      expect(seqsOf(await supReplay.events(head - 2))).to.deep.equal(range(3, head));
    });

    it('does not rotate an empty log (`rotated: false`), whose X-CTL-Index is 0', async function () {
      await sup.createCity('hollow');
      // Leave the active file empty, as a rotation crash or an operator may.
      truncateSync(eventsPath(sup, 'hollow'), 0);
      const empty = await list(sup, 'hollow');
      expect(empty.index).to.equal(0);
      expect(empty.items).to.deep.equal([]);
      expect(empty.total).to.equal(0);
      const result = await rotate('hollow');
      expect(result.rotated).to.equal(false);
      expect(result.reason).to.be.a('string');
      expect(
        readdirSync(join(sup.cityDir('hollow'), '.ctl')).filter((n) => n.startsWith('events.jsonl.')),
      ).to.deep.equal([]);
    });

    it('rotates by itself at `[events] rotation_max_bytes` from city.toml', async function () {
      const dir = sup.cityDir('tiny');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'city.toml'),
        '[workspace]\nstart_command = "true"\n\n[events]\nrotation_max_bytes = 2000\n',
      );
      const { response } = await sup.api.POST('/v0/cities/register', { params: { header: CSRF }, body: { path: dir } });
      expect(response.status).to.equal(201);
      await waitUntil('tiny to run', async () => (await sup.city('tiny'))?.running);
      const live = await openStream(cityStreamUrl(sup, 'tiny', '?after_seq=0'));

      const pad = 'x'.repeat(100);
      for (let i = 0; i < 40; i++) await emit(sup, 'tiny', { type: 'test.fill', payload: { i, pad } });
      const anchors = await waitUntil('a size-triggered rotation', async () => {
        const page = await list(sup, 'tiny', { type: 'events.rotated', limit: 100 });
        return page.items.length >= 2 && page.items;
      });
      expect(anchors.every((e) => e.actor === 'events')).to.equal(true);
      const head = await cityHead(sup, 'tiny');
      expect(await listAll(sup, 'tiny', 7)).to.deep.equal(range(1, head).reverse());
      expect(idsOf(await live.events(head))).to.deep.equal(range(1, head));
      const replay = await openStream(cityStreamUrl(sup, 'tiny', '?after_seq=0'));
      expect(idsOf(await replay.events(head))).to.deep.equal(range(1, head));
    });
  });

  describe('a controller killed with SIGKILL mid-stream', function () {
    let sup: TestSupervisor;
    const city = 'kilo';

    withSupervisor(
      async (started) => {
        sup = started;
        await sup.createCity(city);
      },
      { env: { CTL_SSE_HEARTBEAT_MS: String(HEARTBEAT_MS) } },
    );

    it('keeps supervisor subscribers, ends city subscribers, and a resume by Last-Event-ID loses nothing', async function () {
      const supLive = await openStream(supervisorStreamUrl(sup));
      const cityLive = await openStream(cityStreamUrl(sup, city));
      const [s1, s2, s3] = await emitSeries(sup, city, 3, 'test.before-kill');
      // The city subscriber has read only the first of them when its controller dies.
      const [read] = await cityLive.events(1);
      expect(read.id).to.equal(String(s1));

      const pid = (await sup.city(city))!.pid!;
      process.kill(pid, 'SIGKILL');

      const tagged = (
        await supLive.until((f) => envelope(f).city === city && envelope(f).type === 'controller.started')
      )
        .map(envelope)
        .filter((e) => e.city === city);
      const types = tagged.map((e) => e.type);
      expect(types.slice(0, 3)).to.deep.equal(['test.before-kill', 'test.before-kill', 'test.before-kill']);
      expect(types.indexOf('controller.crashed')).to.be.greaterThan(2);
      expect(types.at(-1)).to.equal('controller.started');
      expect(tagged.map((e) => e.seq)).to.deep.equal(range(s1, s1 + tagged.length - 1));
      const crashed = tagged.find((e) => e.type === 'controller.crashed')!;
      expect(crashed.payload).to.include({ pid, signal: 'SIGKILL' });

      // The city stream went with its controller.
      await cityLive.drainToEnd();
      expect(cityLive.ended).to.equal(true);

      await waitUntil('the city to run again', async () => {
        const info = await sup.city(city);
        return info?.running && info.pid !== pid;
      });
      const after = await emit(sup, city, { type: 'test.after-restart' });
      // The supervisor subscriber never reconnected and still follows the city.
      const [next] = await supLive.events(1);
      expect(envelope(next)).to.include({ city, seq: after, type: 'test.after-restart' });

      const resumed = await openStream(cityStreamUrl(sup, city), { 'Last-Event-ID': read.id! });
      const frames = await resumed.events(after - s1);
      expect(idsOf(frames)).to.deep.equal(range(s1 + 1, after));
      const resumedTypes = frames.map((f) => envelope(f).type);
      expect(resumedTypes.slice(0, 2)).to.deep.equal(['test.before-kill', 'test.before-kill']);
      expect(seqsOf(frames.slice(0, 2))).to.deep.equal([s2, s3]);
      expect(resumedTypes).to.include.members(['controller.crashed', 'controller.started']);
      expect(resumedTypes.at(-1)).to.equal('test.after-restart');
    });
  });

  // A subscriber that stops reading while history replays is hung up on once it has taken nothing for
  // CTL_SSE_STALL_MS; one that stops while live, once more than CTL_SSE_MAX_BUFFERED_BYTES sit unread.
  describe('a subscriber that stops reading (CTL_SSE_MAX_BUFFERED_BYTES=20000, CTL_SSE_STALL_MS=500)', function () {
    let sup: TestSupervisor;
    const city = 'slow';
    // ~12 MB of history: far more than socket buffers hold for a client that does not read.
    const COUNT = 2000;
    const PAD = 'p'.repeat(6000);

    before(async function () {
      sup = await TestSupervisor.start({ env: { CTL_SSE_MAX_BUFFERED_BYTES: '20000', CTL_SSE_STALL_MS: '500' } });
      await sup.createCity(city);
      await emitParallel(sup, city, COUNT, 16, (i) => ({ type: 'test.bulk', payload: { i, pad: PAD } }));
    });

    after(async function () {
      await sup?.cleanup();
    });

    /**
     * Opens a stream (`openFirst`, served by process `serverPid`), reads a few frames, stops reading until the
     * server hangs up, then resumes by the last id read (reading as fast as it can) until `head`: every seq
     * exactly once, and each resumed connection makes progress.
     */
    async function pauseThenResume(
      serverPid: number,
      openFirst: () => Promise<SseStreamReader>,
      head: number,
      open: (lastId: string) => Promise<SseStreamReader>,
      seqOf: (frame: SseFrame) => number | undefined,
    ): Promise<{ firstCount: number; reconnects: number }> {
      const heldBefore = socketsOf(serverPid);
      const first = await openFirst();
      const seqs: number[] = [];
      let lastId: string | undefined;
      const take = (frame: SseFrame) => {
        if (frame.event === 'heartbeat') return;
        const seq = seqOf(frame);
        if (seq !== undefined) seqs.push(seq);
        lastId = frame.id;
      };
      try {
        for (const frame of await first.events(5)) take(frame);
      } catch (err) {
        throw new Error(`a subscriber that reads got no events before being cut off: ${(err as Error).message}`, {
          cause: err,
        });
      }
      // The connection the server serves this stream on: the socket it has opened since (a proxied stream
      // gets an upstream connection of its own). Reading nothing more, we wait until the server has closed
      // it, i.e. hung up on us; reading before that would let the stalled stream go on.
      const served = [...socketsOf(serverPid)].filter((socket) => !heldBefore.has(socket));
      expect(served, 'sockets the server opened for the stream').to.not.deep.equal([]);
      await waitUntil('the server to hang up on the subscriber that stopped reading', () => {
        const held = socketsOf(serverPid);
        return served.every((socket) => !held.has(socket));
      });
      for (const frame of await first.drainToEnd()) take(frame);
      expect(first.ended, 'the server closed the stream of the subscriber that stopped reading').to.equal(true);
      const firstCount = seqs.length;
      expect(firstCount, 'events delivered before the server hung up').to.be.below(head);
      let reconnects = 0;
      while (seqs.at(-1) !== head) {
        expect(reconnects, 'resumes needed by a subscriber that keeps reading').to.be.below(500);
        reconnects++;
        const before = seqs.length;
        const stream = await open(lastId!);
        for (;;) {
          const frame = await stream.nextEvent();
          if (!frame) break;
          take(frame);
          if (seqs.at(-1) === head) break;
        }
        stream.close();
        expect(seqs.length, `resumed connection ${reconnects} (after id ${lastId}) delivered events`).to.be.above(
          before,
        );
      }
      expectSeqs(seqs, range(1, head), 'seqs received over all connections');
      return { firstCount, reconnects };
    }

    it('is closed on the city stream, and resuming from its last id gets the rest without loss', async function () {
      const head = await cityHead(sup, city);
      expect(head).to.be.greaterThan(COUNT);
      const { reconnects } = await pauseThenResume(
        (await sup.city(city))!.pid!,
        () => openStream(cityStreamUrl(sup, city, '?after_seq=0'), {}, { ownConnection: true }),
        head,
        (lastId) => openStream(cityStreamUrl(sup, city), { 'Last-Event-ID': lastId }),
        (f) => Number(f.id),
      );
      expect(reconnects).to.be.at.least(1);
    });

    it('is closed on the supervisor stream, and resuming from its last id gets the rest without loss', async function () {
      const head = await cityHead(sup, city);
      const { reconnects } = await pauseThenResume(
        sup.pid,
        () => openStream(supervisorStreamUrl(sup, `?after_cursor=${city}:0`), {}, { ownConnection: true }),
        head,
        (lastId) => openStream(supervisorStreamUrl(sup), { 'Last-Event-ID': lastId }),
        (f) => (envelope(f).city === city ? envelope(f).seq : undefined),
      );
      expect(reconnects).to.be.at.least(1);
    });
  });

  describe('concurrent writer processes', function () {
    let sup: TestSupervisor;
    const city = 'multi';

    withSupervisor(async (started) => {
      sup = started;
      await sup.createCity(city);
    });

    /** `count` events from each of `writers` separate processes, through the shared EventLog (the built one). */
    function appendFrom(name: string, writers: number, count: number) {
      const dir = join(sup.cityDir(name), '.ctl');
      return range(1, writers).map((w) =>
        execa(
          process.execPath,
          [APPEND_FIXTURE, join(dir, 'events.jsonl'), join(dir, 'events.lock'), String(count), `writer-${w}`],
          { reject: false },
        ),
      );
    }

    function expectEveryWriterOnce(events: Envelope[], writers: number, count: number): void {
      for (let w = 1; w <= writers; w++) {
        const mine = events.filter((e) => e.actor === `writer-${w}`).map((e) => e.payload.i as number);
        expectSeqs(mine, range(0, count - 1), `payload.i of writer-${w}'s events, in seq order`);
      }
    }

    it('4 processes appending 2,500 events each: an open stream delivers all 10,000, unique, gap-free, in order', async function () {
      const head = await cityHead(sup, city);
      const cityLive = await openStream(cityStreamUrl(sup, city));
      const supLive = await openStream(supervisorStreamUrl(sup));
      const writers = appendFrom(city, 4, 2500);
      const frames = await framesUntil(cityLive, head + 10_000, (f) => Number(f.id), 10_000);
      const results = await Promise.all(writers);
      expect(results.map((r) => r.exitCode)).to.deep.equal([0, 0, 0, 0]);

      expectSeqs(idsOf(frames), range(head + 1, head + 10_000), 'city stream ids');
      const events = frames.map(envelope);
      expectSeqs(
        events.map((e) => e.seq),
        range(head + 1, head + 10_000),
        'city stream seqs',
      );
      expectEveryWriterOnce(events, 4, 2500);
      const tagged = await framesUntil(supLive, head + 10_000, (f) => envelope(f).seq);
      expectSeqs(seqsOf(tagged), range(head + 1, head + 10_000), 'supervisor stream seqs');
      expect(await cityHead(sup, city)).to.equal(head + 10_000);
      const listed = await list(sup, city, { limit: 1000 });
      expect(listed.items.map((e) => e.seq)).to.deep.equal(range(head + 9001, head + 10_000).reverse());
    });

    it('rotations while 4 processes append: every event listed and streamed exactly once, seqs gap-free', async function () {
      // A small threshold makes the controller rotate every few hundred events while the writers append.
      const dir = sup.cityDir('churn');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'city.toml'),
        '[workspace]\nstart_command = "true"\n\n[events]\nrotation_max_bytes = 20000\n',
      );
      const { response } = await sup.api.POST('/v0/cities/register', { params: { header: CSRF }, body: { path: dir } });
      expect(response.status).to.equal(201);
      await waitUntil('churn to run', async () => (await sup.city('churn'))?.running);
      const head0 = await cityHead(sup, 'churn');
      const live = await openStream(cityStreamUrl(sup, 'churn', '?after_seq=0'));

      const writers = appendFrom('churn', 4, 2500);
      let writing = true;
      void Promise.all(writers).then(() => (writing = false));
      // The controller appends too (and so checks its rotation threshold) while the other processes write.
      const posted: number[] = [];
      let rotations = 0;
      await Promise.all([
        ...range(1, 4).map(async () => {
          while (writing) posted.push(await emit(sup, 'churn', { type: 'test.churn' }));
        }),
        // And a few rotations on request, on top of the size-triggered ones (few, so that the log still grows
        // past its threshold between them however fast this machine answers them).
        ...range(1, 2).map(async () => {
          for (let requested = 0; writing && requested < 5; requested++) {
            const res = await fetch(`${sup.base}/v0/city/churn/events/rotate`, { method: 'POST', headers: CSRF });
            expect(res.status).to.equal(200);
            if (((await res.json()) as { rotated: boolean }).rotated) rotations++;
          }
        }),
      ]);
      const results = await Promise.all(writers);
      expect(results.map((r) => r.exitCode)).to.deep.equal([0, 0, 0, 0]);

      const head = await cityHead(sup, 'churn');
      const events: Envelope[] = [];
      let cursor: string | undefined;
      do {
        const page = await list(sup, 'churn', cursor ? { limit: 1000, cursor } : { limit: 1000 });
        events.push(...page.items);
        cursor = page.next_cursor;
      } while (cursor);
      events.reverse();
      const anchors = events.filter((e) => e.type === 'events.rotated');
      expect(anchors.length, 'rotations (on request and size-triggered)').to.be.above(rotations);
      expectEveryWriterOnce(events, 4, 2500);
      expect(
        events
          .filter((e) => e.type === 'test.churn')
          .map((e) => e.seq)
          .sort((a, b) => a - b),
      ).to.deep.equal([...posted].sort((a, b) => a - b));
      expectSeqs(
        events.map((e) => e.seq),
        range(1, head),
        'listed seqs',
      );
      expect(head, 'head = every event recorded').to.equal(head0 + 10_000 + posted.length + anchors.length);
      const streamed = (await framesUntil(live, head, (f) => Number(f.id))).map(envelope);
      expectSeqs(
        streamed.map((e) => e.seq),
        range(1, head),
        'streamed seqs',
      );
      expectEveryWriterOnce(streamed, 4, 2500);
    });
  });
});
