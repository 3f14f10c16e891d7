// The HTTP conventions both processes share (CSRF guard, X-CTL-Request-Id, problem+json errors, the Host check,
// read-only mode, CORS) and the OpenAPI document, checked against real supervisor and controller processes.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { execa, type ResultPromise } from 'execa';
import { newCityConfigText } from '../shared/config/city-config.js';
import { ctlEntryPath } from '../shared/paths.js';
import { isAlive, killAllMentioning } from './helpers/processes.js';
import { inLanes } from './helpers/lanes.js';
import { expectProblem } from './helpers/city-api.js';
import { RawConnection } from './helpers/raw-http.js';
import { CSRF, freePort, tempDir, TestSupervisor } from './helpers/supervisor.js';
import { seededToken } from './helpers/tokens.js';
import { waitUntil } from './helpers/wait.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CSRF_DETAIL = 'csrf: X-CTL-Request header required on mutation endpoints';
const CSRF_LINE = 'X-CTL-Request: 1\r\n';
const CSRF_PARAM_REF = '#/components/parameters/X-CTL-Request';
const REQUEST_ID_REF = '#/components/headers/X-CTL-Request-Id';
const REQUEST_ID = /^[0-9a-f]{16}$/;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const MUTATIONS = ['post', 'put', 'patch', 'delete'];
const CITY = 'alpha';

// ---------------------------------------------------------------------------------------------------------------
// A plain node:http client: it can set any Host header, and it shows every header line as sent (so a header that
// appears twice is seen twice, which fetch would join into one value).

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  text: string;
  body: Json | undefined;
}

interface CallOptions {
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Header lines exactly as given, `[name, value, name, value, …]`, instead of `headers` (and no Host of ours). */
  rawHeaders?: string[];
}

function call(port: number, method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...options.headers };
    if (options.body !== undefined) headers['Content-Length'] = Buffer.byteLength(options.body);
    const target = { host: '127.0.0.1', port, method, path, agent: false as const };
    const given = options.rawHeaders
      ? { ...target, headers: options.rawHeaders, setHost: false }
      : { ...target, headers };
    const req = request(given, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Json | undefined;
        try {
          body = text ? (JSON.parse(text) as Json) : undefined;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, text, body });
      });
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
    req.end(options.body);
  });
}

/** `depth` objects nested in one another, `{"a":{"a":…{}}}`, as JSON text (JSON.stringify would overflow). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
}

/** Every value of a response header, one per header line. */
function headerValues(reply: Reply, name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < reply.rawHeaders.length; i += 2) {
    if (reply.rawHeaders[i].toLowerCase() === name.toLowerCase()) values.push(reply.rawHeaders[i + 1]);
  }
  return values;
}

function describeReply(reply: Reply): string {
  return `${reply.status} ${reply.text.slice(0, 400)}`;
}

/** Exactly one `X-CTL-Request-Id`, 16 lowercase hex characters; returns it. */
function expectRequestId(reply: Reply, what = ''): string {
  const values = headerValues(reply, 'X-CTL-Request-Id');
  expect(values, `X-CTL-Request-Id ${what}`).to.have.length(1);
  expect(values[0], `X-CTL-Request-Id ${what}`).to.match(REQUEST_ID);
  return values[0];
}

// ---------------------------------------------------------------------------------------------------------------
// The OpenAPI document, walked.

interface Operation {
  method: string;
  path: string;
  op: Json;
}

function operationsOf(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const method of METHODS) {
      if (item[method]) out.push({ method, path, op: item[method] as Json });
    }
  }
  return out;
}

/**
 * The webhook listener's delivery (a server of its own, `[webhooks] listen`) is the one mutation without the
 * marker: its signature is its credential. It is no operation of the control plane, whose every mutation needs it.
 */
const WEBHOOK_DELIVERY = '/hooks/{city}/{name}';

function mutationsOf(doc: Json): Operation[] {
  return operationsOf(doc).filter((o) => MUTATIONS.includes(o.method) && o.path !== WEBHOOK_DELIVERY);
}

/** A concrete request path: `{cityName}` is the given city, any other parameter a placeholder. */
function fill(path: string, cityName: string): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(name === 'cityName' ? cityName : 'x1'));
}

function resolveRef(doc: Json, value: Json): Json {
  let current = value;
  for (let hops = 0; current && typeof current.$ref === 'string' && hops < 10; hops++) {
    const ref = current.$ref;
    expect(ref, 'only local references').to.match(/^#\//);
    current = ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<Json>((node, key) => node?.[key] as Json, doc);
  }
  return current;
}

/** Objects in `value` that use `key` as a keyword (names inside a `properties` map do not count). */
function objectsWithKeyword(value: unknown, key: string, inPropertyMap = false): Json[] {
  if (Array.isArray(value)) return value.flatMap((v) => objectsWithKeyword(v, key));
  if (typeof value !== 'object' || value === null) return [];
  const found: Json[] = [];
  if (!inPropertyMap && key in value) found.push(value);
  for (const [k, v] of Object.entries(value)) {
    found.push(...objectsWithKeyword(v, key, !inPropertyMap && (k === 'properties' || k === 'patternProperties')));
  }
  return found;
}

async function fetchDocument(base: string): Promise<Json> {
  const res = await fetch(`${base}/openapi.json`);
  expect(res.status).to.equal(200);
  return (await res.json()) as Json;
}

async function cleanupSupervisor(sup: TestSupervisor | undefined): Promise<void> {
  if (!sup) return;
  const root = sup.root;
  try {
    await sup.cleanup();
  } finally {
    killAllMentioning(root);
  }
}

// ---------------------------------------------------------------------------------------------------------------

describe('HTTP conventions (real supervisor and controllers)', function () {
  this.timeout(60_000);

  let sup: TestSupervisor;
  let doc: Json;

  before(async function () {
    sup = await TestSupervisor.start();
    await sup.createCity(CITY);
    doc = await fetchDocument(sup.base);
  });

  after(async function () {
    await cleanupSupervisor(sup);
  });

  describe('CSRF guard on every mutation the OpenAPI document lists', function () {
    it('the document lists mutations, supervisor-level and per-city ones', function () {
      const listed = mutationsOf(doc).map((o) => `${o.method.toUpperCase()} ${o.path}`);
      expect(listed).to.include.members(['POST /v0/city', 'POST /v0/city/{cityName}/unregister']);
      expect(listed.some((l) => /\/v0\/city\/\{cityName\}\//.test(l))).to.equal(true);
    });

    it('every mutation declares the required X-CTL-Request header parameter ($ref), and no read does', function () {
      const param = doc.components?.parameters?.['X-CTL-Request'] as Json | undefined;
      expect(param, 'components.parameters.X-CTL-Request').to.be.an('object');
      expect(param).to.deep.include({ name: 'X-CTL-Request', in: 'header', required: true });
      const problems: string[] = [];
      for (const { method, path, op } of operationsOf(doc)) {
        const params = (op.parameters as Json[] | undefined) ?? [];
        const refs = params.filter((p) => p.$ref === CSRF_PARAM_REF).length;
        const inline = params.filter((p) => String(p.name).toLowerCase() === 'x-ctl-request').length;
        const mutation = MUTATIONS.includes(method) && path !== WEBHOOK_DELIVERY;
        if (path === WEBHOOK_DELIVERY && refs + inline !== 0)
          problems.push(`${method} ${path}: declares X-CTL-Request`);
        if (mutation && (refs !== 1 || inline !== 0))
          problems.push(`${method} ${path}: ${refs} $ref(s), ${inline} inline`);
        if (!mutation && refs + inline !== 0) problems.push(`${method} ${path}: a read declares X-CTL-Request`);
      }
      expect(problems).to.deep.equal([]);
    });

    it('every response object of every operation declares the X-CTL-Request-Id header', function () {
      const header = doc.components?.headers?.['X-CTL-Request-Id'] as Json | undefined;
      expect(header, 'components.headers.X-CTL-Request-Id').to.be.an('object');
      expect(header!.schema).to.deep.include({ type: 'string', pattern: '^[0-9a-f]{16}$' });
      const missing: string[] = [];
      let count = 0;
      for (const { method, path, op } of operationsOf(doc)) {
        for (const [status, response] of Object.entries((op.responses as Json) ?? {})) {
          count++;
          const resolved = resolveRef(doc, response as Json);
          const declared = resolved?.headers?.['X-CTL-Request-Id'] as Json | undefined;
          if (!declared || (declared.$ref !== undefined && declared.$ref !== REQUEST_ID_REF)) {
            missing.push(`${method} ${path} ${status}`);
          }
        }
      }
      expect(count).to.be.greaterThan(0);
      expect(missing).to.deep.equal([]);
    });

    it('every mutation without X-CTL-Request answers 403 csrf, through the proxy too, and changes nothing', async function () {
      const mutations = mutationsOf(doc);
      const failures: string[] = [];
      for (const { method, path } of mutations) {
        const target = fill(path, CITY);
        const reply = await call(sup.port, method.toUpperCase(), target, {
          headers: { 'Content-Type': 'application/json' },
          body: '{}',
        });
        try {
          const body = expectProblem(reply, 403, 'forbidden', {
            what: `${method.toUpperCase()} ${target}`,
            conventions: true,
          });
          expect(body.detail).to.equal(CSRF_DETAIL);
        } catch (err) {
          failures.push(`${method.toUpperCase()} ${target}: ${(err as Error).message}`);
        }
      }
      expect(failures).to.deep.equal([]);
      // Not stopped, not unregistered: nothing ran.
      expect(await sup.city(CITY)).to.include({ name: CITY, running: true });
      expect((await sup.api.GET('/v0/cities')).data!.items.map((c) => c.name)).to.deep.equal([CITY]);
    });

    it('the same without a body', async function () {
      const failures: string[] = [];
      for (const { method, path } of mutationsOf(doc)) {
        const target = fill(path, CITY);
        const reply = await call(sup.port, method.toUpperCase(), target);
        if (reply.status !== 403 || reply.body?.detail !== CSRF_DETAIL)
          failures.push(`${method} ${target}: ${describeReply(reply)}`);
      }
      expect(failures).to.deep.equal([]);
    });

    it('an empty X-CTL-Request is refused like a missing one', async function () {
      const failures: string[] = [];
      for (const { method, path } of mutationsOf(doc)) {
        const target = fill(path, CITY);
        const reply = await call(sup.port, method.toUpperCase(), target, {
          headers: { 'Content-Type': 'application/json', 'X-CTL-Request': '' },
          body: '{}',
        });
        try {
          const body = expectProblem(reply, 403, 'forbidden', {
            what: `${method.toUpperCase()} ${target}`,
            conventions: true,
          });
          expect(body.detail).to.equal(CSRF_DETAIL);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      expect(failures).to.deep.equal([]);
      expect(await sup.city(CITY)).to.include({ running: true });
    });

    it('any non-empty value passes the check (on the supervisor and through the proxy)', async function () {
      const create = await call(sup.port, 'POST', '/v0/city', {
        headers: { 'Content-Type': 'application/json', 'X-CTL-Request': '1' },
        body: '{}',
      });
      expectProblem(create, 422, 'validation-failed', { what: 'POST /v0/city {}', conventions: true });
      const emit = await call(sup.port, 'POST', `/v0/city/${CITY}/events`, {
        headers: { 'Content-Type': 'application/json', 'X-CTL-Request': 'yes' },
        body: JSON.stringify({ type: 'test.csrf', actor: 'http-conventions' }),
      });
      expect(emit.status, describeReply(emit)).to.equal(201);
      expectRequestId(emit, 'proxied 201');
    });

    it('every method but GET, HEAD and OPTIONS needs it, those no route takes too (TRACE, PROPFIND, …)', async function () {
      const failures: string[] = [];
      for (const method of ['TRACE', 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE', 'QUERY']) {
        for (const path of ['/health', '/v0/cities', `/v0/city/${CITY}/status`, '/nope']) {
          const reply = await call(sup.port, method, path);
          if (reply.status !== 403 || reply.body?.detail !== CSRF_DETAIL)
            failures.push(`${method} ${path}: ${describeReply(reply)}`);
        }
      }
      expect(failures).to.deep.equal([]);
    });

    it('reads need no X-CTL-Request', async function () {
      for (const path of ['/health', '/v0/cities', '/v0/events', `/v0/city/${CITY}/status`, '/openapi.json']) {
        const reply = await call(sup.port, 'GET', path);
        expect(reply.status, `GET ${path} ${describeReply(reply)}`).to.equal(200);
      }
    });
  });

  describe('X-CTL-Request-Id on every kind of response', function () {
    it('a 200 from the supervisor', async function () {
      const reply = await call(sup.port, 'GET', '/health');
      expect(reply.status).to.equal(200);
      expectRequestId(reply);
    });

    it('a 200 proxied from a controller carries exactly one id', async function () {
      const reply = await call(sup.port, 'GET', `/v0/city/${CITY}/status`);
      expect(reply.status, describeReply(reply)).to.equal(200);
      expect(reply.body!.name).to.equal(CITY);
      expectRequestId(reply, 'proxied');
      expect(headerValues(reply, 'X-CTL-Index')).to.have.length(1);
      // A client cannot choose the supervisor's id, proxied or not.
      const forged = await call(sup.port, 'GET', `/v0/city/${CITY}/status`, {
        headers: { 'X-CTL-Request-Id': 'aaaaaaaaaaaaaaaa' },
      });
      expect(expectRequestId(forged, 'proxied, client-sent id')).to.not.equal('aaaaaaaaaaaaaaaa');
    });

    it('a 404 for an unknown route, on the supervisor and from a controller', async function () {
      expectProblem(await call(sup.port, 'GET', '/v0/no-such-thing'), 404, 'route-not-found', { conventions: true });
      expectProblem(await call(sup.port, 'GET', '/nope'), 404, 'route-not-found', { conventions: true });
      const proxied = await call(sup.port, 'GET', `/v0/city/${CITY}/no-such-thing`);
      expectProblem(proxied, 404, 'route-not-found', { what: 'proxied unknown route', conventions: true });
    });

    it('a 404 for a city that is not running: typed routes name it, svc/* answers the static detail', async function () {
      for (const rest of ['/status', '', '/events', '/config', '/health']) {
        const reply = await call(sup.port, 'GET', `/v0/city/ghost${rest}`);
        const body = expectProblem(reply, 404, 'city-not-found', {
          what: `GET /v0/city/ghost${rest}`,
          conventions: true,
        });
        expect(body.detail).to.equal('not_found: city not found or not running: ghost');
      }
      for (const path of ['/v0/city/ghost/svc/x', '/v0/city/ghost/svc/x/deeper?q=1']) {
        const svc = await call(sup.port, 'GET', path);
        const body = expectProblem(svc, 404, undefined, { what: `GET ${path}`, conventions: true });
        expect(body.detail).to.equal('not_found: city not found or not running');
      }
    });

    it('a 400 problem with a request id for an HTTP/1.1 request without a Host header, or with two', async function () {
      for (const path of ['/health', `/v0/city/${CITY}/status`]) {
        const none = await call(sup.port, 'GET', path, { rawHeaders: [] });
        const body = expectProblem(none, 400, 'invalid-request', {
          what: `GET ${path} without Host`,
          conventions: true,
        });
        expect(body.detail).to.equal('invalid: an HTTP/1.1 request needs a Host header');
        const two = await call(sup.port, 'GET', path, { rawHeaders: ['Host', '127.0.0.1', 'Host', 'evil.example'] });
        expect(
          expectProblem(two, 400, 'invalid-request', { what: `GET ${path} with two Hosts`, conventions: true }).detail,
        ).to.equal('invalid: more than one Host header');
      }
    });

    it('a 405 with an Allow header for a stream path asked with another method', async function () {
      for (const path of ['/v0/events/stream', `/v0/city/${CITY}/events/stream`]) {
        const reply = await call(sup.port, 'POST', path, { headers: CSRF });
        expectProblem(reply, 405, 'method-not-allowed', { what: `POST ${path}`, conventions: true });
        expect(String(reply.headers.allow)).to.equal('GET, HEAD');
      }
    });

    it('a 405, on the supervisor and from a controller, with an Allow header', async function () {
      const reply = await call(sup.port, 'GET', '/v0/city');
      expectProblem(reply, 405, 'method-not-allowed', { what: 'GET /v0/city', conventions: true });
      expect(String(reply.headers.allow)).to.include('POST');
      const proxied = await call(sup.port, 'DELETE', `/v0/city/${CITY}/status`, { headers: CSRF });
      expectProblem(proxied, 405, 'method-not-allowed', { what: `DELETE /v0/city/${CITY}/status`, conventions: true });
      expect(String(proxied.headers.allow)).to.include('GET');
    });

    it('a HEAD', async function () {
      for (const path of ['/health', `/v0/city/${CITY}/status`]) {
        const reply = await call(sup.port, 'HEAD', path);
        expect(reply.status, path).to.equal(200);
        expect(reply.text).to.equal('');
        expectRequestId(reply, `HEAD ${path}`);
      }
    });

    it('a method no route takes (TRACE, PROPFIND, …) is a 405 problem with the Allow header of its path', async function () {
      const failures: string[] = [];
      for (const method of ['TRACE', 'PROPFIND', 'MKCOL', 'QUERY']) {
        for (const path of ['/health', `/v0/city/${CITY}/status`, `/v0/city/${CITY}/bead/x1`]) {
          const reply = await call(sup.port, method, path, { headers: CSRF });
          try {
            expectProblem(reply, 405, 'method-not-allowed', { what: `${method} ${path}`, conventions: true });
            const allow = String(reply.headers.allow).split(', ');
            expect(allow, `Allow of ${method} ${path}`).to.include.members(['GET', 'HEAD']);
            expect(allow, `Allow of ${method} ${path}`).to.not.include(method);
          } catch (err) {
            failures.push((err as Error).message);
          }
        }
      }
      expect(failures).to.deep.equal([]);
      // A path no route has stays a 404, whatever the method.
      expectProblem(await call(sup.port, 'TRACE', '/nope', { headers: CSRF }), 404, 'route-not-found', {
        conventions: true,
      });
    });

    it('a malformed percent-encoding in a city name is a 4xx problem, not a 500', async function () {
      const failures: string[] = [];
      for (const path of ['/v0/city/%E0%A4%A/status', '/v0/city/%E0%A4%A/svc/x', '/v0/city/%zz']) {
        const reply = await call(sup.port, 'GET', path);
        try {
          expect([400, 404], `GET ${path}: ${describeReply(reply)}`).to.include(reply.status);
          expectProblem(reply, reply.status, undefined, { what: `GET ${path}`, conventions: true });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      expect(failures).to.deep.equal([]);
    });

    it('a 422', async function () {
      const reply = await call(sup.port, 'POST', '/v0/city', {
        headers: { ...CSRF, 'Content-Type': 'application/json' },
        body: JSON.stringify({ dir: sup.cityDir('unused'), start_command: 'true', bogus: 1 }),
      });
      expectProblem(reply, 422, 'validation-failed', { conventions: true });
    });

    it('a CORS preflight', async function () {
      const reply = await call(sup.port, 'OPTIONS', '/v0/city', {
        headers: { Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'POST' },
      });
      expect(reply.status).to.equal(204);
      expectRequestId(reply);
    });

    it('a 421', async function () {
      const reply = await call(sup.port, 'GET', '/health', { headers: { Host: 'evil.example' } });
      expectProblem(reply, 421, 'host-not-allowed', { conventions: true });
    });

    it('GET /openapi.json', async function () {
      const reply = await call(sup.port, 'GET', '/openapi.json');
      expect(reply.status).to.equal(200);
      expect(String(reply.headers['content-type'])).to.match(/^application\/json/);
      expectRequestId(reply);
    });

    it('two requests get different ids', async function () {
      const a = expectRequestId(await call(sup.port, 'GET', '/health'));
      const b = expectRequestId(await call(sup.port, 'GET', '/health'));
      const c = expectRequestId(await call(sup.port, 'GET', `/v0/city/${CITY}/status`));
      const d = expectRequestId(await call(sup.port, 'GET', `/v0/city/${CITY}/status`));
      expect(new Set([a, b, c, d]).size).to.equal(4);
    });
  });

  describe("requests node's HTTP parser refuses: problems too, then the connection closes", function () {
    const host = () => `Host: 127.0.0.1:${sup.port}\r\n`;
    const cases: [string, () => string, number, string][] = [
      ['a NUL in the path', () => `GET /health\0x HTTP/1.1\r\n${host()}\r\n`, 400, 'invalid-request'],
      [
        'a control character in the path',
        () => `GET /v0/city/${CITY}/st\x01atus HTTP/1.1\r\n${host()}\r\n`,
        400,
        'invalid-request',
      ],
      ['a space in the path', () => `GET /he alth HTTP/1.1\r\n${host()}\r\n`, 400, 'invalid-request'],
      [
        'a target that is neither a path nor a URL',
        () => `GET http:/health HTTP/1.1\r\n${host()}\r\n`,
        400,
        'invalid-request',
      ],
      [
        'a header name with a space',
        () => `GET /health HTTP/1.1\r\n${host()}Bad Header: x\r\n\r\n`,
        400,
        'invalid-request',
      ],
      [
        'a header name with a separator',
        () => `GET /health HTTP/1.1\r\n${host()}Bad(: x\r\n\r\n`,
        400,
        'invalid-request',
      ],
      [
        'both Content-Length and Transfer-Encoding',
        () =>
          `POST /v0/city HTTP/1.1\r\n${host()}X-CTL-Request: 1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
        400,
        'invalid-request',
      ],
      [
        'two Content-Lengths',
        () => `POST /v0/city HTTP/1.1\r\n${host()}X-CTL-Request: 1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab`,
        400,
        'invalid-request',
      ],
      ['bare LF line ends', () => `GET /health HTTP/1.1\n${host()}\n`, 400, 'invalid-request'],
      [
        'headers over 16 KiB',
        () => `GET /health HTTP/1.1\r\n${host()}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'headers-too-large',
      ],
      [
        'a URL over 16 KiB',
        () => `GET /health?${'a'.repeat(20_000)} HTTP/1.1\r\n${host()}\r\n`,
        431,
        'headers-too-large',
      ],
      ['a method the parser does not know', () => `FOO /health HTTP/1.1\r\n${host()}\r\n`, 501, 'not-implemented'],
      ['a lowercase method', () => `get /health HTTP/1.1\r\n${host()}\r\n`, 501, 'not-implemented'],
      ['a garbage request line', () => `hello there\r\n\r\n`, 400, 'invalid-request'],
      ['a word alone', () => `GARBAGE\r\n\r\n`, 400, 'invalid-request'],
      ['TLS bytes on the plain port', () => '\x16\x03\x01\x02\x00\x01\x00\r\n\r\n', 400, 'invalid-request'],
    ];

    for (const [what, request, status, code] of cases) {
      it(`${what}: ${status} ${code}`, async function () {
        const connection = await RawConnection.open(sup.port);
        try {
          await connection.write(request());
          const reply = await connection.response();
          const body = expectProblem(reply, status, code, { what, conventions: true });
          expect(body.detail).to.match(/^[a-z_]+: \S/);
          expect(String(reply.headers.connection).toLowerCase(), 'Connection').to.equal('close');
          await connection.closedByServer();
        } finally {
          connection.destroy();
        }
      });
    }

    it('a malformed chunk in the body of a request already routed: a 400 problem at once, on the supervisor and proxied', async function () {
      this.timeout(15_000);
      for (const path of ['/v0/city', `/v0/city/${CITY}/events`]) {
        const connection = await RawConnection.open(sup.port);
        try {
          await connection.write(
            `POST ${path} HTTP/1.1\r\n${host()}X-CTL-Request: 1\r\nContent-Type: application/json\r\n` +
              'Transfer-Encoding: chunked\r\n\r\n2\r\n{"\r\n',
          );
          // The body has begun to arrive: the route is reading it when the broken chunk comes.
          await connection.write('zz\r\nnot a chunk\r\n');
          const reply = await connection.response();
          expectProblem(reply, 400, 'invalid-request', { what: path, conventions: true });
          await connection.closedByServer();
        } finally {
          connection.destroy();
        }
      }
    });

    it('a malformed request pipelined behind a good one: the good one is answered first, then the problem', async function () {
      const connection = await RawConnection.open(sup.port);
      try {
        await connection.write(
          `GET /health HTTP/1.1\r\n${host()}\r\nGET /v0/city/${CITY}/status HTTP/1.1\r\n${host()}\r\n` +
            `GET /bad\0 HTTP/1.1\r\n${host()}\r\n`,
        );
        const first = await connection.response();
        expect(first.status, describeReply(first)).to.equal(200);
        expect(first.body!.status).to.equal('ok');
        const second = await connection.response();
        expect(second.status, describeReply(second)).to.equal(200);
        expect(second.body!.name).to.equal(CITY);
        expectProblem(await connection.response(), 400, 'invalid-request', {
          what: 'the malformed one',
          conventions: true,
        });
        await connection.closedByServer();
      } finally {
        connection.destroy();
      }
    });
  });

  describe('a refused body leaves the connection usable for the next request', function () {
    // Node parses the next request on a connection only once the body before it has been read: a refused body
    // left half-read used to hold the connection until the keep-alive timeout (65 s).
    this.timeout(15_000);
    const OVER = 2 * 1024 * 1024;

    function sized(path: string, body: string, headers = CSRF_LINE): string {
      const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: application/json\r\n`;
      return `${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    }

    function chunked(path: string, body: string): string {
      let out = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${CSRF_LINE}Content-Type: application/json\r\n`;
      out += 'Transfer-Encoding: chunked\r\n\r\n';
      for (let i = 0; i < body.length; i += 64 * 1024) {
        const chunk = body.slice(i, i + 64 * 1024);
        out += `${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`;
      }
      return `${out}0\r\n\r\n`;
    }

    /** Sends a request the server refuses, then another on the same connection (or, if told to, a new one). */
    async function refusedThenNext(request: string, status: number, code: string, next: string): Promise<Reply> {
      const connection = await RawConnection.open(sup.port);
      try {
        // Not awaited: a server that answers early need not read all of it before answering.
        void connection.write(request);
        const refused = await connection.response();
        expectProblem(refused, status, code, { what: 'the refused request', conventions: true });
        if (String(refused.headers.connection).toLowerCase() === 'close') {
          await connection.closedByServer();
          const fresh = await RawConnection.open(sup.port);
          try {
            await fresh.write(next);
            return await fresh.response();
          } finally {
            fresh.destroy();
          }
        }
        await connection.write(next);
        return await connection.response();
      } finally {
        connection.destroy();
      }
    }

    const bigCity = () => JSON.stringify({ dir: sup.cityDir('big'), start_command: 'x'.repeat(OVER) });
    const bigBead = () => JSON.stringify({ title: 'big', description: 'x'.repeat(OVER) });
    const health = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const status = `GET /v0/city/${CITY}/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

    it("a supervisor route's 413 for a body with a Content-Length over 1 MiB", async function () {
      const next = await refusedThenNext(sized('/v0/city', bigCity()), 413, 'payload-too-large', health);
      expect(next.status, describeReply(next)).to.equal(200);
    });

    it("a supervisor route's 413 for a chunked body over 1 MiB", async function () {
      const next = await refusedThenNext(chunked('/v0/city', bigCity()), 413, 'payload-too-large', health);
      expect(next.status, describeReply(next)).to.equal(200);
    });

    it("a per-city route's 413 (proxied) for a body with a Content-Length over 1 MiB", async function () {
      const next = await refusedThenNext(sized(`/v0/city/${CITY}/beads`, bigBead()), 413, 'payload-too-large', status);
      expect(next.status, describeReply(next)).to.equal(200);
      expect(next.body!.name).to.equal(CITY);
    });

    it("a per-city route's 413 (proxied) for a chunked body over 1 MiB", async function () {
      const next = await refusedThenNext(
        chunked(`/v0/city/${CITY}/beads`, bigBead()),
        413,
        'payload-too-large',
        status,
      );
      expect(next.status, describeReply(next)).to.equal(200);
    });

    it('a 403 before the body is read, on the supervisor and proxied', async function () {
      for (const path of ['/v0/city', `/v0/city/${CITY}/beads`]) {
        const next = await refusedThenNext(sized(path, bigBead(), ''), 403, 'forbidden', status);
        expect(next.status, describeReply(next)).to.equal(200);
      }
    });
  });

  describe('error bodies of POST /v0/city', function () {
    const post = (body: string | Buffer, contentType = 'application/json') =>
      call(sup.port, 'POST', '/v0/city', { headers: { ...CSRF, 'Content-Type': contentType }, body });

    it('a body that is not JSON: 400', async function () {
      const body = expectProblem(await post('{"dir": '), 400, 'invalid-request', { conventions: true });
      expect(body.detail).to.match(/^invalid: /);
    });

    it('JSON that is not an object: 400 or 422', async function () {
      for (const text of ['[]', '"a string"', '42', 'null']) {
        const reply = await post(text);
        expect([400, 422], `${text} → ${describeReply(reply)}`).to.include(reply.status);
        expectProblem(reply, reply.status, undefined, { what: text, conventions: true });
      }
    });

    it('a body that is not application/json: 415', async function () {
      const body = expectProblem(await post('dir=/tmp/x', 'text/plain'), 415, 'unsupported-media-type', {
        conventions: true,
      });
      expect(body.detail).to.match(/^unsupported_media_type: /);
      const form = await post('dir=/tmp/x', 'application/x-www-form-urlencoded');
      expectProblem(form, 415, 'unsupported-media-type', { what: 'form body', conventions: true });
    });

    it('a body over 1 MiB: 413', async function () {
      const big = JSON.stringify({ dir: sup.cityDir('big'), start_command: 'x'.repeat(1024 * 1024 + 10) });
      const body = expectProblem(await post(big), 413, 'payload-too-large', { conventions: true });
      expect(body.detail).to.match(/^too_large: /);
    });

    it('JSON nested deeper than 64 levels: 422 naming body, not a 500', async function () {
      const dir = JSON.stringify(sup.cityDir('deep'));
      // 64 levels under the body's own object: one more than the limit.
      for (const depth of [5000, 100_000, 64]) {
        for (const body of [
          `{"dir": ${dir}, "start_command": ${nested(depth)}}`,
          `{"dir": ${dir}, "start_command": "true", "x": ${nested(depth)}}`,
        ]) {
          const problem = expectProblem(await post(body), 422, 'validation-failed', {
            what: `depth ${depth}`,
            conventions: true,
          });
          expect(problem.detail).to.match(/^invalid: body: /);
          expect((problem.errors as Json[]).map((e) => String(e.location))).to.deep.equal(['body']);
        }
      }
      expect(await sup.city('deep')).to.equal(undefined);
    });

    it('an unknown field: 422 with an errors entry naming it', async function () {
      const dir = sup.cityDir('unknown-field');
      const body = expectProblem(
        await post(JSON.stringify({ dir, start_command: 'sleep 1', bogus: true })),
        422,
        'validation-failed',
        { conventions: true },
      );
      expect(body.errors, JSON.stringify(body)).to.be.an('array').that.is.not.empty;
      const locations = (body.errors as Json[]).map((e) => String(e.location));
      expect(locations, JSON.stringify(body.errors)).to.include('body.bogus');
      for (const e of body.errors as Json[]) expect(e.message, JSON.stringify(e)).to.be.a('string');
      expect(await sup.city('unknown-field')).to.equal(undefined);
    });

    it('missing dir: 422 naming body.dir', async function () {
      const body = expectProblem(await post(JSON.stringify({ start_command: 'sleep 1' })), 422, 'validation-failed', {
        conventions: true,
      });
      expect((body.errors as Json[]).map((e) => String(e.location))).to.include('body.dir');
    });

    it('dir of the wrong type: 422 naming body.dir', async function () {
      const body = expectProblem(
        await post(JSON.stringify({ dir: 42, start_command: 'sleep 1' })),
        422,
        'validation-failed',
        { conventions: true },
      );
      expect((body.errors as Json[]).map((e) => String(e.location))).to.include('body.dir');
    });

    it('both or neither of provider and start_command: 422 naming them', async function () {
      const dir = sup.cityDir('both-or-neither');
      for (const extra of [{ provider: 'claude', start_command: 'sleep 1' }, {}]) {
        const reply = await post(JSON.stringify({ dir, ...extra }));
        const body = expectProblem(reply, 422, 'validation-failed', { what: JSON.stringify(extra), conventions: true });
        const locations = (body.errors as Json[]).map((e) => String(e.location));
        expect(locations).to.include.members(['body.provider', 'body.start_command']);
      }
      expect(await sup.city('both-or-neither')).to.equal(undefined);
    });
  });

  describe('deeply nested JSON on per-city routes (proxied)', function () {
    const send = (path: string, body: string) =>
      call(sup.port, 'POST', `/v0/city/${CITY}${path}`, {
        headers: { ...CSRF, 'Content-Type': 'application/json' },
        body,
      });

    it('POST …/beads with JSON nested 5,000 levels, or one more than 64: 422 naming body', async function () {
      for (const depth of [5000, 64]) {
        const reply = await send('/beads', `{"title": "deep", "metadata": ${nested(depth)}}`);
        const problem = expectProblem(reply, 422, 'validation-failed', { what: `depth ${depth}`, conventions: true });
        expect((problem.errors as Json[]).map((e) => String(e.location))).to.deep.equal(['body']);
      }
      const reply = await send('/beads', `[${'['.repeat(5000)}${']'.repeat(5000)}]`);
      expectProblem(reply, 422, 'validation-failed', { what: 'nested arrays', conventions: true });
    });

    it('POST …/events takes a payload nested up to the limit, and refuses one level more', async function () {
      // The body's object is level 1, the payload level 2: 62 more levels inside it make 64.
      const atLimit = await send('/events', `{"type": "test.deep", "actor": "t", "payload": {"p": ${nested(62)}}}`);
      expect(atLimit.status, describeReply(atLimit)).to.equal(201);
      const seq = atLimit.body!.seq as number;
      const listed = await call(sup.port, 'GET', `/v0/city/${CITY}/events?type=test.deep`);
      expect(listed.status).to.equal(200);
      expect((listed.body!.items as Json[]).map((e) => e.seq as number)).to.include(seq);
      const over = await send('/events', `{"type": "test.deep", "actor": "t", "payload": {"p": ${nested(63)}}}`);
      expectProblem(over, 422, 'validation-failed', { what: 'one level more', conventions: true });
      const deep = await send('/events', `{"type": "test.deep", "actor": "t", "payload": {"p": ${nested(5000)}}}`);
      expectProblem(deep, 422, 'validation-failed', { what: '5,000 levels', conventions: true });
    });
  });

  describe('error bodies of query validation', function () {
    it('query validation errors are problems too, naming the parameter', async function () {
      for (const path of ['/v0/events?limit=abc', `/v0/city/${CITY}/events?limit=abc`]) {
        const limit = await call(sup.port, 'GET', path);
        expect([400, 422], describeReply(limit)).to.include(limit.status);
        const body = expectProblem(limit, limit.status, undefined, { what: path, conventions: true });
        expect((body.errors as Json[]).map((e) => String(e.location))).to.include('query.limit');
      }
    });

    it('an invalid query value answers a 400 whose detail has the `prefix: ` form', async function () {
      const failures: string[] = [];
      for (const path of ['/v0/events?since=bogus', `/v0/city/${CITY}/events?since=bogus`]) {
        try {
          expectProblem(await call(sup.port, 'GET', path), 400, 'invalid-request', { what: path, conventions: true });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      expect(failures).to.deep.equal([]);
    });
  });

  describe('Host header', function () {
    it('an unknown host: 421 host_not_allowed, before any routing, proxying or mutation', async function () {
      for (const host of ['evil.example', `evil.example:${sup.port}`, 'myhost.test', `localhost.evil.example`]) {
        const body = expectProblem(
          await call(sup.port, 'GET', '/health', { headers: { Host: host } }),
          421,
          'host-not-allowed',
          { what: host, conventions: true },
        );
        expect(body.detail).to.match(/^host_not_allowed: /);
      }
      const proxied = await call(sup.port, 'GET', `/v0/city/${CITY}/status`, { headers: { Host: 'evil.example' } });
      expectProblem(proxied, 421, 'host-not-allowed', { what: 'proxied', conventions: true });
      const mutation = await call(sup.port, 'POST', `/v0/city/${CITY}/stop`, {
        headers: { ...CSRF, Host: 'evil.example' },
      });
      expectProblem(mutation, 421, 'host-not-allowed', { what: 'mutation', conventions: true });
      expect(await sup.city(CITY)).to.include({ running: true });
    });

    it('a Host that is not exactly an accepted name and an optional port: 421, mutations included', async function () {
      const p = sup.port;
      const hosts = [
        `127.0.0.1:${p}.evil.com`,
        '[::1].evil.com',
        `[::1]:${p}.evil.com`,
        'localhost:evil.com',
        `localhost:${p}@evil.com`,
        `user@localhost:${p}`,
        `localhost:${p}/evil.com`,
        `localhost:${p}:1`,
        'localhost:',
        'localhost:0',
        'localhost:65536',
        'localhost:-1',
        'localhost.',
        '127.999.999.999',
        '127.0.0.256',
        '127.0.0',
        '127.0.0.1.2',
        '128.0.0.1',
        '[::2]',
        '::1',
        '',
      ];
      const failures: string[] = [];
      for (const host of hosts) {
        for (const [method, path, headers] of [
          ['GET', '/health', {}],
          ['GET', `/v0/city/${CITY}/status`, {}],
          ['POST', `/v0/city/${CITY}/stop`, CSRF],
        ] as const) {
          const reply = await call(p, method, path, { rawHeaders: ['Host', host, ...Object.entries(headers).flat()] });
          try {
            const body = expectProblem(reply, 421, 'host-not-allowed', {
              what: `${method} ${path} Host: ${host}`,
              conventions: true,
            });
            expect(body.detail).to.match(/^host_not_allowed: /);
          } catch (err) {
            failures.push((err as Error).message);
          }
        }
      }
      expect(failures).to.deep.equal([]);
      expect(await sup.city(CITY)).to.include({ running: true });
    });

    it('any 127.0.0.0/8 address and any port 1-65535 work, in any case', async function () {
      for (const host of ['127.1.2.3', `127.255.255.255:${sup.port}`, 'LOCALHOST:1', '[::1]:65535', '[::1]']) {
        const reply = await call(sup.port, 'GET', '/health', { headers: { Host: host } });
        expect(reply.status, `${host}: ${describeReply(reply)}`).to.equal(200);
      }
    });

    it('a request target in absolute form must name an accepted host, the one the Host header names', async function () {
      const p = sup.port;
      const failures: string[] = [];
      const refused: [string, string, string][] = [
        [`http://evil.com:${p}/v0/city/${CITY}/stop`, `127.0.0.1:${p}`, 'a foreign host'],
        [`http://evil.com/v0/city/${CITY}/stop`, 'localhost', 'a foreign host without a port'],
        [`http://127.0.0.1:${p}.evil.com/v0/city/${CITY}/stop`, `127.0.0.1:${p}`, 'trailing garbage'],
        [`http://user@127.0.0.1:${p}/v0/city/${CITY}/stop`, `127.0.0.1:${p}`, 'userinfo'],
        [`http://localhost:${p}/v0/city/${CITY}/stop`, `127.0.0.1:${p}`, 'another host than the Host header'],
        [`http://127.0.0.1:1/v0/city/${CITY}/stop`, `127.0.0.1:${p}`, 'another port than the Host header'],
      ];
      for (const [target, host, what] of refused) {
        const reply = await call(p, 'POST', target, { headers: { ...CSRF, Host: host } });
        try {
          expectProblem(reply, 421, 'host-not-allowed', {
            what: `${what}: POST ${target} Host: ${host}`,
            conventions: true,
          });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      for (const target of [`https://127.0.0.1:${p}/health`, `ftp://127.0.0.1:${p}/health`]) {
        const reply = await call(p, 'GET', target, { headers: { Host: `127.0.0.1:${p}` } });
        try {
          expectProblem(reply, 400, 'invalid-request', { what: `GET ${target}`, conventions: true });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      expect(failures).to.deep.equal([]);
      expect(await sup.city(CITY)).to.include({ running: true });
      // An accepted one is served like its origin form, proxied routes included.
      for (const path of ['/health', `/v0/city/${CITY}/status`, `/v0/city/${CITY}/events?limit=1`]) {
        const reply = await call(p, 'GET', `http://LocalHost:${p}${path}`, { headers: { Host: `localhost:${p}` } });
        expect(reply.status, `${path}: ${describeReply(reply)}`).to.equal(200);
      }
    });

    it('loopback names work', async function () {
      for (const host of [`localhost:${sup.port}`, `127.0.0.1:${sup.port}`, 'localhost', `[::1]:${sup.port}`]) {
        const reply = await call(sup.port, 'GET', '/health', { headers: { Host: host } });
        expect(reply.status, `${host}: ${describeReply(reply)}`).to.equal(200);
        expectRequestId(reply);
      }
      const proxied = await call(sup.port, 'GET', `/v0/city/${CITY}/status`, {
        headers: { Host: `localhost:${sup.port}` },
      });
      expect(proxied.status, describeReply(proxied)).to.equal(200);
    });

    describe('with allowed_hosts = ["myhost.test"]', function () {
      let other: TestSupervisor;

      before(async function () {
        other = await TestSupervisor.start({ config: ['allowed_hosts = ["myhost.test"]'] });
      });

      after(async function () {
        await cleanupSupervisor(other);
      });

      it('the listed host works, with or without a port, in any case', async function () {
        for (const host of ['myhost.test', `myhost.test:${other.port}`, 'MyHost.Test']) {
          const reply = await call(other.port, 'GET', '/health', { headers: { Host: host } });
          expect(reply.status, `${host}: ${describeReply(reply)}`).to.equal(200);
          expectRequestId(reply);
        }
      });

      it('loopback names still work and other hosts do not', async function () {
        const local = await call(other.port, 'GET', '/health', { headers: { Host: `localhost:${other.port}` } });
        expect(local.status).to.equal(200);
        for (const host of ['evil.example', 'sub.myhost.test', 'myhost.test.evil.example']) {
          const reply = await call(other.port, 'GET', '/health', { headers: { Host: host } });
          expectProblem(reply, 421, 'host-not-allowed', { what: host, conventions: true });
        }
      });

      it('the listed host with anything but a port after it does not', async function () {
        const p = other.port;
        for (const host of [
          `myhost.test:${p}.evil.com`,
          `myhost.test:${p}@evil.com`,
          'myhost.test:x',
          'a@myhost.test',
        ]) {
          const reply = await call(p, 'GET', '/health', { headers: { Host: host } });
          expectProblem(reply, 421, 'host-not-allowed', { what: host, conventions: true });
        }
        const absolute = await call(p, 'GET', `http://myhost.test:${p}/health`, {
          headers: { Host: `myhost.test:${p}` },
        });
        expect(absolute.status, describeReply(absolute)).to.equal(200);
      });
    });
  });

  describe('CORS', function () {
    it('a localhost origin is echoed, with the exposed headers', async function () {
      for (const origin of ['http://localhost:3000', 'http://127.0.0.1:5173', 'http://localhost']) {
        const reply = await call(sup.port, 'GET', '/health', { headers: { Origin: origin } });
        expect(reply.status).to.equal(200);
        expect(headerValues(reply, 'Access-Control-Allow-Origin'), origin).to.deep.equal([origin]);
        expect(String(reply.headers.vary)).to.match(/\bOrigin\b/i);
        expect(String(reply.headers['access-control-expose-headers']).toLowerCase()).to.include('x-ctl-request-id');
      }
    });

    it('a proxied response has exactly one Access-Control-Allow-Origin', async function () {
      const reply = await call(sup.port, 'GET', `/v0/city/${CITY}/status`, {
        headers: { Origin: 'http://localhost:3000' },
      });
      expect(reply.status).to.equal(200);
      expect(headerValues(reply, 'Access-Control-Allow-Origin')).to.deep.equal(['http://localhost:3000']);
      expect(String(reply.headers['access-control-expose-headers']).toLowerCase()).to.include('x-ctl-index');
    });

    it('another origin gets no Access-Control-Allow-Origin', async function () {
      for (const origin of ['https://evil.example', 'http://localhost.evil.example', 'null']) {
        const reply = await call(sup.port, 'GET', '/health', { headers: { Origin: origin } });
        expect(reply.status).to.equal(200);
        expect(headerValues(reply, 'Access-Control-Allow-Origin'), origin).to.deep.equal([]);
      }
      const proxied = await call(sup.port, 'GET', `/v0/city/${CITY}/status`, {
        headers: { Origin: 'https://evil.example' },
      });
      expect(headerValues(proxied, 'Access-Control-Allow-Origin')).to.deep.equal([]);
    });

    it('a preflight from localhost: 204 with the methods and headers, X-CTL-Request included', async function () {
      for (const path of ['/v0/city', `/v0/city/${CITY}/events`]) {
        const reply = await call(sup.port, 'OPTIONS', path, {
          headers: {
            Origin: 'http://localhost:3000',
            'Access-Control-Request-Method': 'POST',
            'Access-Control-Request-Headers': 'content-type, x-ctl-request',
          },
        });
        expect(reply.status, `${path}: ${describeReply(reply)}`).to.equal(204);
        expectRequestId(reply);
        expect(headerValues(reply, 'Access-Control-Allow-Origin')).to.deep.equal(['http://localhost:3000']);
        const methods = String(reply.headers['access-control-allow-methods'])
          .split(',')
          .map((m) => m.trim().toUpperCase());
        expect(methods).to.include.members(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
        const headers = String(reply.headers['access-control-allow-headers'])
          .split(',')
          .map((h) => h.trim().toLowerCase());
        expect(headers).to.include.members(['x-ctl-request', 'content-type']);
      }
    });

    it('a preflight from another origin is not granted', async function () {
      const reply = await call(sup.port, 'OPTIONS', '/v0/city', {
        headers: {
          Origin: 'https://evil.example',
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'x-ctl-request',
        },
      });
      expectRequestId(reply);
      expect(headerValues(reply, 'Access-Control-Allow-Origin')).to.deep.equal([]);
      expect(String(reply.headers['access-control-allow-headers'] ?? '').toLowerCase()).to.not.include('x-ctl-request');
    });
  });

  describe('cross-origin mutations', function () {
    const FOREIGN: Record<string, string>[] = [
      { Origin: 'http://evil.example' },
      { Origin: 'null' },
      { Origin: 'http://localhost:3000' },
      { 'Sec-Fetch-Site': 'cross-site' },
      { Referer: 'http://evil.example/page' },
    ];

    it('every mutation naming a foreign origin answers 403 cross_origin, svc/* too, and changes nothing', async function () {
      const failures: string[] = [];
      const paths = [...mutationsOf(doc), { method: 'post', path: '/v0/city/{cityName}/svc/anything' }];
      const requests = paths.flatMap(({ method, path }) => FOREIGN.map((foreign) => ({ method, path, foreign })));
      // Eight at a time: each is refused before it does anything, so their order does not matter.
      await inLanes(requests, 8, async ({ method, path, foreign }) => {
        const target = fill(path, CITY);
        const reply = await call(sup.port, method.toUpperCase(), target, {
          headers: { ...CSRF, ...foreign, 'Content-Type': 'application/json' },
          body: '{}',
        });
        if (reply.status !== 403 || !String(reply.body?.detail).startsWith('cross_origin: ')) {
          failures.push(`${method} ${target} ${JSON.stringify(foreign)}: ${describeReply(reply)}`);
        }
      });
      expect(failures.sort()).to.deep.equal([]);
      // Nothing was created.
      const cities = await call(sup.port, 'GET', '/v0/cities');
      expect((cities.body!.items as Json[]).map((c) => c.name as string)).to.deep.equal([CITY]);
    });

    it("the API's own origin passes, and a request without browser headers is unaffected", async function () {
      const own = `http://127.0.0.1:${sup.port}`;
      for (const headers of <Record<string, string>[]>[
        { Origin: own },
        { Origin: own, 'Sec-Fetch-Site': 'same-origin' },
        { Referer: `${own}/ui/` },
        { 'Sec-Fetch-Site': 'none' },
        {},
      ]) {
        const reply = await call(sup.port, 'POST', `/v0/city/${CITY}/beads`, {
          headers: { ...CSRF, ...headers, 'Content-Type': 'application/json' },
          body: JSON.stringify({ title: 'same origin' }),
        });
        expect(reply.status, `${JSON.stringify(headers)}: ${describeReply(reply)}`).to.equal(201);
      }
      // A read from another origin is still served (CORS decides what its page may see).
      const read = await call(sup.port, 'GET', `/v0/city/${CITY}/status`, {
        headers: { Origin: 'http://evil.example' },
      });
      expect(read.status).to.equal(200);
    });

    it('the 403 is declared on every mutation', function () {
      const missing = mutationsOf(doc)
        .filter(
          ({ op }) =>
            !String(resolveRef(doc, (op.responses as Json)['403'] ?? {})?.description).includes('cross_origin'),
        )
        .map(({ method, path }) => `${method} ${path}`);
      expect(missing).to.deep.equal([]);
    });
  });

  describe('the OpenAPI document', function () {
    it('is OpenAPI 3.1.0 and valid', async function () {
      expect(doc.openapi).to.equal('3.1.0');
      const result = await new Validator().validate(doc);
      expect(result.valid, JSON.stringify(result.errors, null, 1)).to.equal(true);
    });

    it('contains the data-transfer schemas the spec names', function () {
      expect(Object.keys(doc.components.schemas as Json)).to.include.members([
        'AsyncAcceptedResponse',
        'ErrorModel',
        'CityLifecyclePayload',
        'CityCreateSucceededPayload',
        'CityUnregisterSucceededPayload',
        'RequestFailedPayload',
        'SupervisorCitiesOutputBody',
        'SupervisorEventListOutputBody',
        'WireEvent',
        'WireTaggedEvent',
        'ListBodyWireEvent',
      ]);
    });

    it('has no 3.0 leftovers: no schema uses nullable', function () {
      const holders = objectsWithKeyword(doc, 'nullable');
      expect(holders, JSON.stringify(holders).slice(0, 500)).to.deep.equal([]);
    });

    it('documents what is served outside the route classes: the session stream, svc/* and the document itself', function () {
      const byId = new Map(operationsOf(doc).map((o) => [o.op.operationId as string, o]));
      const expected: [string, string, string][] = [
        ['stream-session', 'get', '/v0/city/{cityName}/session/{id}/stream'],
        ['proxy-service-get', 'get', '/v0/city/{cityName}/svc/{service}/{path}'],
        ['proxy-service-post', 'post', '/v0/city/{cityName}/svc/{service}/{path}'],
        ['proxy-service-delete', 'delete', '/v0/city/{cityName}/svc/{service}/{path}'],
        ['get-openapi', 'get', '/openapi.json'],
        ['get-events-schema', 'get', '/schema/events.json'],
      ];
      for (const [id, method, path] of expected) {
        expect(byId.get(id), id).to.include({ method, path });
      }
      const stream = byId.get('stream-session')!.op;
      const frames = JSON.stringify((stream.responses as Json)['200']);
      for (const event of ['turn', 'message', 'activity', 'pending', 'pending_cleared', 'heartbeat'])
        expect(frames, event).to.include(`"const":"${event}"`);
    });

    it('has unique operation ids', function () {
      const ids = operationsOf(doc).map((o) => o.op.operationId as string);
      expect(ids.every((id) => typeof id === 'string' && id !== '')).to.equal(true);
      expect(new Set(ids).size).to.equal(ids.length);
    });

    describe('a standalone controller (ctl controller run --city DIR --listen PORT)', function () {
      let root: string;
      let port: number;
      let child: ResultPromise | undefined;
      let output = '';

      before(async function () {
        root = tempDir('ctl-solo-');
        const dir = join(root, 'solo');
        mkdirSync(join(dir, '.ctl'), { recursive: true });
        writeFileSync(join(dir, 'city.toml'), newCityConfigText({ startCommand: 'sleep 3600' }));
        writeFileSync(join(dir, '.ctl', 'events.jsonl'), '');
        port = await freePort();
        const proc = execa(
          process.execPath,
          [ctlEntryPath(), 'controller', 'run', '--city', dir, '--listen', String(port)],
          {
            env: { ...process.env, CTL_HOME: join(root, 'home'), HOME: root },
            reject: false,
            stdin: 'ignore',
            all: true,
            buffer: false,
          },
        );
        child = proc;
        proc.all?.on('data', (chunk: Buffer) => (output += chunk.toString()));
        let exited = false;
        void proc.then(() => (exited = true));
        await waitUntil('the controller to serve /openapi.json', async () => {
          if (exited) throw new Error(`controller exited:\n${output}`);
          return (await fetch(`http://127.0.0.1:${port}/openapi.json`)).ok;
        });
      });

      after(async function () {
        try {
          if (child?.pid && isAlive(child.pid)) {
            child.kill('SIGTERM');
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([child, new Promise((resolve) => (timer = setTimeout(resolve, 6000)))]);
            clearTimeout(timer);
          }
        } finally {
          if (root) {
            killAllMentioning(root);
            rmSync(root, { recursive: true, force: true });
          }
        }
      });

      it('serves the same document at /openapi.json', async function () {
        const reply = await call(port, 'GET', '/openapi.json');
        expect(reply.status).to.equal(200);
        expectRequestId(reply);
        expect(reply.body).to.deep.equal(doc);
      });

      it('answers a request its parser refuses with a problem too', async function () {
        const connection = await RawConnection.open(port);
        try {
          await connection.write(`GET /openapi.json\0 HTTP/1.1\r\nHost: localhost\r\n\r\n`);
          const reply = await connection.response();
          expectProblem(reply, 400, 'invalid-request', { conventions: true });
          expect(String(reply.headers.connection).toLowerCase()).to.equal('close');
          await connection.closedByServer();
        } finally {
          connection.destroy();
        }
      });

      it('answers a method no route takes with a 405 and an Allow header', async function () {
        const reply = await call(port, 'TRACE', '/v0/city/solo/status', { headers: CSRF });
        expectProblem(reply, 405, 'method-not-allowed', { conventions: true });
        expect(String(reply.headers.allow)).to.include('GET');
      });

      it('answers a malformed percent-encoding in a city name with a 4xx problem, not a 500', async function () {
        const reply = await call(port, 'GET', '/v0/city/%zz/status');
        expect([400, 404], describeReply(reply)).to.include(reply.status);
        expectProblem(reply, reply.status, undefined, { conventions: true });
      });

      it('refuses a cross-origin mutation and serves its own origin', async function () {
        const foreign = await call(port, 'POST', '/v0/city/solo/beads', {
          headers: { ...CSRF, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
          body: JSON.stringify({ title: 'x' }),
        });
        expectProblem(foreign, 403, 'forbidden', { conventions: true });
        expect(foreign.body!.detail).to.match(/^cross_origin: /);
        const own = await call(port, 'POST', '/v0/city/solo/beads', {
          headers: { ...CSRF, Origin: `http://127.0.0.1:${port}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ title: 'x' }),
        });
        expect(own.status, describeReply(own)).to.equal(201);
      });

      it('applies the same conventions: CSRF on every mutation, request ids, 404s, Host check', async function () {
        const failures: string[] = [];
        for (const { method, path } of mutationsOf(doc)) {
          const target = fill(path, 'solo');
          const reply = await call(port, method.toUpperCase(), target, {
            headers: { 'Content-Type': 'application/json' },
            body: '{}',
          });
          if (reply.status !== 403 || reply.body?.detail !== CSRF_DETAIL)
            failures.push(`${method} ${target}: ${describeReply(reply)}`);
        }
        expect(failures).to.deep.equal([]);
        const status = await call(port, 'GET', '/v0/city/solo/status');
        expect(status.status, describeReply(status)).to.equal(200);
        expectRequestId(status);
        const other = expectProblem(await call(port, 'GET', '/v0/city/other/status'), 404, 'city-not-found', {
          conventions: true,
        });
        expect(other.detail).to.equal('not_found: city not found or not running: other');
        expectProblem(await call(port, 'GET', '/v0/nope'), 404, 'route-not-found', { conventions: true });
        expectProblem(await call(port, 'GET', '/openapi.json', { headers: { Host: 'evil.example' } }), 421, undefined, {
          conventions: true,
        });
      });
    });
  });
});

describe('HTTP conventions: a city registered but not yet running', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;

  before(async function () {
    // Each controller startup phase takes 1 s, so the new city stays running=false for a few seconds.
    sup = await TestSupervisor.start({ env: { CTL_CONTROLLER_PHASE_DELAY_MS: '1000' } });
  });

  after(async function () {
    await cleanupSupervisor(sup);
  });

  it('answers the not-running 404s (with request ids) until the city is listed running', async function () {
    const created = await call(sup.port, 'POST', '/v0/city', {
      headers: { ...CSRF, 'Content-Type': 'application/json' },
      body: JSON.stringify({ dir: sup.cityDir('slow'), start_command: 'sleep 3600' }),
    });
    expect(created.status, describeReply(created)).to.equal(202);
    expectRequestId(created, '202');
    expect((await sup.city('slow'))?.running).to.equal(false);
    for (const rest of ['/status', '/events', '']) {
      const body = expectProblem(await call(sup.port, 'GET', `/v0/city/slow${rest}`), 404, 'city-not-found', {
        what: rest,
        conventions: true,
      });
      expect(body.detail).to.equal('not_found: city not found or not running: slow');
    }
    const svc = expectProblem(await call(sup.port, 'GET', '/v0/city/slow/svc/x'), 404, undefined, {
      what: 'svc',
      conventions: true,
    });
    expect(svc.detail).to.equal('not_found: city not found or not running');
    await waitUntil('slow to run', async () => (await sup.city('slow'))?.running);
    const status = await call(sup.port, 'GET', '/v0/city/slow/status');
    expect(status.status, describeReply(status)).to.equal(200);
    expectRequestId(status);
  });
});

describe('HTTP conventions: read-only mode (bound to a non-loopback address)', function () {
  this.timeout(60_000);

  describe('bind = "0.0.0.0"', function () {
    let sup: TestSupervisor;
    let doc: Json;

    before(async function () {
      // A non-loopback bind needs a token to exist (the same-user rule still lets this test's loopback calls in).
      sup = await TestSupervisor.start({
        config: ['bind = "0.0.0.0"'],
        homeFiles: { 'tokens.json': seededToken().file },
      });
      doc = await fetchDocument(sup.base);
    });

    after(async function () {
      await cleanupSupervisor(sup);
    });

    it('refuses every mutation, even with X-CTL-Request: 403 read_only', async function () {
      const failures: string[] = [];
      const mutations = mutationsOf(doc);
      expect(mutations).to.not.be.empty;
      for (const { method, path } of mutations) {
        const target = fill(path, CITY);
        const reply = await call(sup.port, method.toUpperCase(), target, {
          headers: { ...CSRF, 'Content-Type': 'application/json' },
          body: JSON.stringify(path === '/v0/city' ? { dir: sup.cityDir('ro'), start_command: 'sleep 1' } : {}),
        });
        try {
          const body = expectProblem(reply, 403, 'forbidden', {
            what: `${method.toUpperCase()} ${target}`,
            conventions: true,
          });
          expect(body.detail).to.match(/^read_only: /);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      expect(failures).to.deep.equal([]);
      expect((await sup.api.GET('/v0/cities')).data!.items).to.deep.equal([]);
      for (const method of ['PROPFIND', 'TRACE']) {
        const reply = await call(sup.port, method, '/health', { headers: CSRF });
        expect(expectProblem(reply, 403, 'forbidden', { what: method, conventions: true }).detail).to.match(
          /^read_only: /,
        );
      }
    });

    it('still answers reads', async function () {
      for (const path of ['/health', '/v0/cities', '/v0/events', '/openapi.json']) {
        const reply = await call(sup.port, 'GET', path);
        expect(reply.status, `GET ${path}: ${describeReply(reply)}`).to.equal(200);
        expectRequestId(reply);
      }
    });
  });

  describe('bind = "0.0.0.0" with allow_mutations = true', function () {
    let sup: TestSupervisor;

    before(async function () {
      sup = await TestSupervisor.start({
        config: ['bind = "0.0.0.0"', 'allow_mutations = true'],
        homeFiles: { 'tokens.json': seededToken().file },
      });
    });

    after(async function () {
      await cleanupSupervisor(sup);
    });

    it('allows mutations (the CSRF header is still required)', async function () {
      const body = JSON.stringify({ dir: sup.cityDir('open'), start_command: 'sleep 3600' });
      const refused = await call(sup.port, 'POST', '/v0/city', {
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      expect(expectProblem(refused, 403, 'forbidden', { conventions: true }).detail).to.equal(CSRF_DETAIL);
      const accepted = await call(sup.port, 'POST', '/v0/city', {
        headers: { ...CSRF, 'Content-Type': 'application/json' },
        body,
      });
      expect(accepted.status, describeReply(accepted)).to.equal(202);
      expect(accepted.body!.request_id).to.match(/^req-[0-9a-f]{24}$/);
      const terminal = await sup.terminalEvent(accepted.body!.request_id as string);
      expect(terminal.type).to.equal('request.result.city.create');
    });
  });
});
