import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { CityApi, expectProblem, type Bead, type Message, type Reply } from './helpers/city-api.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';

// decisions.md: "Every list operation answers at most `limit` items (default 100, at most 1,000) and a
// `next_cursor` for the rest; no list is unbounded by default."

type Json = Record<string, unknown>;

interface Page<T> {
  items: T[];
  total: number;
  next_cursor?: string;
  event_cursor?: string;
}

interface Tagged {
  seq: number;
  type: string;
  ts: string;
  city: string;
  payload: Json;
}

/** Resolves a local `$ref` of the document. */
function deref(doc: Json, node: Json): Json {
  let current = node;
  while (typeof current.$ref === 'string') {
    current = current.$ref
      .slice(2)
      .split('/')
      .reduce<Json>((at, key) => at[key] as Json, doc);
  }
  return current;
}

describe('list operations are bounded and paged', function () {
  this.timeout(60_000);

  let sup: TestSupervisor;

  async function get<T>(path: string): Promise<Reply<T>> {
    const res = await fetch(`${sup.base}${path}`);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as T };
  }

  /** Every page of a list, following `next_cursor` with pages of `limit`; the pages, in the order read. */
  async function pages<T>(path: string, limit: number): Promise<Page<T>[]> {
    const out: Page<T>[] = [];
    let cursor: string | undefined;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const reply = await get<Page<T>>(
        `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body.items.length).to.be.at.most(limit);
      out.push(reply.body);
      cursor = reply.body.next_cursor;
      if (cursor) expect(reply.body.items.length, 'a page before the last is full').to.equal(limit);
    } while (cursor);
    return out;
  }

  async function emit(city: string, count: number, type: string): Promise<void> {
    for (let i = 0; i < count; i += 25) {
      await Promise.all(
        Array.from({ length: Math.min(25, count - i) }, async (_, j) => {
          const { response } = await sup.api.POST('/v0/city/{cityName}/events', {
            params: { header: CSRF, path: { cityName: city } },
            body: { type, actor: 'test', payload: { i: i + j } },
          });
          expect(response.status).to.equal(201);
        }),
      );
    }
  }

  before(async function () {
    sup = await TestSupervisor.start();
    await sup.createCity('alpha');
    await sup.createCity('beta');
    await emit('alpha', 150, 'page.a');
    await emit('beta', 70, 'page.b');
  });

  after(async function () {
    await sup?.cleanup();
  });

  it('every list operation of the document takes limit (at most 1000) and cursor, and answers next_cursor', function () {
    const doc = JSON.parse(readFileSync(join(packageRoot, 'shared', 'generated', 'openapi.json'), 'utf8')) as Json;
    const lists: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      const op = item.get as Json | undefined;
      const ok = (op?.responses as Record<string, Json> | undefined)?.['200'];
      const schema = (ok?.content as Record<string, Json> | undefined)?.['application/json']?.schema as
        Json | undefined;
      if (!op || !schema) continue;
      const body = deref(doc, schema);
      const properties = body.properties as Record<string, Json> | undefined;
      // A list is an array of items (readiness's `items` is a map of the known providers, not a list).
      if (properties?.items?.type !== 'array') continue;
      lists.push(path);
      const params = ((op.parameters as Json[]) ?? []).map((p) => deref(doc, p));
      const limit = params.find((p) => p.name === 'limit' && p.in === 'query');
      expect(limit, `${path}: a limit parameter`).to.not.equal(undefined);
      // At most 1,000 (decisions); a contract may bound a list tighter (the extmsg transcript: 500).
      expect((limit!.schema as Json).maximum, `${path}: limit at most 1000`).to.be.within(1, 1000);
      expect(
        params.some((p) => p.name === 'cursor' && p.in === 'query'),
        `${path}: a cursor parameter`,
      ).to.equal(true);
      expect(properties, `${path}: next_cursor in the body`).to.have.property('next_cursor');
    }
    expect(lists).to.include.members(['/v0/events', '/v0/cities', '/v0/city/{cityName}/beads/ready']);
  });

  describe('GET /v0/events', function () {
    it('answers the newest 100 by default, oldest first, and a next_cursor', async function () {
      const reply = await get<Page<Tagged>>('/v0/events');
      expect(reply.status).to.equal(200);
      expect(reply.body.items).to.have.length(100);
      expect(reply.body.next_cursor).to.match(/^v1:/);
      const times = reply.body.items.map((e) => Date.parse(e.ts));
      expect([...times].sort((a, b) => a - b)).to.deep.equal(times);
      // The newest: alpha's and beta's last events are on it.
      const newest = reply.body.items.filter((e) => e.type === 'page.a').map((e) => e.payload.i);
      expect(newest.length).to.be.greaterThan(0);
    });

    it('pages through every event exactly once, each page older than the one before', async function () {
      const read = await pages<Tagged>('/v0/events', 37);
      const all = read
        .slice()
        .reverse()
        .flatMap((p) => p.items);
      const keys = all.map((e) => JSON.stringify(e));
      expect(new Set(keys).size, 'no event twice').to.equal(keys.length);
      expect(all.length, 'every event of every log').to.equal(read[0].total);
      expect(
        all
          .filter((e) => e.type === 'page.a')
          .map((e) => e.payload.i as number)
          .sort((a, b) => a - b),
      ).to.deep.equal(Array.from({ length: 150 }, (_, i) => i));
      for (let i = 1; i < read.length; i++) {
        const newer = Math.min(...read[i - 1].items.map((e) => Date.parse(e.ts)));
        const older = Math.max(...read[i].items.map((e) => Date.parse(e.ts)));
        expect(older, `page ${i + 1} is not newer than page ${i}`).to.be.at.most(newer);
      }
    });

    it('filters page too: only matches, every one once', async function () {
      const read = await pages<Tagged>('/v0/events?type=page.b', 30);
      expect(read.length).to.equal(3);
      const all = read.flatMap((p) => p.items);
      expect(all.every((e) => e.type === 'page.b' && e.city === 'beta')).to.equal(true);
      expect(new Set(all.map((e) => e.seq)).size).to.equal(70);
    });

    it('pages list the logs as they were at the first page: later events do not shift them', async function () {
      const first = await get<Page<Tagged>>('/v0/events?type=page.a&limit=100');
      await emit('alpha', 10, 'page.a');
      const second = await get<Page<Tagged>>(
        `/v0/events?type=page.a&limit=100&cursor=${encodeURIComponent(first.body.next_cursor!)}`,
      );
      expect(second.status).to.equal(200);
      const seen = [...first.body.items, ...second.body.items].map((e) => e.seq);
      expect(new Set(seen).size).to.equal(150);
      expect(second.body.next_cursor).to.equal(undefined);
    });

    it('refuses a limit over 1000 or below 0 (422) and a cursor it did not issue (400)', async function () {
      for (const limit of ['1001', '-5']) {
        const reply = await get(`/v0/events?limit=${limit}`);
        expect(reply.status, limit).to.equal(422);
        expect(reply.headers.get('content-type')).to.match(/^application\/problem\+json/);
      }
      const cityPage = (await get<Page<unknown>>('/v0/city/alpha/events?limit=1')).body.next_cursor!;
      for (const cursor of ['bogus', 'v1:!!', cityPage]) {
        expectProblem(await get(`/v0/events?cursor=${encodeURIComponent(cursor)}`), 400, 'invalid-cursor');
      }
    });
  });

  describe('GET /v0/cities', function () {
    it('pages by name with limit and cursor; total counts every city', async function () {
      const read = await pages<{ name: string }>('/v0/cities', 1);
      expect(read.map((p) => p.items.map((c) => c.name))).to.deep.equal([['alpha'], ['beta']]);
      expect(read.every((p) => p.total === 2)).to.equal(true);
      expect((await get('/v0/cities?limit=1001')).status).to.equal(422);
      expectProblem(await get('/v0/cities?cursor=bogus'), 400, 'invalid-cursor');
    });
  });

  describe('per city', function () {
    let alpha: CityApi;
    before(function () {
      alpha = new CityApi(sup, 'alpha');
    });

    it('GET …/beads/ready: 100 by default, then pages, oldest first, no skip and no repeat', async function () {
      const made: string[] = [];
      for (let i = 0; i < 130; i += 26) {
        made.push(
          ...(await Promise.all(Array.from({ length: 26 }, (_, j) => alpha.create({ title: `ready ${i + j}` })))).map(
            (b) => b.id,
          ),
        );
      }
      const first = await alpha.get<Page<Bead>>('/beads/ready');
      expect(first.body.items).to.have.length(100);
      expect(first.body.total).to.equal(130);
      expect(first.body.next_cursor).to.match(/^v1:/);
      const read = (await pages<Bead>('/v0/city/alpha/beads/ready', 40)).flatMap((p) => p.items.map((b) => b.id));
      const byNumber = (a: string, b: string) => Number(a.split('-')[1]) - Number(b.split('-')[1]);
      expect(read).to.deep.equal([...made].sort(byNumber));
      expectProblem(await alpha.get('/beads/ready?cursor=bogus'), 400, 'invalid-cursor');
    });

    it('GET …/mail/thread/{id}: the newest 100 by default, oldest first, then older pages', async function () {
      const sent = await alpha.post<Message>('/mail', { to: 'ann', subject: 'long thread' });
      expect(sent.status).to.equal(201);
      const replies: string[] = [];
      for (let i = 0; i < 120; i++) {
        const reply = await alpha.post<Message>(`/mail/${sent.body.id}/reply`, { body: `r${i}` });
        replies.push(reply.body.id);
      }
      const first = await alpha.get<Page<Message>>(`/mail/thread/${sent.body.id}`);
      expect(first.body.items.map((m) => m.id)).to.deep.equal(replies.slice(-100));
      expect(first.body.total).to.equal(121);
      const read = await pages<Message>(`/v0/city/alpha/mail/thread/${sent.body.id}`, 50);
      const all = read.reverse().flatMap((p) => p.items.map((m) => m.id));
      expect(all).to.deep.equal([sent.body.id, ...replies]);
      expect((await alpha.get(`/mail/thread/${sent.body.id}?limit=1001`)).status).to.equal(422);
    });
  });
});
