import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { inLanes } from './helpers/lanes.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';

// Every status an operation can answer is declared in its `responses`. Walks the OpenAPI document: for every
// operation, for every query and path parameter with a schema, sends values the schema (or the parameter's
// documented format) refuses, to a real supervisor with one running city, and checks the status received is
// one the operation declares, as a problem. Then, for every query parameter of every GET, whatever its schema
// says, values of every kind a client may send by mistake (wrong types, out of range, unknown enum values, bad
// formats, empty, overlong, repeated, and a required one left out), each answered with a declared status. Then,
// for every operation, the requests the shared conventions refuse around it: a city that does not exist or a
// malformed name, a body of the wrong type, not JSON or over the limit, headers over the limit.

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const CITY = 'alpha';

interface Probe {
  method: string;
  path: string;
  param: string;
  value: string;
}

/** A query of a GET: `query` is sent as it is (already encoded), and `what` names it in a failure. */
interface QueryProbe {
  path: string;
  op: Json;
  what: string;
  query: string;
}

/**
 * Values of every kind a client may send any query parameter by mistake, whatever its schema: a word, numbers
 * negative and fractional, a boolean, an unknown enum value, a date and a cursor that are not, a duration that
 * is not, an empty value, one over 4 KiB (under the 16 KiB of a request's headers), a control character. A plain
 * string may take them all; what matters is that whatever is answered is declared. No huge number: a blocking
 * query's `index` past the head would hold the walk for its `wait`.
 */
const ANY_VALUES = [
  'abc',
  '-1',
  '1.5',
  'true',
  'not-one-of-them',
  '2026-13-45T25:61:00Z',
  'v1:bogus',
  'soon',
  '',
  'a'.repeat(4097),
  '\u0001',
];

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

/**
 * A string that does not match `pattern`, from a few candidates, words first (none when every one matches).
 * Not an empty or blank one where a word will do: `?after_seq=` reads as no value at all, as most servers
 * read it.
 */
function notMatching(pattern: string): string[] {
  const regex = new RegExp(pattern, 'u');
  return ['abc', 'x y', '-1', '1.5', ' '].filter((candidate) => !regex.test(candidate)).slice(0, 1);
}

/**
 * Values the parameter refuses: by its schema (wrong type, out of range, not in the enum, not matching), or
 * by what its name and description say it holds (a page token, a cursor, a duration). A plain string with
 * no documented format admits anything: nothing to send.
 */
function badValues(param: Json): string[] {
  const schema = (param.schema ?? {}) as Json;
  const name = String(param.name);
  const description = typeof param.description === 'string' ? param.description : '';
  const values: string[] = [];
  if (schema.type === 'integer' || schema.type === 'number') {
    values.push('abc');
    if (typeof schema.minimum === 'number') values.push(String(schema.minimum - 1));
    if (typeof schema.maximum === 'number') values.push(String(schema.maximum + 1));
  } else if (schema.type === 'boolean') {
    values.push('maybe');
  } else if (Array.isArray(schema.enum)) {
    values.push('not-one-of-them');
  } else if (typeof schema.pattern === 'string') {
    values.push(...notMatching(schema.pattern));
  }
  if (name === 'cursor' || name === 'after_cursor') values.push('v1:bogus', 'garbage');
  if (/duration/i.test(description)) values.push('soon');
  return values;
}

/** How many requests of the walk are out at once. */
const WIDTH = 8;

describe('every status an operation answers is declared (the document, walked against a real supervisor)', function () {
  this.timeout(120_000);

  let sup: TestSupervisor;
  let doc: Json;

  before(async function () {
    doc = JSON.parse(readFileSync(join(packageRoot, 'shared', 'generated', 'openapi.json'), 'utf8')) as Json;
    sup = await TestSupervisor.start();
    await sup.createCity(CITY);
  });

  after(async function () {
    await sup?.cleanup();
  });

  /** Every bad value of every query and path parameter of every operation. */
  function probes(): Probe[] {
    const out: Probe[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      // svc/* is a raw proxy to a city's own service, outside the typed API: its answers are that service's.
      if (path.includes('/svc/')) continue;
      for (const method of METHODS) {
        const op = item[method] as Json | undefined;
        if (!op) continue;
        const params = [...((item.parameters as Json[]) ?? []), ...((op.parameters as Json[]) ?? [])].map((p) =>
          deref(doc, p),
        );
        for (const param of params) {
          // Headers are not walked: X-CTL-Request is the mutation guard's, Last-Event-ID a stream's position
          // (sent as after_* too), Idempotency-Key any string.
          if (param.in !== 'query' && param.in !== 'path') continue;
          // The city is what routes a per-city request at all: a bad name is the not-running 404, declared on
          // every per-city route, and walking it would only repeat that.
          if (param.name === 'cityName') continue;
          for (const value of badValues(param)) out.push({ method, path, param: String(param.name), value });
        }
      }
    }
    return out;
  }

  /** The URL of `path` with its path parameters filled (the running city; `x` for ids) and one bad one. */
  function urlOf(probe: Probe): string {
    let url = probe.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      if (name === probe.param) return encodeURIComponent(probe.value);
      return name === 'cityName' ? CITY : 'x';
    });
    if (!probe.path.includes(`{${probe.param}}`)) url += `?${probe.param}=${encodeURIComponent(probe.value)}`;
    return `${sup.base}${url}`;
  }

  it('walks a bad value of every refusable parameter (a guard: the walk is not empty)', function () {
    const walked = new Set(probes().map((p) => `${p.method} ${p.path} ${p.param}`));
    for (const expected of [
      'get /v0/readiness fresh',
      'get /v0/provider-readiness fresh',
      'get /v0/events limit',
      'get /v0/events cursor',
      `get /v0/city/{cityName}/readiness fresh`,
      `get /v0/city/{cityName}/provider-readiness fresh`,
      'post /v0/city/{cityName}/events/rotate wait',
    ]) {
      expect(walked, expected).to.include(expected);
    }
  });

  /** Every operation of the document, `svc/*` included (what its proxy answers itself is declared too). */
  function operations(): { method: string; path: string; op: Json }[] {
    const out: { method: string; path: string; op: Json }[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const method of METHODS) {
        const op = item[method] as Json | undefined;
        // An operation with servers of its own (the webhook listener's delivery) is not served on the API's
        // address: what that answers for its path says nothing of it.
        if (op && !op.servers) out.push({ method, path, op });
      }
    }
    return out;
  }

  /** `path` with the running city (or `city`) and `x` for every other parameter. */
  function filled(path: string, city = CITY): string {
    return path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === 'cityName' ? city : 'x'));
  }

  interface Shared {
    what: string;
    applies: (method: string, path: string) => boolean;
    init: (method: string, path: string) => { url: string; init: RequestInit };
  }

  const mutation = (method: string) => method !== 'get';
  const perCity = (_: string, path: string) => path.startsWith('/v0/city/{cityName}/');
  const SHARED: Shared[] = [
    {
      what: 'an unknown city',
      applies: perCity,
      init: (method, path) => ({
        url: filled(path, 'no-such-city'),
        init: { method: method.toUpperCase(), headers: mutation(method) ? CSRF : {} },
      }),
    },
    {
      what: 'a malformed city name',
      applies: perCity,
      init: (method, path) => ({
        url: filled(path, '%zz'),
        init: { method: method.toUpperCase(), headers: mutation(method) ? CSRF : {} },
      }),
    },
    {
      what: 'a body of the wrong type',
      applies: mutation,
      init: (method, path) => ({
        url: filled(path),
        init: {
          method: method.toUpperCase(),
          headers: { ...CSRF, 'Content-Type': 'image/png' },
          body: 'x',
        },
      }),
    },
    {
      what: 'a body that is not JSON',
      applies: mutation,
      init: (method, path) => ({
        url: filled(path),
        init: { method: method.toUpperCase(), headers: { ...CSRF, 'Content-Type': 'application/json' }, body: '{' },
      }),
    },
    {
      what: 'a body over 1 MiB',
      applies: mutation,
      init: (method, path) => ({
        url: filled(path),
        init: {
          method: method.toUpperCase(),
          headers: { ...CSRF, 'Content-Type': 'application/json' },
          body: JSON.stringify({ x: 'a'.repeat(1_100_000) }),
        },
      }),
    },
    {
      what: 'headers over 16 KiB',
      applies: () => true,
      init: (method, path) => ({
        url: filled(path),
        init: { method: method.toUpperCase(), headers: { ...CSRF, 'X-Big': 'a'.repeat(20_000) } },
      }),
    },
  ];

  it('answers what the shared conventions refuse with a status every operation declares', async function () {
    this.timeout(300_000);
    const undeclared: string[] = [];
    const counts = new Map<string, number>();
    const requests: { method: string; path: string; op: Json; probe: Shared }[] = [];
    for (const { method, path, op } of operations()) {
      for (const probe of SHARED) {
        if (!probe.applies(method, path)) continue;
        // svc/* of the running city is the service's own answer (`default`): only the proxy's own refusals count.
        if (path.includes('/svc/') && probe.what !== 'an unknown city' && probe.what !== 'a malformed city name')
          continue;
        requests.push({ method, path, op, probe });
      }
    }
    await inLanes(requests, WIDTH, async ({ method, path, op, probe }) => {
      const declared = Object.keys(op.responses as Json);
      const { url, init } = probe.init(method, path);
      const abort = new AbortController();
      let status: string;
      let type: string;
      try {
        const res = await fetch(`${sup.base}${url}`, { ...init, signal: abort.signal });
        status = String(res.status);
        type = res.headers.get('content-type') ?? '';
      } finally {
        abort.abort();
      }
      counts.set(probe.what, (counts.get(probe.what) ?? 0) + 1);
      const what = `${method.toUpperCase()} ${path} with ${probe.what}: ${status}`;
      // 500 is declared everywhere (anything can fail), but a refused request is never a server error.
      if (status === '500') undeclared.push(`${what}: a server error for a bad request`);
      else if (!declared.includes(status)) undeclared.push(`${what} (declared: ${declared.join(', ')})`);
      else if (!type.startsWith('application/problem+json')) undeclared.push(`${what} as ${type}`);
    });
    // A guard: every class was walked.
    for (const probe of SHARED) expect(counts.get(probe.what), probe.what).to.be.greaterThan(0);
    expect(undeclared.sort(), undeclared.join('\n')).to.deep.equal([]);
  });

  /**
   * Every GET's query parameters, each sent alone with every value of `ANY_VALUES` and repeated (`p=a&p=b`, which
   * a query string allows and a parameter of one value cannot take), and the GET with no query at all (a
   * required parameter left out).
   */
  function queryProbes(): QueryProbe[] {
    const out: QueryProbe[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      const op = item.get as Json | undefined;
      if (!op || path.includes('/svc/')) continue;
      out.push({ path, op, what: 'no query', query: '' });
      const params = [...((item.parameters as Json[]) ?? []), ...((op.parameters as Json[]) ?? [])]
        .map((p) => deref(doc, p))
        .filter((p) => p.in === 'query');
      for (const param of params) {
        const name = String(param.name);
        for (const value of ANY_VALUES) {
          const shown = value.length > 20 ? `${value.slice(0, 8)}…(${value.length})` : value;
          out.push({
            path,
            op,
            what: `${name}=${JSON.stringify(shown)}`,
            query: `${name}=${encodeURIComponent(value)}`,
          });
        }
        out.push({ path, op, what: `${name} repeated`, query: `${name}=a&${name}=b` });
      }
    }
    return out;
  }

  it('answers any value of any query parameter of a GET with a status its operation declares', async function () {
    this.timeout(300_000);
    const undeclared: string[] = [];
    const walked = queryProbes();
    await inLanes(walked, WIDTH, async (probe) => {
      const declared = Object.keys(probe.op.responses as Json);
      const abort = new AbortController();
      let res: Response;
      try {
        res = await fetch(`${sup.base}${filled(probe.path)}${probe.query ? `?${probe.query}` : ''}`, {
          signal: abort.signal,
        });
      } finally {
        // Only the status and headers are read: a stream opened must not hold the walk.
        abort.abort();
      }
      const status = String(res.status);
      const type = res.headers.get('content-type') ?? '';
      const what = `GET ${probe.path} ${probe.what}: ${status}`;
      if (status === '500') undeclared.push(`${what}: a server error for a client's value`);
      else if (!declared.includes(status)) undeclared.push(`${what} (declared: ${declared.join(', ')})`);
      else if (res.status >= 400 && !type.startsWith('application/problem+json')) undeclared.push(`${what} as ${type}`);
    });
    // A guard: the walk reached the operations that hold query parameters of every kind.
    const whats = new Set(walked.map((p) => `${p.path} ${p.what}`));
    for (const expected of [
      '/v0/auth/exchange no query',
      '/v0/city/{cityName}/waits state="not-one-of-them"',
      '/v0/city/{cityName}/mail/count rig repeated',
      '/v0/events limit="1.5"',
    ]) {
      expect(whats, expected).to.include(expected);
    }
    expect(undeclared.sort(), `${undeclared.length} undeclared:\n${undeclared.join('\n')}`).to.deep.equal([]);
  });

  it('answers each with a status its operation declares, as application/problem+json', async function () {
    const undeclared: string[] = [];
    await inLanes(probes(), WIDTH, async (probe) => {
      const op = (doc.paths as Record<string, Json>)[probe.path][probe.method] as Json;
      const declared = Object.keys(op.responses as Json);
      const abort = new AbortController();
      // Only the status and headers are read: a stream that were opened by mistake must not hold the walk.
      const res = await fetch(urlOf(probe), {
        method: probe.method.toUpperCase(),
        headers: probe.method === 'get' ? {} : CSRF,
        signal: abort.signal,
      });
      const status = String(res.status);
      const type = res.headers.get('content-type') ?? '';
      abort.abort();
      const what = `${probe.method.toUpperCase()} ${probe.path} ${probe.param}=${JSON.stringify(probe.value)}: ${status}`;
      if (status === '500') undeclared.push(`${what}: a server error for a bad value`);
      else if (!declared.includes(status)) undeclared.push(`${what} (declared: ${declared.join(', ')})`);
      else if (res.status >= 400 && !type.startsWith('application/problem+json')) undeclared.push(`${what} as ${type}`);
      else if (res.status < 400) undeclared.push(`${what}: a value the parameter refuses was accepted`);
    });
    expect(undeclared.sort(), undeclared.join('\n')).to.deep.equal([]);
  });
});
