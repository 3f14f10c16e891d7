import type { IncomingHttpHeaders } from 'node:http';
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

/** A response as `expectProblem` reads it: a `Reply` (fetch's `Headers`) or a raw one (node's header record). */
export interface ProblemReply {
  status: number;
  headers: Headers | IncomingHttpHeaders;
  body: unknown;
}

/** What `expectProblem` checks beyond what every problem has. */
export interface ProblemChecks {
  /** The detail begins with this. */
  detail?: string;
  /** One of `errors[].location`. */
  location?: string;
  /** The request, named in every failure's message. */
  what?: string;
  /** Exactly one `X-CTL-Request-Id` of 16 lowercase hex characters. */
  requestId?: boolean;
  /**
   * All the HTTP conventions give a problem: a well-formed code and the type made from it, a title, a
   * `prefix: text` detail and the request id.
   */
  conventions?: boolean;
}

const REQUEST_ID = /^[0-9a-f]{16}$/;
const PROBLEM_CODE = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** A header's value; both kinds of headers join a repeated one with `, `, so a pattern of one value fails on two. */
function headerOf(reply: ProblemReply, name: string): string | undefined {
  if (reply.headers instanceof Headers) return reply.headers.get(name) ?? undefined;
  const value = reply.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Asserts a problem response (RFC 9457): the status, `application/problem+json`, the body's status and a detail;
 * given a `code`, that code and `type` = `urn:ctl:error:<code>`; and what `checks` asks.
 */
export function expectProblem(reply: ProblemReply, status: number, code?: string, checks: ProblemChecks = {}): Problem {
  const label = `${checks.what ? `${checks.what} → ` : ''}${reply.status} ${JSON.stringify(reply.body)?.slice(0, 400)}`;
  const problem = reply.body as Problem;
  expect(reply.status, label).to.equal(status);
  expect(headerOf(reply, 'content-type'), label).to.match(/^application\/problem\+json(;|$)/);
  if (checks.requestId || checks.conventions) {
    expect(headerOf(reply, 'x-ctl-request-id'), `X-CTL-Request-Id ${label}`).to.match(REQUEST_ID);
  }
  expect(problem, label).to.be.an('object');
  if (checks.conventions) expect(problem.code, label).to.be.a('string').and.match(PROBLEM_CODE);
  if (code !== undefined) expect(problem.code, label).to.equal(code);
  if (code !== undefined || checks.conventions) expect(problem.type, label).to.equal(`urn:ctl:error:${problem.code}`);
  if (checks.conventions) expect(problem.title, label).to.be.a('string').and.not.equal('');
  expect(problem.status, label).to.equal(status);
  expect(problem.detail, label).to.be.a('string');
  // "The body's detail field begins with a short code followed by a colon and a space."
  if (checks.conventions) expect(problem.detail, label).to.match(/^[a-z_]+: \S/);
  if (checks.detail !== undefined) {
    expect(problem.detail.startsWith(checks.detail), `detail ${JSON.stringify(problem.detail)}`).to.equal(true);
  }
  if (checks.location !== undefined) {
    const locations = (problem.errors ?? []).map((e) => e.location);
    expect(locations, label).to.include(checks.location);
  }
  return problem;
}

/** A fetch response read whole: the body parsed as JSON when it says it is JSON (else the text). */
export async function readReply<T = unknown>(res: Response): Promise<Reply<T>> {
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  const parsed: unknown = /json/.test(type) && text !== '' ? JSON.parse(text) : text;
  return { status: res.status, headers: res.headers, body: parsed as T };
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
    return readReply<T>(res);
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
