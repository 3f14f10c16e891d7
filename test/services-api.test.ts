import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { createParser } from 'eventsource-parser';
import WebSocket from 'ws';
import { packageRoot } from '../shared/paths.js';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { isAlive, processesMentioning, processesWithEnvironment } from './helpers/processes.js';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { CSRF, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

const SERVICE = join(packageRoot, 'test', 'fixtures', 'web-service.mjs');

interface Service {
  service_name: string;
  kind: string;
  local_state: string;
  pid?: number;
  port?: number;
  socket?: string;
  restarts: number;
  reason?: string;
  next_start_at?: string;
  mount_path: string;
  updated_at: string;
  health_path?: string;
}

/** The messages a WebSocket receives until it has `count` of them. */
function wsExchange(url: string, send: string[], count: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const got: string[] = [];
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`only ${JSON.stringify(got)} within 10 s`));
    }, 10_000);
    ws.on('open', () => send.forEach((m) => ws.send(m)));
    ws.on('message', (data) => {
      got.push(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8'));
      if (got.length === count) {
        clearTimeout(timer);
        ws.close();
        resolve(got);
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      reject(new Error(`upgrade refused: ${res.statusCode}`));
    });
    ws.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

describe('workspace services (real programs, HTTP, SSE and WebSocket through svc/*)', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let sick: string;
  const pids: number[] = [];
  /** A service somebody else runs: its health answers `remoteHealth`. */
  let remoteHealth = 200;
  let remote: Server;
  const escapee = `svc-escapee-${process.pid}`;

  before(async function () {
    remote = createServer((req, res) => res.writeHead(req.url === '/api/ok' ? remoteHealth : 404).end());
    await new Promise<void>((resolve) => remote.listen(0, '127.0.0.1', resolve));
    const remotePort = (remote.address() as AddressInfo).port;
    sick = join(tempDir('ctl-svc-'), 'sick');
    const node = JSON.stringify(process.execPath);
    city = await startSessionCity(
      'served',
      `\n[[service]]\nname = "web"\ncommand = ${JSON.stringify(`${node} ${SERVICE}`)}\nhealth = "/healthz"\nhealth_interval = "300ms"\nenv = { UNHEALTHY_FILE = ${JSON.stringify(sick)} }\n` +
        `\n[[service]]\nname = "sock"\ncommand = ${JSON.stringify(`${node} ${SERVICE}`)}\nsocket = "sock.sock"\n` +
        `\n[[service]]\nname = "flaky"\ncommand = "echo starting; exit 3"\n` +
        `\n[[service]]\nname = "escaper"\ncommand = ${JSON.stringify(`CTL_TEST_ESCAPEE=${escapee} setsid sleep 300 & exec ${node} ${SERVICE}`)}\n` +
        `\n[[service]]\nname = "ext"\nurl = "http://127.0.0.1:9"\n` +
        `\n[[service]]\nname = "remote"\nurl = "http://127.0.0.1:${remotePort}/api"\nhealth = "/ok"\nhealth_interval = "200ms"\n`,
    );
  });
  after(async () => {
    await city?.sup.cleanup();
    await new Promise((resolve) => remote?.close(resolve));
    for (const pid of pids) expect(isAlive(pid), `service pid ${pid} outlived its city`).to.equal(false);
  });

  const running = async (name: string, other?: number) =>
    waitUntil(`${name} to run`, async () => {
      const s = (await city.api.get<Service>(`/service/${name}`)).body;
      return s.local_state === 'running' && s.pid !== other ? s : undefined;
    });

  it('starts program services with the city, on a port or a socket, and proxies HTTP and SSE to them', async function () {
    const web = await running('web');
    pids.push(web.pid!);
    expect(web).to.deep.include({ kind: 'program', mount_path: '/v0/city/served/svc/web' });
    expect(web.port).to.be.a('number');
    const hello = await fetch(`${city.sup.base}/v0/city/served/svc/web/hello?x=1`);
    expect(hello.status).to.equal(200);
    expect(await hello.text()).to.equal(`hello from web ${web.pid}?x=1`);

    const sock = await running('sock');
    pids.push(sock.pid!);
    expect(sock.socket).to.match(/sock\.sock$/);
    const viaSocket = await fetch(`${city.sup.base}/v0/city/served/svc/sock/hello`);
    expect(await viaSocket.text()).to.equal(`hello from sock ${sock.pid}`);

    // SSE streams through both proxies as the service writes it.
    const abort = new AbortController();
    const res = await fetch(`${city.sup.base}/v0/city/served/svc/web/events`, { signal: abort.signal });
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    const data: string[] = [];
    const parser = createParser({ onEvent: (e) => data.push(e.data) });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    while (data.length < 3) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
    abort.abort();
    expect(data.slice(0, 3)).to.deep.equal(['tick 1', 'tick 2', 'tick 3']);

    const list = await city.api.get<{ items: Service[]; total: number }>('/services');
    expect(list.body.items.map((s) => s.service_name)).to.deep.equal([
      'web',
      'sock',
      'flaky',
      'escaper',
      'ext',
      'remote',
    ]);
  });

  it('carries WebSockets through the supervisor and the controller, both ways', async function () {
    const ws = `${city.sup.base.replace('http', 'ws')}/v0/city/served/svc/web/ws?room=1`;
    expect(await wsExchange(ws, ['one', 'two'], 3)).to.deep.equal(['welcome /ws?room=1', 'echo: one', 'echo: two']);
    const viaSocket = `${city.sup.base.replace('http', 'ws')}/v0/city/served/svc/sock/ws`;
    expect(await wsExchange(viaSocket, ['three'], 2)).to.deep.equal(['welcome /ws', 'echo: three']);
    await expectRejected(wsExchange(`${city.sup.base.replace('http', 'ws')}/v0/city/served/svc/none/ws`, [], 1), /404/);
    await expectRejected(wsExchange(`${city.sup.base.replace('http', 'ws')}/v0/city/served/status`, [], 1), /404/);
    await expectRejected(wsExchange(`${city.sup.base.replace('http', 'ws')}/v0/city/nowhere/svc/web/ws`, [], 1), /404/);
  });

  it('a service killed is restarted (service.exited, then a new pid); restart through the API and the CLI', async function () {
    const before = await running('web');
    process.kill(before.pid!, 'SIGKILL');
    const after = await running('web', before.pid);
    pids.push(after.pid!);
    expect(after.restarts).to.be.greaterThan(0);
    const exited = await city.api.get<{ items: { type: string; payload: { service: string; signal?: string } }[] }>(
      '/events?type=service.exited&limit=100',
    );
    expect(exited.body.items.some((e) => e.payload.service === 'web' && e.payload.signal === 'SIGKILL')).to.equal(true);

    const restarted = await city.api.post('/service/web/restart');
    expect(restarted.status).to.equal(200);
    expect(restarted.body).to.deep.equal({ service: 'web', action: 'restart', status: 'restarting' });
    const third = await running('web', after.pid);
    pids.push(third.pid!);
    expect(isAlive(after.pid!)).to.equal(false);

    const out = expectSuccess(await city.sup.ctl(['--city', 'served', 'service', 'restart', 'sock']));
    expect(out).to.deep.equal(['Restarting service sock']);
    const list = expectSuccess(await city.sup.ctl(['--city', 'served', 'service', 'list']));
    expect(list[0]).to.match(/^NAME\s+STATE\s+PID\s+RESTARTS\s+UPSTREAM\s+MOUNT\s+REASON$/);
    expectFailure(
      await city.sup.ctl(['--city', 'served', 'service', 'restart', 'nope']),
      'service restart',
      /service not found: nope/,
    );
  });

  it('an unhealthy service is restarted; one that crashes in a loop backs off while the city keeps running', async function () {
    const before = await running('web');
    writeFileSync(sick, 'x');
    // Three failed probes in a row: it is ended and started again (and stays starting while still sick).
    const restarted = await waitUntil('web to be restarted for its health', async () => {
      const s = (await city.api.get<Service>('/service/web')).body;
      return s.pid !== before.pid && s.pid !== undefined ? s : undefined;
    });
    expect(restarted.reason).to.equal('its health check failed 3 times in a row');
    rmSync(sick);
    const after = await waitUntil(
      'web to run again',
      async () => {
        const s = (await city.api.get<Service>('/service/web')).body;
        return s.local_state === 'running' && s.pid !== before.pid ? s : undefined;
      },
      30_000,
    );
    pids.push(after.pid!);

    const flaky = await waitUntil('flaky to back off', async () => {
      const s = (await city.api.get<Service>('/service/flaky')).body;
      return s.restarts >= 2 && s.local_state === 'backoff' ? s : undefined;
    });
    expect(flaky.reason).to.equal('it exited with status 3');
    expect(Date.parse(flaky.next_start_at!)).to.be.greaterThan(Date.now() - 1000);
    expect((await fetch(`${city.sup.base}/v0/city/served/health`)).status).to.equal(200);
    const down = await fetch(`${city.sup.base}/v0/city/served/svc/flaky/x`);
    expect(down.status).to.equal(503);
    expect(((await down.json()) as { detail: string }).detail).to.match(/flaky is backoff \(it exited with status 3\)/);
  });

  it('refuses svc paths that climb out or hide slashes; a URL service cannot be restarted', async function () {
    for (const path of [
      '/v0/city/served/svc/web/%2e%2e/x',
      '/v0/city/served/svc/web/a%2fb',
      '/v0/city/served/svc/web/a%5Cb',
    ]) {
      const reply = await rawRequest(city.sup.base, 'GET', path);
      expect(reply.status, path).to.equal(400);
    }
    expectProblem(await city.api.post('/service/nope/restart'), 404, 'service-not-found');
    expectProblem(await city.api.post('/service/ext/restart'), 409, 'conflict-wrong-state');
    // Nothing listens on its port: probed, it is unhealthy, and says why.
    const ext = await waitUntil('ext to be probed', async () => {
      const s = (await city.api.get<Service>('/service/ext')).body;
      return s.local_state === 'unhealthy' ? s : undefined;
    });
    expect(ext).to.deep.include({ kind: 'url', restarts: 0, publication_state: 'private', publish_mode: 'private' });
    expect(ext.reason).to.match(/^127\.0\.0\.1:9 does not take connections/);
    expectProblem(await city.api.get('/service/nope'), 404, 'service-not-found');
  });

  it('a URL service is probed like a program: its health path, when it went down and came back, how often', async function () {
    const state = (want: string) =>
      waitUntil(`remote to be ${want}`, async () => {
        const s = (await city.api.get<Service>('/service/remote')).body;
        return s.local_state === want ? s : undefined;
      });
    const up = await state('running');
    expect(up).to.deep.include({ kind: 'url', health_path: '/ok', restarts: 0 });
    remoteHealth = 503;
    const down = await state('unhealthy');
    expect(down.reason).to.equal('GET /api/ok answered 503');
    expect(Date.parse(down.updated_at)).to.be.greaterThan(Date.parse(up.updated_at));
    remoteHealth = 200;
    const back = await state('running');
    expect(back.restarts).to.equal(1);
    expect(Date.parse(back.updated_at)).to.be.greaterThan(Date.parse(down.updated_at));
    const events = (await city.api.events()).filter((e) => e.subject === 'remote').map((e) => e.type);
    expect(events).to.include.members(['service.ready', 'service.exited']);
  });

  it('a service that stops takes with it what it started outside its process group (setsid)', async function () {
    await running('escaper');
    expect(processesWithEnvironment('CTL_TEST_ESCAPEE', escapee)).to.have.length(1);
    const path = join(city.dir, 'city.toml');
    writeFileSync(path, readFileSync(path, 'utf8').replace(/\n\[\[service\]\]\nname = "escaper"\n[^[]*/, '\n'));
    await waitUntil(
      'the escaped sleep to be gone',
      async () => processesWithEnvironment('CTL_TEST_ESCAPEE', escapee).length === 0,
    );
    expectProblem(await city.api.get('/service/escaper'), 404, 'service-not-found');
  });

  it('a service removed from city.toml stops; every service stops with its city', async function () {
    const sock = await running('sock');
    pids.push(sock.pid!);
    const path = join(city.dir, 'city.toml');
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.replace(/\n\[\[service\]\]\nname = "sock"\n[^[]*/, '\n'));
    await waitUntil('sock to be gone', async () => !isAlive(sock.pid!));
    expectProblem(await city.api.get('/service/sock'), 404, 'service-not-found');
    const web = await running('web');
    const stop = await fetch(`${city.sup.base}/v0/city/served/stop`, { method: 'POST', headers: CSRF });
    expect(stop.status).to.be.oneOf([200, 202]);
    await waitUntil('the web service to end with its city', async () => !isAlive(web.pid!));
    expect(processesMentioning(SERVICE).filter((pid) => pids.includes(pid))).to.deep.equal([]);
  });
});

/** A GET with the path sent as it is (fetch would normalise dot segments and escapes). */
function rawRequest(base: string, method: string, path: string): Promise<{ status: number }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function expectRejected(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  try {
    await promise;
  } catch (err) {
    expect((err as Error).message).to.match(pattern);
    return;
  }
  throw new Error('expected a refusal');
}
