import { expect } from 'chai';
import type { components } from '../../shared/generated/api-types.js';
import { CSRF, type TestSupervisor } from './supervisor.js';
import { waitUntil } from './wait.js';

export type Bead = components['schemas']['Bead'];
export type BeadCreate = components['schemas']['BeadCreateInputBody'];
export type BeadUpdate = components['schemas']['BeadUpdateBody'];
export type Message = components['schemas']['Message'];

/** A problem body (RFC 9457) as the API sends it. */
export interface Problem {
  type: string;
  title?: string;
  status: number;
  detail: string;
  code?: string;
  instance?: string;
  errors?: { location: string; message: string; value?: unknown }[];
}

/** An event of a city's log, as `GET /v0/city/{cityName}/events` lists it. */
export interface Envelope {
  seq: number;
  type: string;
  ts: string;
  actor: string;
  subject?: string;
  message?: string;
  payload: Record<string, unknown>;
}

/** A response: status, headers, and the body parsed as JSON when it is JSON (else the text). */
export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export const DEP_KINDS = ['blocks', 'waits-for', 'conditional-blocks', 'tracks', 'parent-child', 'relates-to'] as const;
export type DepKind = (typeof DEP_KINDS)[number];

/** The number of a bead id `<prefix>-<n>`. */
export function idNumber(id: string): number {
  const match = /^[a-z0-9]+-(\d+)$/.exec(id);
  if (!match) throw new Error(`not a bead id: ${id}`);
  return Number(match[1]);
}

/**
 * Asserts a problem response: status, `application/problem+json`, `type` = `urn:ctl:error:<code>`, and
 * optionally a detail prefix and an `errors[].location`.
 */
export function expectProblem(
  reply: Reply,
  status: number,
  code: string,
  options: { detail?: string; location?: string } = {},
): Problem {
  const problem = reply.body as Problem;
  expect(reply.status, JSON.stringify(reply.body)).to.equal(status);
  expect(reply.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(problem.status, JSON.stringify(problem)).to.equal(status);
  expect(problem.code, JSON.stringify(problem)).to.equal(code);
  expect(problem.type).to.equal(`urn:ctl:error:${code}`);
  expect(problem.detail).to.be.a('string');
  if (options.detail !== undefined) {
    expect(problem.detail.startsWith(options.detail), `detail ${JSON.stringify(problem.detail)}`).to.equal(true);
  }
  if (options.location !== undefined) {
    const locations = (problem.errors ?? []).map((e) => e.location);
    expect(locations, JSON.stringify(problem)).to.include(options.location);
  }
  return problem;
}

/**
 * One city's API through the supervisor: raw calls (any body, any headers) for errors, and typed calls
 * (the generated client) for the happy paths, which fail loudly on an unexpected status.
 */
/**
 * Registers the city written at `sup.cityDir(name)` through the API (all its files in place first, so that its
 * first tick sees all of it), waits for it to run, and returns its API.
 */
export async function registerCity(sup: TestSupervisor, name: string): Promise<CityApi> {
  const res = await fetch(`${sup.base}/v0/cities/register`, {
    method: 'POST',
    headers: { ...CSRF, 'Content-Type': 'application/json' },
    body: JSON.stringify({ path: sup.cityDir(name) }),
  });
  expect(res.status, await res.text()).to.equal(201);
  await waitUntil(`${name} to run`, async () => (await sup.city(name))?.running === true);
  return new CityApi(sup, name);
}

export class CityApi {
  constructor(
    readonly sup: TestSupervisor,
    readonly name: string,
  ) {}

  url(path: string): string {
    return `${this.sup.base}/v0/city/${encodeURIComponent(this.name)}${path}`;
  }

  /** Any request; mutations carry `X-CTL-Request` unless `headers` overrides it (`{'X-CTL-Request': ''}`). */
  async call<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply<T>> {
    const all: Record<string, string> = method === 'GET' ? {} : { ...CSRF };
    if (body !== undefined) all['content-type'] = 'application/json';
    for (const [k, v] of Object.entries(headers)) {
      if (v === '') delete all[k];
      else all[k] = v;
    }
    const res = await fetch(this.url(path), {
      method,
      headers: all,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    const parsed: unknown = /json/.test(type) && text !== '' ? JSON.parse(text) : text;
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  get<T = unknown>(path: string): Promise<Reply<T>> {
    return this.call<T>('GET', path);
  }

  post<T = unknown>(path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply<T>> {
    return this.call<T>('POST', path, body, headers);
  }

  patch<T = unknown>(path: string, body?: unknown): Promise<Reply<T>> {
    return this.call<T>('PATCH', path, body);
  }

  del<T = unknown>(path: string): Promise<Reply<T>> {
    return this.call<T>('DELETE', path);
  }

  /** `POST …/beads` through the typed client; 201 expected. */
  async create(body: BeadCreate, idempotencyKey?: string): Promise<Bead> {
    const { data, error, response } = await this.sup.api.POST('/v0/city/{cityName}/beads', {
      params: {
        path: { cityName: this.name },
        header: { ...CSRF, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
      },
      body,
    });
    if (response.status !== 201 || !data) throw new Error(`create ${response.status}: ${JSON.stringify(error)}`);
    return data;
  }

  /** `GET …/bead/{id}` through the typed client; 200 expected. */
  async bead(id: string): Promise<Bead> {
    const { data, error, response } = await this.sup.api.GET('/v0/city/{cityName}/bead/{id}', {
      params: { path: { cityName: this.name, id } },
    });
    if (!data) throw new Error(`get ${id} ${response.status}: ${JSON.stringify(error)}`);
    return data;
  }

  /** `PATCH …/bead/{id}` through the typed client; 200 `{status: ok}` expected. */
  async update(id: string, body: BeadUpdate): Promise<void> {
    const { data, error, response } = await this.sup.api.PATCH('/v0/city/{cityName}/bead/{id}', {
      params: { path: { cityName: this.name, id }, header: CSRF },
      body,
    });
    if (response.status !== 200 || data?.status !== 'ok') {
      throw new Error(`patch ${id} ${response.status}: ${JSON.stringify(error)}`);
    }
  }

  async ok(method: 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    const reply = await this.call(method, path, body);
    if (reply.status !== 200) throw new Error(`${method} ${path} ${reply.status}: ${JSON.stringify(reply.body)}`);
    return reply.body;
  }

  close(id: string): Promise<unknown> {
    return this.ok('POST', `/bead/${id}/close`);
  }

  reopen(id: string): Promise<unknown> {
    return this.ok('POST', `/bead/${id}/reopen`);
  }

  addDep(id: string, dependsOn: string, type?: DepKind): Promise<unknown> {
    return this.ok('POST', `/bead/${id}/deps`, type ? { depends_on: dependsOn, type } : { depends_on: dependsOn });
  }

  removeDep(id: string, dependsOn: string, type?: DepKind): Promise<unknown> {
    return this.ok('DELETE', `/bead/${id}/deps/${dependsOn}${type ? `?type=${type}` : ''}`);
  }

  /** Ids of `GET …/beads/ready` (up to 1000). */
  async readyIds(query = ''): Promise<string[]> {
    const reply = await this.get<{ items: Bead[]; total: number }>(`/beads/ready?limit=1000${query}`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body.items.map((b) => b.id);
  }

  /** One page of `GET …/beads`. */
  async list(query: Record<string, string | number | boolean> = {}): Promise<{
    items: Bead[];
    total: number;
    next_cursor?: string;
    index: number;
  }> {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
    const reply = await this.get<{ items: Bead[]; total: number; next_cursor?: string }>(`/beads?${qs.toString()}`);
    if (reply.status !== 200) throw new Error(`list ${reply.status}: ${JSON.stringify(reply.body)}`);
    return { ...reply.body, index: Number(reply.headers.get('x-ctl-index')) };
  }

  /** Every bead a query lists, through all its pages. */
  async listAll(query: Record<string, string | number | boolean> = {}): Promise<Bead[]> {
    const out: Bead[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.list({ limit: 1000, ...query, ...(cursor ? { cursor } : {}) });
      out.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  }

  /** The city's event head (`X-CTL-Index`). */
  async head(): Promise<number> {
    const reply = await this.get('/events?limit=1');
    expect(reply.status).to.equal(200);
    return Number(reply.headers.get('x-ctl-index'));
  }

  /** Every event of the city's log (of one type, if given), oldest first. */
  async events(type?: string): Promise<Envelope[]> {
    const out: Envelope[] = [];
    let cursor: string | undefined;
    do {
      const qs = new URLSearchParams({ limit: '1000' });
      if (type) qs.set('type', type);
      if (cursor) qs.set('cursor', cursor);
      const reply = await this.get<{ items: Envelope[]; next_cursor?: string }>(`/events?${qs.toString()}`);
      if (reply.status !== 200) throw new Error(`events ${reply.status}: ${JSON.stringify(reply.body)}`);
      out.push(...reply.body.items);
      cursor = reply.body.next_cursor;
    } while (cursor);
    return out.reverse();
  }

  /** Events of a type about one subject, oldest first. */
  async eventsAbout(type: string, subject: string): Promise<Envelope[]> {
    return (await this.events(type)).filter((e) => e.subject === subject);
  }
}
