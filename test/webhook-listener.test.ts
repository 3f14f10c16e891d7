import { createHmac } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { registerCity } from './helpers/city-api.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';

const SECRET = 'listener-secret-of-twenty';
const sign = (body: string) => `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;

/** What a raw exchange on one connection came to: the answer's bytes, how many bytes of ours went out first. */
interface Trickled {
  answer: string;
  sent: number;
  total: number;
  ms: number;
}

/**
 * Sends `head` at once, then `tail` one byte every `everyMs`, until the server answers or closes the connection.
 * A sender the server does not cut off gets all of `tail` out.
 */
function trickle(port: number, head: string, tail: string, everyMs: number): Promise<Trickled> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearInterval(timer);
      socket.destroy();
      resolve({ answer, sent, total: tail.length, ms: Date.now() - started });
    };
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent < tail.length && socket.writable) socket.write(tail.charAt(sent++));
      }, everyMs);
    });
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('end', done);
    socket.on('close', done);
    socket.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNRESET' || err.code === 'EPIPE' ? done() : reject(err),
    );
  });
}

describe('the webhook listener ([webhooks] listen)', function () {
  this.timeout(120_000);
  let sup: TestSupervisor;
  let hooksPort: number;

  before(async function () {
    sup = await TestSupervisor.start({ env: { GH_SECRET: SECRET }, webhookListener: true });
    hooksPort = Number(new URL(sup.hooksBase!).port);
    const dir = sup.cityDir('lst');
    mkdirSync(join(dir, 'orders'), { recursive: true });
    writeFileSync(
      join(dir, 'orders', 'review.toml'),
      '[order]\ntrigger = "webhook"\nidempotent = true\nexec = "true"\n',
    );
    writeFileSync(
      join(dir, 'city.toml'),
      [
        '[workspace]',
        'provider = "echo"',
        '[[webhook]]',
        'name = "gh"',
        'verify = { scheme = "github-hmac-sha256", secret_env = "GH_SECRET" }',
        '[[webhook.rule]]',
        'event = "push"',
        'order = "review"',
        '',
      ].join('\n'),
    );
    await registerCity(sup, 'lst');
  });
  after(async () => {
    await sup?.cleanup();
  });

  it('serves POST /hooks/{city}/{name} only: anything else, the control plane included, is a 404 problem', async function () {
    const body = JSON.stringify({ ref: 'main' });
    const signed = { 'Content-Type': 'application/json', 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': sign(body) };
    const ok = await fetch(`${sup.hooksBase!}/hooks/lst/gh`, { method: 'POST', headers: signed, body });
    expect(ok.status, await ok.clone().text()).to.equal(202);
    expect(ok.headers.get('location'), 'no control-plane address').to.equal(null);

    for (const [method, path] of [
      ['GET', '/health'],
      ['GET', '/v0/cities'],
      ['GET', '/v0/city/lst/webhooks'],
      ['POST', '/v0/city/lst/hook/gh'],
      ['GET', '/hooks/lst/gh'],
      ['POST', '/hooks/lst'],
      ['POST', '/hooks/lst/gh/more'],
      ['GET', '/'],
    ] as const) {
      const res = await fetch(`${sup.hooksBase!}${path}`, {
        method,
        headers: { ...CSRF, ...(method === 'POST' ? signed : {}) },
        ...(method === 'POST' ? { body } : {}),
      });
      expect(res.status, `${method} ${path}`).to.equal(404);
      expect(res.headers.get('content-type'), `${method} ${path}`).to.contain('application/problem+json');
      expect(((await res.json()) as { detail: string }).detail).to.match(/^not_found: this listener serves webhook/);
    }
    const unknownCity = await fetch(`${sup.hooksBase!}/hooks/nope/gh`, { method: 'POST', headers: signed, body });
    expect(unknownCity.status).to.equal(404);
    expect(await unknownCity.json()).to.include({ detail: 'not_found: city not found or not running: nope' });
  });

  it('the control plane’s hook route is a mutation like any: X-CTL-Request required', async function () {
    const body = JSON.stringify({ ref: 'dev' });
    const headers = { 'Content-Type': 'application/json', 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': sign(body) };
    const bare = await fetch(`${sup.base}/v0/city/lst/hook/gh`, { method: 'POST', headers, body });
    expect(bare.status).to.equal(403);
    expect(await bare.json()).to.include({ detail: 'csrf: X-CTL-Request header required on mutation endpoints' });
    const marked = await fetch(`${sup.base}/v0/city/lst/hook/gh`, {
      method: 'POST',
      headers: { ...headers, ...CSRF },
      body,
    });
    expect(marked.status, await marked.clone().text()).to.equal(202);
  });

  it('cuts off a sender that trickles its body (1 byte every 2 s) or its headers', async function () {
    const body = JSON.stringify({ ref: 'slow-body' });
    const head =
      `POST /hooks/lst/gh HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `X-GitHub-Event: push\r\nX-Hub-Signature-256: ${sign(body)}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const slowBody = await trickle(hooksPort, head, body, 2_000);
    console.log(`      slow body cut off after ${slowBody.ms} ms, ${slowBody.sent} of ${slowBody.total} bytes sent`);
    expect(slowBody.answer).to.match(/^HTTP\/1\.1 408 /);
    expect(slowBody.answer).to.contain('application/problem+json');
    expect(slowBody.sent, 'cut off before the body was all sent').to.be.below(slowBody.total);

    const headers = 'X-GitHub-Event: push\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n';
    const slowHeaders = await trickle(hooksPort, 'POST /hooks/lst/gh HTTP/1.1\r\nHost: 127.0.0.1\r\n', headers, 2_000);
    console.log(
      `      slow headers cut off after ${slowHeaders.ms} ms, ${slowHeaders.sent} of ${slowHeaders.total} bytes sent`,
    );
    expect(slowHeaders.answer).to.match(/^HTTP\/1\.1 408 /);
    expect(slowHeaders.sent, 'cut off before the headers were all sent').to.be.below(slowHeaders.total);
  });
});
