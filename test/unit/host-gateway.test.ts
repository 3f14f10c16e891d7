// The host gateway in process, with no controller behind it: what it answers itself, what it says when the
// controller does not answer, where its socket goes, and that it refuses WebSockets.
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { expect } from 'chai';
import pino from 'pino';
import { HostGateways } from '../../controller/hosts/host-gateway.js';
import { SessionCredentials } from '../../controller/hosts/session-credentials.js';
import { tempDir } from '../helpers/temp-dir.js';

function overSocket(
  socketPath: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { host: 'localhost', ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the host gateway, in process', function () {
  let dir: string;
  let gateways: HostGateways;
  let credentials: SessionCredentials;
  let socket: string;
  let auth: Record<string, string>;

  beforeEach(async function () {
    dir = tempDir('ctl-gw-');
    credentials = new SessionCredentials();
    gateways = new HostGateways({
      city: 'alpha',
      cityRoot: dir,
      runtimeDir: join(dir, '.ctl'),
      // Nothing listens here: the controller is down.
      upstream: { socketPath: join(dir, '.ctl', 'controller.sock') },
      credentials,
      logger: pino({ level: 'silent' }),
    });
    socket = await gateways.open('box1');
    gateways.apiListening();
    const secret = credentials.mint({
      city: 'alpha',
      host: 'box1',
      sessionId: 'alp-7',
      sessionName: 'worker-1',
      actor: 'worker',
    });
    auth = { authorization: `Bearer ${secret}` };
  });

  afterEach(async function () {
    await gateways.closeAll();
  });

  it('answers whoami and the city list itself, with no controller', async function () {
    const whoami = await overSocket(socket, 'GET', '/v0/whoami', auth);
    expect(whoami.status).to.equal(200);
    expect(JSON.parse(whoami.body)).to.include({ actor: 'worker', kind: 'session', name: 'alp-7', city: 'alpha' });
    const cities = await overSocket(socket, 'GET', '/v0/cities?limit=100', auth);
    expect(JSON.parse(cities.body)).to.deep.equal({ items: [{ name: 'alpha', path: dir, running: true }], total: 1 });
  });

  it('says 502 when the controller does not answer, for a read and for a checked mutation', async function () {
    const read = await overSocket(socket, 'GET', '/v0/city/alpha/status', auth);
    expect(read.status).to.equal(502);
    expect(JSON.parse(read.body)).to.include({ code: 'bad-gateway' });
    const close = await overSocket(socket, 'POST', '/v0/city/alpha/bead/alp-1/close', {
      ...auth,
      'x-ctl-request': 't',
    });
    expect(close.status).to.equal(502);
    expect(JSON.parse(close.body).detail).to.match(/^bad_gateway: the controller of alpha did not answer/);
  });

  it('holds a call made while its controller starts until the API listens, then forwards it', async function () {
    const starting = new HostGateways({
      city: 'alpha',
      cityRoot: dir,
      runtimeDir: join(dir, 'starting', '.ctl'),
      upstream: { socketPath: join(dir, '.ctl', 'controller.sock') },
      credentials,
      logger: pino({ level: 'silent' }),
    });
    try {
      const early = await starting.open('box1');
      let answered = false;
      const call = overSocket(early, 'GET', '/v0/city/alpha/status', auth).finally(() => (answered = true));
      // Its own answers do not wait.
      expect((await overSocket(early, 'GET', '/v0/whoami', auth)).status).to.equal(200);
      expect(answered).to.equal(false);
      starting.apiListening();
      // Forwarded now (nothing listens in this test: the forward's own 502).
      expect((await call).status).to.equal(502);
    } finally {
      await starting.closeAll();
    }
  });

  it('opens one gateway per host however many ask, and a closed host loses its credentials', async function () {
    const [a, b] = await Promise.all([gateways.open('box1'), gateways.open('box1')]);
    expect(a).to.equal(socket);
    expect(b).to.equal(socket);
    await gateways.close('box1');
    expect(credentials.has('alp-7')).to.equal(false);
    expect(await gateways.open('box1')).to.equal(socket);
  });

  it('puts a socket too deep for sun_path in the per-user socket directory', function () {
    const deep = new HostGateways({
      city: 'alpha',
      cityRoot: dir,
      runtimeDir: join(dir, 'x'.repeat(90), '.ctl'),
      upstream: { socketPath: '/nonexistent' },
      credentials,
      logger: pino({ level: 'silent' }),
    });
    const path = deep.socketPathOf('box1');
    expect(path.startsWith(join(tmpdir(), `ctl-${process.getuid!()}`))).to.equal(true);
    expect(path.endsWith('-box1/api.sock')).to.equal(true);
    expect(Buffer.byteLength(path)).to.be.at.most(100);
    expect(() => deep.socketPathOf('../etc')).to.throw(/invalid host name/);
  });

  it('refuses a WebSocket upgrade with a problem', async function () {
    const answer = await new Promise<string>((resolve, reject) => {
      const conn = connect(socket, () => {
        conn.write(
          `GET /v0/city/alpha/svc/web/ws HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth.authorization}\r\n` +
            'Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
        );
      });
      let text = '';
      conn.setEncoding('utf8');
      conn.on('data', (chunk: string) => (text += chunk));
      conn.on('end', () => resolve(text));
      conn.on('error', reject);
    });
    expect(answer).to.match(/^HTTP\/1\.1 403 /);
    expect(answer).to.include('may not open a WebSocket');
  });
});
