import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import type { ControllerPidFile } from '../shared/controller-ipc.js';
import { cityPaths } from '../shared/paths.js';
import { unixApiUrl } from '../shared/unix-api-url.js';
import { HostGateways, remoteApiEnv } from '../controller/hosts/host-gateway.js';
import { SessionCredentials } from '../controller/hosts/session-credentials.js';
import type { SessionGrant } from '../controller/hosts/session-scope.js';
import { CityApi, registerCity, type Bead } from './helpers/city-api.js';
import { expectFailure, expectSuccess, runCtl } from './helpers/cli.js';
import { ECHO_AGENT } from './helpers/sessions.js';
import { CSRF, TestSupervisor, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// Issue 32, section 3: a session on a remote host reaches its city through its host's gateway, with a credential
// minted for it alone. The gateway is built here as the controller builds one for a remote host (in process,
// pointed at the real controller's API socket, found as the supervisor finds it: the city's controller.pid), and
// the real `ctl` talks to it the way a remote session's does — CTL_API the socket the reverse tunnel ends in,
// CTL_TOKEN its credential, CTL_CITY and CTL_SESSION_ID its own, and no supervisor of its own machine to ask.

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request over a Unix socket, answered in full. */
function overSocket(
  socketPath: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { host: 'localhost', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('a remote session reaches its city, and only its city, through its host gateway', function () {
  this.timeout(90_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let dir: string;
  let gateways: HostGateways;
  let credentials: SessionCredentials;
  let socketPath: string;
  let grant: SessionGrant;
  let secret: string;
  /** Another session of the same agent, on this machine. */
  let other: string;
  /** A bead the remote session holds, and one the other session holds. */
  let mine: Bead;
  let theirs: Bead;
  /** The remote session's shell: no supervisor here to find, nowhere in a city directory. */
  let shellEnv: NodeJS.ProcessEnv;
  let shellDir: string;

  const remoteCtl = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    runCtl(args, { env: { ...shellEnv, ...env }, cwd: shellDir });
  const bearer = () => ({ authorization: `Bearer ${secret}` });

  async function startSession(): Promise<{ id: string; name: string }> {
    const started = await api.post<{ session_id: string }>('/sessions', { kind: 'agent', name: 'worker' });
    expect(started.status, JSON.stringify(started.body)).to.equal(202);
    const id = started.body.session_id;
    return waitUntil(`session ${id} to be listed`, async () => {
      const view = await api.get<{ id: string; session_name: string }>(`/session/${id}`);
      return view.status === 200 ? { id, name: view.body.session_name } : undefined;
    });
  }

  async function holdFor(sessionId: string, sessionName: string, title: string): Promise<Bead> {
    const bead = await api.create({ title });
    await api.update(bead.id, {
      status: 'in_progress',
      assignee: sessionName,
      metadata: { 'ctl.assigned_session': sessionId },
    });
    return api.bead(bead.id);
  }

  before(async function () {
    sup = await TestSupervisor.start();
    dir = sup.cityDir('alpha');
    mkdirSync(join(dir, 'agents', 'worker'), { recursive: true });
    writeFileSync(
      join(dir, 'city.toml'),
      `[providers.echo]\ncommand = "${ECHO_AGENT}"\nready_prompt_prefix = "ready>"\nenv = { ECHO_READY = "ready>" }\n`,
    );
    writeFileSync(join(dir, 'agents', 'worker', 'agent.toml'), 'provider = "echo"\n');
    api = await registerCity(sup, 'alpha');

    const remote = await startSession();
    const local = await startSession();
    other = local.id;
    mine = await holdFor(remote.id, remote.name, 'fix the parser');
    theirs = await holdFor(local.id, local.name, 'write the docs');

    // Where the supervisor finds the controller's API: the socket its pid file names.
    const pidFile = JSON.parse(readFileSync(cityPaths(dir).controllerPid, 'utf8')) as ControllerPidFile;
    credentials = new SessionCredentials();
    gateways = new HostGateways({
      city: 'alpha',
      cityRoot: dir,
      runtimeDir: cityPaths(dir).runtimeDir,
      upstream: { socketPath: pidFile.socket },
      credentials,
      logger: pino({ level: 'silent' }),
    });
    // Its controller listens already (as once a controller has started).
    gateways.apiListening();
    socketPath = await gateways.open('box1');
    grant = { city: 'alpha', host: 'box1', sessionId: remote.id, sessionName: remote.name, actor: 'worker' };
    secret = credentials.mint(grant);

    shellDir = tempDir('ctl-remote-shell-');
    shellEnv = {
      CTL_HOME: join(shellDir, 'home'),
      HOME: shellDir,
      ...remoteApiEnv({ remoteSocketPath: socketPath, credential: secret }),
      CTL_CITY: 'alpha',
      CTL_SESSION_ID: remote.id,
      CTL_AGENT: 'worker',
    };
  });

  after(async () => {
    await gateways?.closeAll();
    await sup?.cleanup();
  });

  it("listens on a socket of the controller's user alone, in the city's .ctl/hosts/<host>/", function () {
    expect(socketPath).to.equal(join(dir, '.ctl', 'hosts', 'box1', 'api.sock'));
    expect(statSync(socketPath).isSocket()).to.equal(true);
    expect(statSync(socketPath).mode & 0o777).to.equal(0o600);
    expect(statSync(dirname(socketPath)).mode & 0o777).to.equal(0o700);
    expect(shellEnv.CTL_API).to.equal(unixApiUrl(socketPath));
    expect(shellEnv.CTL_TOKEN).to.match(/^ctls_/);
  });

  it("ctl whoami names the session's agent, not the supervisor's user", async () => {
    expect(expectSuccess(await remoteCtl(['whoami']))).to.deep.equal([
      `worker (session ${grant.sessionName}, city alpha)`,
    ]);
    const json = JSON.parse(expectSuccess(await remoteCtl(['whoami', '--json'])).join('\n')) as object;
    expect(json).to.deep.equal({
      actor: 'worker',
      kind: 'session',
      name: grant.sessionId,
      session_name: grant.sessionName,
      city: 'alpha',
      read_only: false,
      browser_session: false,
    });
    expect(expectSuccess(await remoteCtl(['cities', '--json']))).to.have.length(1);
  });

  it('reads its city', async () => {
    const shown = expectSuccess(await remoteCtl(['bead', 'show', theirs.id, '--json']));
    expect((JSON.parse(shown.join('\n')) as Bead).title).to.equal('write the docs');
    expect(expectSuccess(await remoteCtl(['hook', '--id']))).to.deep.equal([mine.id]);
  });

  it('comments on and closes the bead it holds, recorded as its agent', async () => {
    expectSuccess(await remoteCtl(['bead', 'comment', mine.id, 'found the cause']));
    const comments = await api.get<{ items: { author: string; text: string }[] }>(`/bead/${mine.id}/comments`);
    expect(comments.body.items.map((c) => [c.author, c.text])).to.deep.equal([['worker', 'found the cause']]);
    expectSuccess(await remoteCtl(['bead', 'close', mine.id, '--reason', 'fixed']));
    expect((await api.bead(mine.id)).status).to.equal('closed');
    const closed = await api.get<{ items: { actor: string; subject: string }[] }>('/events?type=bead.closed');
    expect(closed.body.items.filter((e) => e.subject === mine.id).map((e) => e.actor)).to.deep.equal(['worker']);
  });

  it('sends mail as its agent, never as the human', async () => {
    expectSuccess(await remoteCtl(['mail', 'send', '--to', 'human', '--subject', 'Done', '--body', 'parser fixed']));
    const inbox = await api.get<{ items: { from: string; subject: string }[] }>('/mail?agent=human');
    expect(inbox.body.items.map((m) => [m.from, m.subject])).to.deep.include(['worker', 'Done']);
    const posing = await remoteCtl(['mail', 'send', '--to', 'x', '--subject', 's', '--from', 'human']);
    expectFailure(posing, 'mail send', /forbidden: session .* may send mail only as worker/);
  });

  it("reads and answers mail to its agent, and no one else's", async () => {
    const toWorker = await api.post<{ id: string }>('/mail', { to: 'worker', subject: 'Question', body: 'why?' });
    const toHuman = await api.post<{ id: string }>('/mail', { to: 'human', from: 'ann', subject: 'Private' });
    expect([toWorker.status, toHuman.status]).to.deep.equal([201, 201]);
    expect(expectSuccess(await remoteCtl(['mail', 'read', toWorker.body.id])).join('\n')).to.include('why?');
    expectSuccess(await remoteCtl(['mail', 'reply', toWorker.body.id, '--body', 'because']));
    const thread = await api.get<{ items: { from: string; body: string }[] }>(`/mail/thread/${toWorker.body.id}`);
    expect(thread.body.items.map((m) => [m.from, m.body])).to.deep.include(['worker', 'because']);
    expectFailure(
      await remoteCtl(['mail', 'read', toHuman.body.id]),
      'mail read',
      /forbidden: session .* may not change mail .*, which is not to it/,
    );
    expectFailure(await remoteCtl(['mail', 'reply', toHuman.body.id, '--body', 'x']), 'mail reply', /forbidden: /);
    expect((await api.get<{ read: boolean }>(`/mail/${toHuman.body.id}`)).body.read).to.equal(false);
  });

  it("waits and cancels its own waits, not another session's", async () => {
    const made = await remoteCtl(['wait', 'for', theirs.id, '--note', 'docs first', '--json']);
    const wait = JSON.parse(expectSuccess(made).join('\n')) as { id: string; session_id: string };
    expect(wait.session_id).to.equal(grant.sessionId);
    expectSuccess(await remoteCtl(['wait', 'cancel', wait.id]));
    expectFailure(
      await remoteCtl(['wait', 'for', theirs.id, '--session', other]),
      'wait for',
      /forbidden: .* may act only as itself, not as session /,
    );
    const theirWait = await api.post<{ id: string }>(`/session/${other}/wait`, { on_beads: [mine.id, theirs.id] });
    expect(theirWait.status, JSON.stringify(theirWait.body)).to.be.oneOf([200, 201]);
    expectFailure(
      await remoteCtl(['wait', 'cancel', theirWait.body.id]),
      'wait cancel',
      /forbidden: session .* may not change wait .*, another session's/,
    );
    expect((await api.get<{ state: string }>(`/wait/${theirWait.body.id}`)).body.state).to.equal('pending');
  });

  it("is refused another session's bead (403), and changes nothing", async () => {
    expectFailure(
      await remoteCtl(['bead', 'comment', theirs.id, 'mine now']),
      'bead comment',
      /forbidden: session .* may not change bead .*, which it does not hold/,
    );
    expectFailure(await remoteCtl(['bead', 'close', theirs.id]), 'bead close', /forbidden: /);
    // Naming the other session as itself does not help either.
    expectFailure(await remoteCtl(['bead', 'close', theirs.id, '--session', other]), 'bead close', /forbidden: /);
    expect((await api.bead(theirs.id)).status).to.equal('in_progress');
    expect((await api.get<{ items: unknown[] }>(`/bead/${theirs.id}/comments`)).body.items).to.deep.equal([]);
    const asOther = await overSocket(
      socketPath,
      'POST',
      `/v0/city/alpha/session/${other}/hook`,
      { ...bearer(), ...CSRF, 'content-type': 'application/json' },
      JSON.stringify({ event: 'Stop', input: {} }),
    );
    expect(asOther.status).to.equal(403);
    expect(JSON.parse(asOther.body)).to.include({ code: 'forbidden' });
  });

  it('is refused another city, token creation and supervisor operations (403)', async () => {
    const beta = await overSocket(socketPath, 'GET', '/v0/city/beta/status', bearer());
    expect(beta.status).to.equal(403);
    expect(JSON.parse(beta.body)).to.include({
      detail: `forbidden: session ${grant.sessionName} (${grant.sessionId}) may use only its city alpha, not city beta`,
    });
    expectFailure(await remoteCtl(['bead', 'list', '--city', 'beta']), 'bead list', /no registered city named beta/);
    expectFailure(await remoteCtl(['token', 'create', 'mine']), 'token create', /forbidden: .*supervisor operation/);
    expectFailure(await remoteCtl(['city', 'stop', 'alpha']), 'city stop', /forbidden: .* may not stop its city/);
    expectFailure(await remoteCtl(['register', tempDir()]), 'register', /forbidden: /);
    // `ctl supervisor stop` signals a supervisor of its own machine, and the host has none.
    expectFailure(await remoteCtl(['supervisor', 'stop']), 'supervisor stop', /supervisor is not running/);
    const tokens = await fetch(`${sup.base}/v0/tokens`);
    expect(((await tokens.json()) as { items: unknown[] }).items).to.deep.equal([]);
    expect((await sup.city('alpha'))?.running).to.equal(true);
  });

  it('lets no actor header or cookie through: the session is who it is', async () => {
    const bead = await holdFor(grant.sessionId, grant.sessionName, 'spoof check');
    const posted = await overSocket(
      socketPath,
      'POST',
      `/v0/city/alpha/bead/${bead.id}/comments`,
      { ...bearer(), ...CSRF, 'content-type': 'application/json', 'x-ctl-actor': 'ann' },
      JSON.stringify({ text: 'who am I' }),
    );
    expect(posted.status, posted.body).to.equal(201);
    const comments = await api.get<{ items: { author: string }[] }>(`/bead/${bead.id}/comments`);
    expect(comments.body.items.map((c) => c.author)).to.deep.equal(['worker']);
  });

  it("streams its city's events through the gateway", async () => {
    const seen = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          socketPath,
          path: '/v0/city/alpha/events/stream?after_seq=0',
          headers: { host: 'localhost', ...bearer(), accept: 'text/event-stream' },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`stream answered ${res.statusCode}`));
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
            if (text.includes('"bead.closed"')) {
              req.destroy();
              resolve(text);
            }
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
    const frames = seen
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { type: string; subject: string; actor: string });
    expect(frames.find((f) => f.type === 'bead.closed')).to.include({ subject: mine.id, actor: 'worker' });
    // And the CLI's own stream client, over the socket.
    const watched = expectSuccess(await remoteCtl(['events', '--watch', '--type', 'bead.closed', '--after', '0']));
    expect(JSON.parse(watched[0])).to.include({ type: 'bead.closed', subject: mine.id, actor: 'worker' });
  });

  it('refuses a request with no credential or a bad one (401, a Bearer challenge)', async () => {
    const none = await overSocket(socketPath, 'GET', '/v0/city/alpha/status');
    expect(none.status).to.equal(401);
    expect(none.headers['www-authenticate']).to.equal('Bearer realm="ctl"');
    const bad = await overSocket(socketPath, 'GET', '/v0/city/alpha/status', { authorization: 'Bearer ctl_nope' });
    expect(bad.status).to.equal(401);
    expect(bad.headers['www-authenticate']).to.match(/error="invalid_token"/);
    // The credential is the gateway's alone: the supervisor does not take it.
    const direct = await fetch(`${sup.base}/v0/whoami`, { headers: bearer() });
    expect(direct.status).to.equal(401);
  });

  it('refuses a session of another host', async () => {
    const elsewhere = credentials.mint({ ...grant, sessionId: other, sessionName: 'x', host: 'box2' });
    const res = await overSocket(socketPath, 'GET', '/v0/city/alpha/status', { authorization: `Bearer ${elsewhere}` });
    expect(res.status).to.equal(403);
    expect(JSON.parse(res.body)).to.include({ code: 'forbidden' });
    credentials.revoke(other);
  });

  it('a revoked credential is refused (401), and what it had open ends: it ended with its session', async () => {
    const stream = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        { socketPath, path: '/v0/city/alpha/events/stream', headers: { host: 'localhost', ...bearer() } },
        (res) => (res.statusCode === 200 ? resolve(res) : reject(new Error(`stream answered ${res.statusCode}`))),
      );
      req.on('error', reject);
      req.end();
    });
    let ended = false;
    stream.on('close', () => (ended = true));
    stream.on('error', () => (ended = true));
    stream.resume();
    expect(credentials.revoke(grant.sessionId)).to.equal(true);
    await waitUntil('the stream it had open to end', () => ended);
    expectFailure(await remoteCtl(['whoami']), 'whoami', /unauthorized: unknown or revoked session credential/);
    expectFailure(await remoteCtl(['bead', 'list']), 'bead list', /unauthorized: /);
  });
});
