import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Problem } from '../../shared/http/problem.js';
import { answerProblem } from '../../shared/http/refusal.js';
import { forwardRequest, type ForwardOptions } from '../../shared/http/upstream.js';
import { UpstreamPools } from '../../shared/http/upstream-pools.js';

/** A server on a free loopback port. */
async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}

describe('the one forwarder (shared/http/upstream.ts)', function () {
  const servers: Server[] = [];
  afterEach(async function () {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  /** A front server forwarding everything to `upstream` over one pool, as the fast paths do. */
  async function front(upstream: Server, pools: UpstreamPools, options: Partial<ForwardOptions> = {}) {
    const server = await listen((req, res) => {
      forwardRequest(req, res, pools.get('up', { host: '127.0.0.1', port: portOf(upstream) }), {
        path: req.url!,
        hostHeader: 'upstream.test',
        requestId: 'rid-1',
        ...options,
      }).catch((err: unknown) => answerProblem(req, res, err as Problem, 'rid-1'));
    });
    servers.push(server);
    return `http://127.0.0.1:${portOf(server)}`;
  }

  it('passes status, body and headers through, ours winning, and sends our request id and Host upstream', async function () {
    let seen: IncomingMessage | undefined;
    const upstream = await listen((req, res) => {
      seen = req;
      res.writeHead(201, { 'X-Upstream': 'yes', 'X-CTL-Request-Id': 'theirs' });
      res.end('made');
    });
    servers.push(upstream);
    const base = await front(upstream, new UpstreamPools(4));
    const res = await fetch(`${base}/thing?a=1`, { method: 'POST', body: 'hello' });
    expect(res.status).to.equal(201);
    expect(await res.text()).to.equal('made');
    expect(res.headers.get('x-upstream')).to.equal('yes');
    expect(res.headers.get('x-ctl-request-id')).to.equal('rid-1');
    expect(seen!.url).to.equal('/thing?a=1');
    expect(seen!.headers.host).to.equal('upstream.test');
    expect(seen!.headers['x-ctl-request-id']).to.equal('rid-1');
  });

  it('sends a body read already instead of the request stream, with its own length', async function () {
    let seen: { body: string; length: string | undefined } | undefined;
    const upstream = await listen((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        seen = { body, length: req.headers['content-length'] };
        res.end('ok');
      });
    });
    servers.push(upstream);
    const base = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        forwardRequest(req, res, new UpstreamPools(1).get('up', { host: '127.0.0.1', port: portOf(upstream) }), {
          path: req.url!,
          hostHeader: 'upstream.test',
          requestId: 'rid-1',
          body: Buffer.from('{"checked":"é"}'),
        }).catch((err: unknown) => answerProblem(req, res, err as Problem, 'rid-1'));
      });
    });
    servers.push(base);
    const res = await fetch(`http://127.0.0.1:${portOf(base)}/x`, { method: 'POST', body: '{"sent":1}' });
    expect(await res.text()).to.equal('ok');
    expect(seen).to.deep.equal({ body: '{"checked":"é"}', length: '16' });
  });

  it('sends a GET once more on a fresh connection when its pooled one closes under it', async function () {
    const perSocket = new WeakMap<object, number>();
    let answered = 0;
    const upstream = await listen((req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      // The second request on a kept-alive connection finds it closing: the race a keep-alive pool can lose.
      if (n === 2) {
        req.socket.destroy();
        return;
      }
      answered++;
      res.end('ok');
    });
    servers.push(upstream);
    const base = await front(upstream, new UpstreamPools(1));
    expect(await (await fetch(`${base}/one`)).text()).to.equal('ok');
    const again = await fetch(`${base}/two`);
    expect(again.status).to.equal(200);
    expect(await again.text()).to.equal('ok');
    expect(answered).to.equal(2);
  });

  it('answers 502 naming who did not answer when the upstream fails before answering', async function () {
    const upstream = await listen((req) => req.socket.destroy());
    servers.push(upstream);
    const base = await front(upstream, new UpstreamPools(1), { upstreamName: 'the service' });
    const res = await fetch(`${base}/x`, { method: 'POST', body: 'x' });
    expect(res.status).to.equal(502);
    expect(res.headers.get('content-type')).to.equal('application/problem+json');
    const body = (await res.json()) as { code: string; detail: string };
    expect(body.code).to.equal('bad-gateway');
    expect(body.detail).to.match(/^bad_gateway: the service did not answer: /);
  });

  it('answers 503 when no connection frees up in time, instead of waiting without end', async function () {
    const held: ServerResponse[] = [];
    const upstream = await listen((_req, res) => void held.push(res));
    servers.push(upstream);
    const base = await front(upstream, new UpstreamPools(1), { connectTimeout: { ms: 200, detail: 'no room' } });
    const first = fetch(`${base}/held`);
    await new Promise<void>((resolve) => {
      const check = () => (held.length ? resolve() : setTimeout(check, 10));
      check();
    });
    const second = await fetch(`${base}/queued`);
    expect(second.status).to.equal(503);
    expect(((await second.json()) as { detail: string }).detail).to.equal('no room');
    held[0].end('done');
    expect(await (await first).text()).to.equal('done');
  });

  it('closes the pools of upstreams no longer live when a new one opens', function () {
    const pools = new UpstreamPools(1);
    const old = pools.get('pid-1', { host: '127.0.0.1', port: 1 });
    const kept = pools.get('pid-2', { host: '127.0.0.1', port: 2 });
    expect(pools.get('pid-1', { host: '127.0.0.1', port: 1 })).to.equal(old);
    pools.get('pid-3', { host: '127.0.0.1', port: 1 }, () => ['pid-2', 'pid-3']);
    expect(old.destroyed).to.equal(true);
    expect(kept.destroyed).to.equal(false);
    expect(pools.get('pid-1', { host: '127.0.0.1', port: 1 })).to.not.equal(old);
  });
});
