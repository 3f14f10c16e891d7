import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { EventSource } from 'eventsource';
import { expectProblem } from './helpers/city-api.js';
import { SseStreamReader, closeAllStreams } from './helpers/sse.js';
import { CSRF, TestSupervisor, withSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** An open request whose response has started (headers in): held until `close()`. */
interface Held {
  req: ClientRequest;
  res: IncomingMessage;
}

function holdOpen(base: string, path: string): Promise<Held> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { agent: false, headers: { Accept: 'text/event-stream' } });
    req.on('response', (res) => resolve({ req, res }));
    req.on('error', reject);
    req.end();
  });
}

async function emit(sup: TestSupervisor, city: string, type: string): Promise<number> {
  const res = await fetch(`${sup.base}/v0/city/${city}/events`, {
    method: 'POST',
    headers: { ...CSRF, 'Content-Type': 'application/json' },
    body: JSON.stringify({ type, actor: 'test', payload: {} }),
  });
  expect(res.status, await res.clone().text()).to.equal(201);
  return ((await res.json()) as { seq: number }).seq;
}

describe('the supervisor proxy under load and through restarts', function () {
  let sup: TestSupervisor;
  const held: Held[] = [];

  withSupervisor(
    async (started) => {
      sup = started;
      await sup.createCity('alpha');
    },
    { env: { CTL_PROXY_CONNECT_TIMEOUT_MS: '1000' } },
  );

  afterEach(function () {
    for (const h of held.splice(0)) h.req.destroy();
    closeAllStreams();
  });

  it('300 idle streams on one city do not starve its ordinary requests', async function () {
    for (let i = 0; i < 300; i++) held.push(await holdOpen(sup.base, '/v0/city/alpha/events/stream'));
    expect(held.every((h) => h.res.statusCode === 200)).to.equal(true);
    const status = await fetch(`${sup.base}/v0/city/alpha/status`);
    expect(status.status).to.equal(200);
    const emitted = await emit(sup, 'alpha', 'test.while-streaming');
    expect(emitted).to.be.greaterThan(0);
  });

  it('a request that gets no connection to its controller in time is a 503 problem, not a hang', async function () {
    // 256 blocking queries fill the controller's pool (they answer nothing until an event or their minute is
    // up); the next ordinary request has nowhere to go.
    const head = Number((await fetch(`${sup.base}/v0/city/alpha/events?limit=1`)).headers.get('x-ctl-index'));
    const waiting: ClientRequest[] = [];
    for (let i = 0; i < 256; i++) {
      const req = request(`${sup.base}/v0/city/alpha/events?index=${head}&wait=1m`, { agent: false });
      req.on('error', () => undefined);
      req.end();
      waiting.push(req);
    }
    try {
      const res = await waitUntil('a 503', async () => {
        const reply = await fetch(`${sup.base}/v0/city/alpha/status`);
        return reply.status === 503 ? reply : undefined;
      });
      const body: unknown = await res.json();
      expectProblem({ status: res.status, headers: res.headers, body }, 503, 'service-unavailable', {
        detail: 'service_unavailable: the controller of alpha did not accept the request',
      });
    } finally {
      for (const req of waiting) req.destroy();
    }
    // Once they are gone the pool serves again.
    await waitUntil('the pool to serve again', async () => (await fetch(`${sup.base}/v0/city/alpha/status`)).ok);
  });

  it('every stream starts with a retry: field, on both streams', async function () {
    for (const path of ['/v0/events/stream', '/v0/city/alpha/events/stream']) {
      const h = await holdOpen(sup.base, path);
      held.push(h);
      const first = await new Promise<string>((resolve) =>
        h.res.once('data', (chunk: Buffer) => resolve(chunk.toString())),
      );
      expect(first, path).to.match(/^retry: \d+\n\n/);
    }
  });

  describe('a city that is only restarting', function () {
    let slow: TestSupervisor;

    before(async function () {
      // Slow startup phases: a restarted controller takes ~2.5 s to run again, longer than a reconnect.
      slow = await TestSupervisor.start({ env: { CTL_CONTROLLER_PHASE_DELAY_MS: '500' } });
      await slow.createCity('beta');
      await slow.createCity('gamma');
    });

    after(async function () {
      await slow?.cleanup();
    });

    it('a stream request is held until the city runs again (a 200, not a 404)', async function () {
      const pid = (await slow.city('beta'))!.pid!;
      process.kill(pid, 'SIGKILL');
      await waitUntil('beta to be restarting', async () => (await slow.city('beta'))?.running === false);
      const stream = await SseStreamReader.open(`${slow.base}/v0/city/beta/events/stream`);
      expect(stream.status).to.equal(200);
      expect((await slow.city('beta'))?.running).to.equal(true);
      stream.close();
    });

    it('its other requests answer 503 with Retry-After until it runs again (typed routes and svc/*)', async function () {
      const pid = (await slow.city('beta'))!.pid!;
      process.kill(pid, 'SIGKILL');
      await waitUntil('beta to be restarting', async () => (await slow.city('beta'))?.running === false);
      for (const path of ['/status', '/beads', '/svc/web/x']) {
        const res = await fetch(`${slow.base}/v0/city/beta${path}`);
        if (res.status === 200) break; // already back: nothing more to see
        expect(res.status, path).to.equal(503);
        expect(Number(res.headers.get('retry-after')), path).to.be.within(1, 31);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
        const body = (await res.json()) as { code: string; detail: string };
        expect(body.code).to.equal('service-unavailable');
        expect(body.detail).to.match(/^service_unavailable: city beta is restarting; try again in \d+s$/);
      }
      await waitUntil('beta to run again', async () => (await slow.city('beta'))?.running === true);
      expect((await fetch(`${slow.base}/v0/city/beta/status`)).status).to.equal(200);
    });

    it('a stopped city or an unknown one is still a 404 at once', async function () {
      await slow.ctl(['city', 'stop', 'gamma']);
      for (const name of ['gamma', 'nope']) {
        const stream = await SseStreamReader.open(`${slow.base}/v0/city/${name}/events/stream`);
        expect(stream.status, name).to.equal(404);
        expect((await stream.json()).detail).to.equal(`not_found: city not found or not running: ${name}`);
        const status = await fetch(`${slow.base}/v0/city/${name}/status`);
        expect(status.status, name).to.equal(404);
        expect(status.headers.get('retry-after')).to.equal(null);
      }
    });

    it("a browser's EventSource keeps its city stream through a controller crash, losing nothing", async function () {
      const seen: { id: string; type: string }[] = [];
      const errors: number[] = [];
      const source = new EventSource(`${slow.base}/v0/city/beta/events/stream`);
      try {
        source.addEventListener('event', (e) =>
          seen.push({ id: e.lastEventId, type: (JSON.parse(e.data) as { type: string }).type }),
        );
        source.addEventListener('error', () => errors.push(source.readyState));
        await waitUntil('the EventSource to open', () => source.readyState === EventSource.OPEN);
        await emit(slow, 'beta', 'test.before-crash');
        await waitUntil('the first event', () => seen.some((e) => e.type === 'test.before-crash'));
        const crashed = (await slow.city('beta'))!.pid!;
        process.kill(crashed, 'SIGKILL');
        await waitUntil('beta to run again', async () => {
          const beta = await slow.city('beta');
          return beta?.running === true && beta.pid !== crashed;
        });
        await emit(slow, 'beta', 'test.after-crash');
        await waitUntil('the event after the crash', () => seen.some((e) => e.type === 'test.after-crash'));
        expect(source.readyState, 'never given up').to.not.equal(EventSource.CLOSED);
        expect(errors.length, 'it did reconnect').to.be.greaterThan(0);
        // Resumed by Last-Event-ID: every seq once, in order.
        const ids = seen.map((e) => Number(e.id));
        expect(ids).to.deep.equal([...ids].sort((a, b) => a - b));
        expect(new Set(ids).size).to.equal(ids.length);
        expect(seen.map((e) => e.type)).to.include.members(['controller.crashed', 'controller.started']);
      } finally {
        source.close();
      }
    });
  });
});
