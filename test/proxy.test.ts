import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { expect } from 'chai';
import { RawConnection } from './helpers/raw-http.js';
import { SseStreamReader } from './helpers/sse.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** A workspace service in the test process, so the test sees what arrives upstream. */
class Upstream {
  server: Server;
  port = 0;
  release: (() => void) | undefined;
  closedRequests = 0;
  requests = 0;
  /** Connections of `/refuse` requests that have closed. */
  refusedClosed = 0;
  /** Lets the last `/refuse` request read again (and so see its connection end, if it has). */
  resumeRefused: (() => void) | undefined;
  lastRequest: { method: string; url: string; headers: IncomingMessage['headers'] } | undefined;

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
    // Idle connections stay until the proxy closes them, so that a closed one shows the proxy let go of it.
    this.server.keepAliveTimeout = 60_000;
  }

  async start(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as { port: number }).port;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++;
    this.lastRequest = { method: req.method!, url: req.url!, headers: req.headers };
    res.on('close', () => {
      if (!res.writableFinished) this.closedRequests++;
    });
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first\n');
      await new Promise<void>((resolve) => (this.release = resolve));
      res.end('second\n');
    } else if (req.url === '/forever') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('tick\n');
    } else if (req.url === '/refuse') {
      // Refuses an upload after its first chunk and never reads the rest, keeping the connection.
      req.socket.once('close', () => this.refusedClosed++);
      this.resumeRefused = () => req.resume();
      req.once('data', () => {
        req.pause();
        res.writeHead(413, { 'content-type': 'text/plain', 'content-length': '8' }).end('too big\n');
      });
    } else if (req.url?.startsWith('/echo')) {
      let size = 0;
      req.on('data', (chunk: Buffer) => (size += chunk.length));
      await once(req, 'end');
      res.writeHead(201, { 'x-upstream': 'yes', 'content-type': 'application/json' });
      res.end(JSON.stringify({ size, url: req.url }));
    } else {
      res.writeHead(404).end();
    }
  }
}

/** A request with the path exactly as given (fetch would resolve its dot segments first). */
function rawRequest(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: Record<string, unknown> | undefined;
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the supervisor proxy and the raw svc/* proxy', function () {
  let sup: TestSupervisor;
  const upstream = new Upstream();

  before(async function () {
    await upstream.start();
    // Debug logs record each request's id, in the supervisor's log and in the controller's.
    sup = await TestSupervisor.start({ env: { CTL_LOG_LEVEL: 'debug' } });
    const dir = sup.cityDir('web');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'city.toml'),
      `[workspace]\nstart_command = "true"\n\n[[service]]\nname = "app"\nurl = "http://127.0.0.1:${upstream.port}"\n`,
    );
    const { response } = await sup.api.POST('/v0/cities/register', { params: { header: CSRF }, body: { path: dir } });
    expect(response.status).to.equal(201);
    await waitUntil('web to run', async () => (await sup.city('web'))?.running);
  });

  after(async function () {
    upstream.server.closeAllConnections();
    upstream.server.close();
    await sup?.cleanup();
  });

  it('streams a response chunk by chunk, without buffering it', async function () {
    const res = await fetch(`${sup.base}/v0/city/web/svc/app/stream`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-ctl-request-id')).to.match(/^[0-9a-f]{16}$/);
    const reader = res.body!.getReader();
    const first = await reader.read();
    // The upstream has not finished: the first chunk arrived on its own.
    expect(Buffer.from(first.value).toString()).to.equal('first\n');
    upstream.release!();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += Buffer.from(chunk.value).toString();
    expect(rest).to.equal('second\n');
  });

  it('passes a client disconnect through to the service', async function () {
    const before = upstream.closedRequests;
    const abort = new AbortController();
    const res = await fetch(`${sup.base}/v0/city/web/svc/app/forever`, { signal: abort.signal });
    const reader = res.body!.getReader();
    expect(Buffer.from((await reader.read()).value).toString()).to.equal('tick\n');
    abort.abort();
    await waitUntil('the upstream to see the disconnect', () => upstream.closedRequests > before);
  });

  it('forwards method, query, a large body, status and headers unchanged', async function () {
    const body = Buffer.alloc(3 * 1024 * 1024, 'x');
    const res = await fetch(`${sup.base}/v0/city/web/svc/app/echo?a=1&b=two`, {
      method: 'POST',
      headers: { 'X-CTL-Request': 'test', 'content-type': 'application/octet-stream' },
      body,
    });
    expect(res.status).to.equal(201);
    expect(res.headers.get('x-upstream')).to.equal('yes');
    expect(await res.json()).to.deep.equal({ size: body.length, url: '/echo?a=1&b=two' });
    expect(upstream.lastRequest!.method).to.equal('POST');
  });

  it('refuses mutations without X-CTL-Request, and unknown services with 404', async function () {
    const csrf = await fetch(`${sup.base}/v0/city/web/svc/app/echo`, { method: 'POST', body: 'x' });
    expect(csrf.status).to.equal(403);
    const missing = await fetch(`${sup.base}/v0/city/web/svc/nope/x`);
    expect(missing.status).to.equal(404);
    expect(await missing.json()).to.include({
      code: 'service-not-found',
      detail: 'not_found: service not found: nope',
    });
  });

  it('refuses a dot segment anywhere after svc/, however it is spelled, without reaching the service', async function () {
    const before = upstream.requests;
    const failures: string[] = [];
    for (const rest of [
      'app/../../../etc/passwd',
      'app/echo/../secret',
      'app/echo/..',
      'app/%2e%2e/secret',
      'app/%2E%2E/secret',
      'app/.%2e/secret',
      'app/%2e./secret',
      'app/./echo',
      'app/%2e/echo',
      'app/echo/.',
      'app/..\\secret',
      'app/echo\\..\\..\\secret',
      'app/%5c..%5csecret',
      'app/echo%2f..%2f..%2fsecret',
      'app/echo/%2e%2e%5csecret',
      '../status',
      '%2e%2e/status',
      './app/echo',
      'app/..?q=1',
    ]) {
      for (const method of ['GET', 'POST']) {
        const path = `/v0/city/web/svc/${rest}`;
        const reply = await rawRequest(sup.base, method, path, CSRF);
        if (
          reply.status !== 400 ||
          reply.body?.code !== 'invalid-request' ||
          !/^invalid: /.test(String(reply.body.detail))
        )
          failures.push(`${method} ${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
      }
    }
    expect(failures).to.deep.equal([]);
    expect(upstream.requests, 'requests that reached the service').to.equal(before);
    // Dots inside a segment, or in the query, are no dot segments.
    const fine = await rawRequest(sup.base, 'GET', '/v0/city/web/svc/app/echo/a..b/.hidden/.../x?to=../y');
    expect(fine.status).to.equal(201);
    expect(upstream.lastRequest!.url).to.equal('/echo/a..b/.hidden/.../x?to=../y');
  });

  it('refuses every method but GET, HEAD and OPTIONS without X-CTL-Request (PROPFIND, MKCOL, …), on svc/* too', async function () {
    const methods = ['PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'PURGE', 'REPORT', 'TRACE'];
    const before = upstream.requests;
    const failures: string[] = [];
    for (const method of methods) {
      for (const path of ['/v0/city/web/svc/app/echo', '/v0/city/web/status']) {
        const reply = await rawRequest(sup.base, method, path);
        if (reply.status !== 403 || reply.body?.detail !== 'csrf: X-CTL-Request header required on mutation endpoints')
          failures.push(`${method} ${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
      }
    }
    expect(failures).to.deep.equal([]);
    expect(upstream.requests, 'requests that reached the service').to.equal(before);
    // With the header they reach the service as they are.
    for (const method of methods) {
      const reply = await rawRequest(sup.base, method, '/v0/city/web/svc/app/echo', CSRF);
      expect(reply.status, `${method}: ${JSON.stringify(reply.body)}`).to.equal(201);
      expect(upstream.lastRequest!.method).to.equal(method);
    }
    for (const method of ['GET', 'OPTIONS']) {
      const reply = await rawRequest(sup.base, method, '/v0/city/web/svc/app/echo');
      expect(reply.status, method).to.equal(201);
    }
  });

  it('a service that answers before reading the body: the client connection carries the next request, the service one closes', async function () {
    this.timeout(15_000);
    const closedBefore = upstream.refusedClosed;
    const body = 'x'.repeat(4 * 1024 * 1024);
    const connection = await RawConnection.open(sup.port);
    try {
      // Not awaited: the body is more than the sockets on the way hold while nobody reads it.
      void connection.write(
        `POST /v0/city/web/svc/app/refuse HTTP/1.1\r\nHost: 127.0.0.1\r\nX-CTL-Request: 1\r\n` +
          `Content-Type: application/octet-stream\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      const refused = await connection.response();
      expect(refused.status).to.equal(413);
      expect(refused.text).to.equal('too big\n');
      await connection.write('GET /v0/city/web/svc/app/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const next = await connection.response();
      expect(next.status).to.equal(201);
      expect(next.body).to.deep.equal({ size: 0, url: '/echo' });
    } finally {
      connection.destroy();
    }
    // The controller let go of its half-used connection to the service rather than keep it in its pool (the
    // service, once it reads again, sees it end).
    upstream.resumeRefused!();
    await waitUntil('the connection of the refused request to close', () => upstream.refusedClosed > closedBefore);
  });

  it('reaches each city through a stop, a new city, and a start again', async function () {
    await sup.createCity('other');
    const health = async (name: string) => (await fetch(`${sup.base}/v0/city/${name}/health`)).status;
    expect(await health('other')).to.equal(200);
    const lifecycle = (name: string, action: 'stop' | 'start') =>
      fetch(`${sup.base}/v0/city/${name}/${action}`, { method: 'POST', headers: CSRF });
    expect((await lifecycle('other', 'stop')).status).to.be.oneOf([200, 202]);
    await waitUntil('other to stop', async () => (await sup.city('other'))?.running === false);
    expect(await health('other')).to.equal(404);
    // A new controller: the supervisor lets go of the stopped one's connections, and keeps the running ones',
    // such as a stream open through it.
    const stream = await SseStreamReader.open(`${sup.base}/v0/city/web/events/stream`);
    try {
      await sup.createCity('third');
      expect(await health('third')).to.equal(200);
      const posted = await fetch(`${sup.base}/v0/city/web/events`, {
        method: 'POST',
        headers: { ...CSRF, 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'test.after-third', actor: 'test' }),
      });
      expect(posted.status).to.equal(201);
      const frames = await stream.events(1);
      expect(JSON.parse(frames[0].data)).to.include({ type: 'test.after-third' });
    } finally {
      stream.close();
    }
    expect((await lifecycle('other', 'start')).status).to.be.oneOf([200, 202]);
    await waitUntil('other to run again', async () => (await sup.city('other'))?.running);
    expect(await health('other')).to.equal(200);
    expect(await health('web')).to.equal(200);
  });

  it('keeps one request id from the supervisor to the controller', async function () {
    const res = await fetch(`${sup.base}/v0/city/web/health`);
    expect(res.status).to.equal(200);
    const id = res.headers.get('x-ctl-request-id')!;
    expect(id).to.match(/^[0-9a-f]{16}$/);
    const controllerLog = join(sup.cityDir('web'), '.ctl', 'controller.log');
    await waitUntil('the controller to log the request', () =>
      readFileSync(controllerLog, 'utf8').includes(`"requestId":"${id}"`),
    );
  });
});
