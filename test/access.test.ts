import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { cityPaths, ctlEntryPath } from '../shared/paths.js';
import { stageCtlFor, type StagedCtl } from './helpers/other-account.js';
import { killAllMentioning } from './helpers/processes.js';
import { runCtl, type CliResult } from './helpers/cli.js';
import { freePort, tempDir, TestSupervisor, withSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// Who may use the API (issue 25; decisions.md, third round): on loopback, the account on the other end of the
// connection must be the supervisor's own or one `allow_users`/`allow_groups` names; anyone else needs a token.
// Another account is played by `nobody` (uid 65534) through setpriv, as root — which is how CI runs.

const run = promisify(execFile);
const ECHO_SERVICE = join(import.meta.dirname, 'fixtures', 'header-echo-service.mjs');
const NOBODY = 65534;
const ME = userInfo().username;
const isRoot = process.getuid?.() === 0;

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** curl as `nobody` (or as ourselves when `uid` is undefined): the status, headers and body of one answer. */
async function curl(uid: number | undefined, url: string, args: string[] = []): Promise<Reply> {
  const argv = ['-s', '-i', '--max-time', '10', ...args, url];
  const [file, fileArgs] =
    uid === undefined
      ? ['curl', argv]
      : ['setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'curl', ...argv]];
  const { stdout } = await run(file, fileArgs, { encoding: 'utf8' }).catch((err: { stdout?: string }) => ({
    stdout: err.stdout ?? '',
  }));
  return parse(stdout);
}

function parse(text: string): Reply {
  const split = text.indexOf('\r\n\r\n');
  const head = (split < 0 ? text : text.slice(0, split)).split('\r\n');
  const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status, headers, body: split < 0 ? '' : text.slice(split + 4) };
}

function detailOf(reply: Reply): string {
  return (JSON.parse(reply.body) as { detail: string }).detail;
}

const WEBSOCKET = [
  '-H',
  'Connection: Upgrade',
  '-H',
  'Upgrade: websocket',
  '-H',
  'Sec-WebSocket-Version: 13',
  '-H',
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
];
const POST_JSON = (body: unknown) => [
  '-X',
  'POST',
  '-H',
  'X-CTL-Request: test',
  '-H',
  'Content-Type: application/json',
  '-d',
  JSON.stringify(body),
];

/** Every kind of request: a typed supervisor route, a proxied typed route, both streams, svc/*, a WebSocket. */
function everyKind(city: string): { what: string; path: string; args: string[] }[] {
  return [
    { what: 'supervisor typed route', path: '/v0/cities', args: [] },
    { what: 'health', path: '/health', args: [] },
    { what: 'city typed route (fast proxy)', path: `/v0/city/${city}/beads`, args: [] },
    { what: 'city mutation', path: `/v0/city/${city}/beads`, args: POST_JSON({ title: 'sneaky' }) },
    { what: 'supervisor event stream', path: '/v0/events/stream', args: [] },
    { what: 'city event stream', path: `/v0/city/${city}/events/stream`, args: [] },
    { what: 'svc/*', path: `/v0/city/${city}/svc/web/`, args: [] },
    { what: 'WebSocket upgrade', path: `/v0/city/${city}/svc/web/ws`, args: WEBSOCKET },
  ];
}

/** `ctl supervisor run` with these `[supervisor]` lines, for a start that must fail. */
async function runSupervisor(config: string[]): Promise<CliResult> {
  const root = tempDir();
  try {
    const home = join(root, 'home');
    mkdirSync(home);
    writeFileSync(join(home, 'supervisor.toml'), ['[supervisor]', `port = ${await freePort()}`, ...config].join('\n'));
    return await runCtl(['supervisor', 'run'], { env: { CTL_HOME: home, CTL_LOG_STDERR: '0' }, timeoutMs: 20_000 });
  } finally {
    killAllMentioning(root);
    rmSync(root, { recursive: true, force: true });
  }
}

describe('who may use the API', function () {
  this.timeout(60_000);

  before(function () {
    if (!isRoot) this.skip(); // acting as another account takes root (setpriv), as in CI
  });

  describe('the same-user rule, with nothing set up', function () {
    let sup: TestSupervisor;

    withSupervisor(async (started) => {
      sup = started;
      await sup.createCity('alpha');
    });

    it('refuses another account every kind of request with a 403 forbidden problem, before any routing', async function () {
      const failures: string[] = [];
      for (const { what, path, args } of everyKind('alpha')) {
        const reply = await curl(NOBODY, `${sup.base}${path}`, args);
        if (
          reply.status !== 403 ||
          !/^forbidden: local user nobody \(uid 65534\) may not use this API/.test(detailOf(reply))
        ) {
          failures.push(`${what}: ${reply.status} ${reply.body}`);
        } else if (reply.headers['content-type'] !== 'application/problem+json' || !reply.headers['x-ctl-request-id']) {
          failures.push(`${what}: not a problem with a request id: ${JSON.stringify(reply.headers)}`);
        }
      }
      expect(failures).to.deep.equal([]);
      // The refused mutation did nothing.
      const beads = await curl(undefined, `${sup.base}/v0/city/alpha/beads`);
      expect(beads.body).to.not.include('sneaky');
    });

    it('lets the supervisor’s own user in, every kind alike (curl unchanged)', async function () {
      const ok = await curl(undefined, `${sup.base}/v0/cities`);
      expect(ok.status).to.equal(200);
      expect(ok.body).to.include('"alpha"');
      const created = await curl(undefined, `${sup.base}/v0/city/alpha/beads`, POST_JSON({ title: 'mine' }));
      expect(created.status, created.body).to.equal(201);
      // Past the gate, routing answers: an unknown service is the route's 404, not the gate's 403.
      expect((await curl(undefined, `${sup.base}/v0/city/alpha/svc/web/`)).status).to.equal(404);
      expect((await curl(undefined, `${sup.base}/v0/city/alpha/svc/web/ws`, WEBSOCKET)).status).to.equal(404);
      const stream = await fetch(`${sup.base}/v0/city/alpha/events/stream`);
      expect(stream.status).to.equal(200);
      await stream.body?.cancel();
      const supStream = await fetch(`${sup.base}/v0/events/stream`);
      expect(supStream.status).to.equal(200);
      await supStream.body?.cancel();
    });

    it('records the requester as the actor, whatever X-CTL-Actor a client sends', async function () {
      const reply = await curl(undefined, `${sup.base}/v0/city/alpha/beads`, [
        ...POST_JSON({ title: 'attributed' }),
        '-H',
        'X-CTL-Actor: mallory',
      ]);
      expect(reply.status, reply.body).to.equal(201);
      const id = (JSON.parse(reply.body) as { id: string }).id;
      const events = await curl(undefined, `${sup.base}/v0/city/alpha/events?type=bead.created&limit=100`);
      const mine = (JSON.parse(events.body) as { items: { subject?: string; actor: string }[] }).items.find(
        (e) => e.subject === id,
      );
      expect(mine?.actor).to.equal(ME);
      // The supervisor's own events too: the city's creation names who asked.
      const created = await sup.events({ type: 'request.result.city.create' });
      expect(created.at(-1)?.actor).to.equal(ME);
      // And the system's own events a mutation causes while it is served: a session it creates.
      const session = await curl(undefined, `${sup.base}/v0/city/alpha/sessions`, POST_JSON({ name: 'default' }));
      expect(session.status, session.body).to.be.oneOf([201, 202]);
      const sessionId = (JSON.parse(session.body) as { session_id: string }).session_id;
      const lifecycle = await curl(undefined, `${sup.base}/v0/city/alpha/events?type=session.created&limit=100`);
      const sessionEvent = (JSON.parse(lifecycle.body) as { items: { subject?: string; actor: string }[] }).items.find(
        (e) => e.subject === sessionId,
      );
      expect(sessionEvent?.actor, lifecycle.body).to.equal(ME);
    });

    it('keeps $CTL_HOME and the city’s .ctl/ to the supervisor’s user (0700, socket and tokens 0600)', async function () {
      expect(statSync(sup.home).mode & 0o777).to.equal(0o700);
      const paths = cityPaths(sup.cityDir('alpha'));
      expect(statSync(paths.runtimeDir).mode & 0o777).to.equal(0o700);
      expect(statSync(paths.socket).mode & 0o777).to.equal(0o600);
      const token = await curl(undefined, `${sup.base}/v0/tokens`, POST_JSON({ name: 'modes' }));
      expect(token.status, token.body).to.equal(201);
      expect(statSync(join(sup.home, 'tokens.json')).mode & 0o777).to.equal(0o600);
      // Only the hash is kept.
      const secret = (JSON.parse(token.body) as { token: string }).token;
      expect(readFileSync(join(sup.home, 'tokens.json'), 'utf8')).to.not.include(secret);
      // Another account cannot read the city's event log, whatever the file's own mode.
      const cat = await run('setpriv', [
        `--reuid=${NOBODY}`,
        `--regid=${NOBODY}`,
        '--clear-groups',
        'cat',
        paths.events,
      ]).then(
        () => 'read',
        () => 'refused',
      );
      expect(cat).to.equal('refused');
    });
  });

  describe('allow_users', function () {
    let sup: TestSupervisor;

    withSupervisor(
      (started) => {
        sup = started;
      },
      { config: ['allow_users = ["nobody"]'] },
    );

    it('lets the named account in, recorded under its own name', async function () {
      expect((await curl(NOBODY, `${sup.base}/v0/cities`)).status).to.equal(200);
      const dir = sup.cityDir('beta');
      const created = await curl(NOBODY, `${sup.base}/v0/city`, POST_JSON({ dir, start_command: 'sleep 3600' }));
      expect(created.status, created.body).to.equal(202);
      const id = (JSON.parse(created.body) as { request_id: string }).request_id;
      const terminal = await sup.terminalEvent(id);
      expect(terminal.actor).to.equal('nobody');
    });
  });

  describe('allow_groups', function () {
    let sup: TestSupervisor;

    before(async function () {
      const group = readFileSync('/etc/group', 'utf8')
        .split('\n')
        .find((l) => l.split(':')[2] === String(NOBODY))
        ?.split(':')[0];
      if (!group) this.skip(); // no group of gid 65534 on this machine
      sup = await TestSupervisor.start({ config: [`allow_groups = ["${group}"]`] });
    });

    after(async function () {
      await sup?.cleanup();
    });

    it('lets a member of the named group in', async function () {
      expect((await curl(NOBODY, `${sup.base}/v0/cities`)).status).to.equal(200);
    });
  });

  it('refuses to start naming an account that does not exist, in one line', async function () {
    const result = await runSupervisor(['allow_users = ["no-such-user-ctl"]']);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.match(/^ctl supervisor run: .*supervisor\.allow_users: no such user: no-such-user-ctl$/);
  });

  describe('tokens', function () {
    let sup: TestSupervisor;
    /** ctl as nobody runs it: the checkout may be closed to other accounts (a clone under a 0700 home). */
    let staged: StagedCtl;

    before(async function () {
      sup = await TestSupervisor.start();
      await sup.createCity('gamma');
      staged = await stageCtlFor(NOBODY);
    });

    after(async function () {
      staged?.remove();
      await sup?.cleanup();
    });

    async function createToken(body: Record<string, unknown>): Promise<string> {
      const reply = await curl(undefined, `${sup.base}/v0/tokens`, POST_JSON(body));
      expect(reply.status, reply.body).to.equal(201);
      return (JSON.parse(reply.body) as { token: string }).token;
    }

    it('lets anyone with a token in, every kind of request, recorded as token:NAME', async function () {
      const token = await createToken({ name: 'ci' });
      const bearer = ['-H', `Authorization: Bearer ${token}`];
      expect((await curl(NOBODY, `${sup.base}/v0/cities`, bearer)).status).to.equal(200);
      expect((await curl(NOBODY, `${sup.base}/v0/city/gamma/svc/web/`, bearer)).status).to.equal(404);
      expect((await curl(NOBODY, `${sup.base}/v0/city/gamma/svc/web/ws`, [...bearer, ...WEBSOCKET])).status).to.equal(
        404,
      );
      const made = await curl(NOBODY, `${sup.base}/v0/city/gamma/beads`, [
        ...POST_JSON({ title: 'from a token' }),
        ...bearer,
      ]);
      expect(made.status, made.body).to.equal(201);
      const id = (JSON.parse(made.body) as { id: string }).id;
      const events = await curl(undefined, `${sup.base}/v0/city/gamma/events?type=bead.created&limit=100`);
      const event = (JSON.parse(events.body) as { items: { subject?: string; actor: string }[] }).items.find(
        (e) => e.subject === id,
      );
      expect(event?.actor).to.equal('token:ci');
    });

    it('a token holder may not manage tokens (403)', async function () {
      const token = await createToken({ name: 'holder' });
      const bearer = ['-H', `Authorization: Bearer ${token}`];
      const list = await curl(undefined, `${sup.base}/v0/tokens`, bearer);
      expect(list.status).to.equal(403);
      expect(detailOf(list)).to.match(/^forbidden: tokens are managed by the supervisor's user/);
      const create = await curl(undefined, `${sup.base}/v0/tokens`, [...POST_JSON({ name: 'escalate' }), ...bearer]);
      expect(create.status).to.equal(403);
    });

    it('a read-only token reads but every mutation is a 403', async function () {
      const token = await createToken({ name: 'viewer', read_only: true });
      const bearer = ['-H', `Authorization: Bearer ${token}`];
      expect((await curl(NOBODY, `${sup.base}/v0/city/gamma/beads`, bearer)).status).to.equal(200);
      for (const method of ['POST', 'PATCH', 'DELETE', 'PUT']) {
        const reply = await curl(NOBODY, `${sup.base}/v0/city/gamma/beads`, [
          ...POST_JSON({ title: 'x' }),
          '-X',
          method,
          ...bearer,
        ]);
        expect(reply.status, `${method}: ${reply.body}`).to.equal(403);
        expect(detailOf(reply)).to.equal(`forbidden: token viewer is read-only; ${method} changes state`);
      }
    });

    it('a malformed, unknown or revoked token is a 401 with WWW-Authenticate: Bearer; an expired one says so', async function () {
      const cases: [string, RegExp][] = [
        ['Bearer nonsense', /^unauthorized: malformed token/],
        [`Bearer ctl_${'A'.repeat(43)}`, /^unauthorized: unknown or revoked token$/],
        ['Basic dXNlcjpwdw==', /^unauthorized: Authorization must be "Bearer <token>"$/],
      ];
      const revoked = await createToken({ name: 'gone' });
      const removal = await curl(undefined, `${sup.base}/v0/tokens/gone`, ['-X', 'DELETE', '-H', 'X-CTL-Request: t']);
      expect(removal.status).to.equal(204);
      cases.push([`Bearer ${revoked}`, /^unauthorized: unknown or revoked token$/]);
      const expiring = await createToken({ name: 'brief', expires_in: '1s' });
      await waitUntil('the token to expire', async () => {
        const reply = await curl(undefined, `${sup.base}/v0/tokens`);
        return (JSON.parse(reply.body) as { items: { name: string; expired: boolean }[] }).items.find(
          (t) => t.name === 'brief',
        )?.expired;
      });
      cases.push([`Bearer ${expiring}`, /^unauthorized: token brief expired at \d{4}-/]);
      for (const [header, detail] of cases) {
        // From our own account too: a credential shown is a credential checked.
        const reply = await curl(undefined, `${sup.base}/v0/cities`, ['-H', `Authorization: ${header}`]);
        expect(reply.status, header).to.equal(401);
        expect(reply.headers['www-authenticate'], header).to.match(/^Bearer realm="ctl"/);
        expect(detailOf(reply), header).to.match(detail);
      }
      const expired = await curl(undefined, `${sup.base}/v0/cities`, ['-H', `Authorization: Bearer ${expiring}`]);
      expect(expired.headers['www-authenticate']).to.include('The token expired');
    });

    it('ctl token create, list and revoke; ctl with CTL_TOKEN works as another account', async function () {
      const created = await sup.ctl(['token', 'create', 'cli', '--read-only', '--expires', '30d']);
      expect(created.code, created.stderr).to.equal(0);
      const secret = created.stdout.trim();
      expect(secret).to.match(/^ctl_[A-Za-z0-9_-]{43}$/);
      expect(created.stderr).to.match(/^Created read-only token cli, valid until .*shown only now/);
      const listed = await sup.ctl(['token', 'list', '--json']);
      const item = (JSON.parse(listed.stdout) as { items: Record<string, unknown>[] }).items.find(
        (t) => t.name === 'cli',
      );
      expect(item).to.include({ read_only: true, expired: false, created_by: ME });
      expect(JSON.stringify(item)).to.not.include(secret);
      const dup = await sup.ctl(['token', 'create', 'cli']);
      expect(dup.code).to.equal(1);
      expect(dup.stderr.trim()).to.equal('ctl token create: conflict: a token named cli exists; revoke it first');
      const badExpiry = await sup.ctl(['token', 'create', 'other', '--expires', 'soon']);
      expect(badExpiry.code).to.equal(1);
      expect(badExpiry.stderr).to.match(/^ctl token create: .*expires/);

      // As nobody, with the token: reads work, writes are refused, tokens cannot be managed.
      const asNobody = (args: string[]) =>
        run(
          'setpriv',
          [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', staged.node, staged.entry, ...args],
          {
            env: { ...sup.env, HOME: '/', CTL_TOKEN: secret },
            cwd: staged.dir,
            encoding: 'utf8',
          },
        ).then(
          (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
          (e: { code: number; stdout: string; stderr: string }) => ({
            code: e.code,
            stdout: e.stdout,
            stderr: e.stderr,
          }),
        );
      const cities = await asNobody(['cities']);
      expect(cities.code, cities.stderr).to.equal(0);
      expect(cities.stdout).to.include('gamma');
      const write = await asNobody(['bead', 'create', 'nope', '--city', 'gamma']);
      expect(write.code).to.equal(1);
      expect(write.stderr).to.match(/forbidden: token cli is read-only/);

      const revoked = await sup.ctl(['token', 'revoke', 'cli']);
      expect(revoked.stdout.trim()).to.equal('Revoked token cli');
      const after = await asNobody(['cities']);
      expect(after.code).to.equal(1);
      expect(after.stderr).to.match(/unauthorized: unknown or revoked token/);
      // Both changes are in the supervisor's log, by who made them, without the secret.
      for (const type of ['token.created', 'token.revoked']) {
        const event = (await sup.events({ type })).find((e) => e.subject === 'cli');
        expect(event, type).to.deep.include({ actor: ME });
        expect(event!.payload, type).to.deep.include({ name: 'cli', read_only: true });
        expect(JSON.stringify(event)).to.not.include(secret);
      }
      const missing = await sup.ctl(['token', 'revoke', 'cli']);
      expect(missing.stderr.trim()).to.equal('ctl token revoke: not_found: no token named cli');
    });

    it('keeps our credentials and any client-sent X-CTL-Actor from the city’s workspace services', async function () {
      const dir = sup.cityDir('gamma');
      const echo = JSON.stringify(`${process.execPath} ${ECHO_SERVICE}`);
      appendFileSync(join(dir, 'city.toml'), `\n[[service]]\nname = "echo"\ncommand = ${echo}\n`);
      const token = await createToken({ name: 'svc' });
      const headers = [
        '-H',
        `Authorization: Bearer ${token}`,
        '-H',
        'X-CTL-Actor: mallory',
        '-H',
        'Cookie: a=1; ctl_session=x',
      ];
      const seen = await waitUntil('the echo service to answer', async () => {
        const reply = await curl(NOBODY, `${sup.base}/v0/city/gamma/svc/echo/x`, headers);
        return reply.status === 200 ? (JSON.parse(reply.body) as Record<string, string>) : undefined;
      });
      expect(seen).to.not.have.property('authorization');
      expect(seen['x-ctl-actor']).to.equal('token:svc');
      expect(seen.cookie).to.equal('a=1');
      const upgraded = await curl(NOBODY, `${sup.base}/v0/city/gamma/svc/echo/ws`, [...headers, ...WEBSOCKET]);
      expect(upgraded.status, upgraded.body).to.equal(200);
      const viaUpgrade = JSON.parse(upgraded.body) as Record<string, string>;
      expect(viaUpgrade).to.not.have.property('authorization');
      expect(viaUpgrade['x-ctl-actor']).to.equal('token:svc');
      expect(viaUpgrade.cookie).to.equal('a=1');
    });

    it('a one-time code becomes an HttpOnly, SameSite=Strict session cookie, accepted like its token', async function () {
      const token = await createToken({ name: 'browser', read_only: true });
      const minted = await curl(NOBODY, `${sup.base}/v0/auth/codes`, [
        '-X',
        'POST',
        '-H',
        'X-CTL-Request: t',
        '-H',
        `Authorization: Bearer ${token}`,
      ]);
      expect(minted.status, minted.body).to.equal(201);
      const { url, code } = JSON.parse(minted.body) as { url: string; code: string };
      expect(url).to.equal(`/v0/auth/exchange?code=${code}`);
      expect(url).to.not.include(token);
      const exchanged = await curl(NOBODY, `${sup.base}${url}`);
      expect(exchanged.status).to.equal(303);
      expect(exchanged.headers.location).to.equal('/ui/');
      const cookie = exchanged.headers['set-cookie'];
      expect(cookie).to.match(/^ctl_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
      const session = cookie.split(';')[0];
      // The cookie stands for the token: reads pass, writes do not.
      expect((await curl(NOBODY, `${sup.base}/v0/cities`, ['-H', `Cookie: ${session}`])).status).to.equal(200);
      const write = await curl(NOBODY, `${sup.base}/v0/city/gamma/beads`, [
        ...POST_JSON({ title: 'x' }),
        '-H',
        `Cookie: ${session}`,
      ]);
      expect(write.status).to.equal(403);
      // The code is spent.
      const again = await curl(NOBODY, `${sup.base}${url}`);
      expect(again.status).to.equal(401);
      expect(detailOf(again)).to.equal('unauthorized: unknown, used or expired code; ask for a new link');
      // Revoking the token ends the session.
      await curl(undefined, `${sup.base}/v0/tokens/browser`, ['-X', 'DELETE', '-H', 'X-CTL-Request: t']);
      const ended = await curl(NOBODY, `${sup.base}/v0/cities`, ['-H', `Cookie: ${session}`]);
      expect(ended.status).to.equal(401);
      expect(detailOf(ended)).to.match(/^unauthorized: the browser session expired or ended/);
    });
  });

  describe('binding beyond loopback', function () {
    it('is refused at start without tokens, in one line', async function () {
      const result = await runSupervisor(['bind = "0.0.0.0"']);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.equal(
        'ctl supervisor run: refusing to listen on 0.0.0.0: no API tokens exist, so nobody off this machine could ' +
          'use it; start on 127.0.0.1 and run `ctl token create NAME` first',
      );
    });
  });

  describe('a controller run by hand (--listen PORT)', function () {
    let sup: TestSupervisor;
    let root: string;

    before(async function () {
      sup = await TestSupervisor.start();
      root = sup.root;
    });

    after(async function () {
      killAllMentioning(root);
      await sup?.cleanup();
    });

    it('applies the same peer rule as the supervisor', async function () {
      // A city the supervisor does not know, served only by this controller.
      const dir = sup.cityDir('hand');
      mkdirSync(dir);
      writeFileSync(join(dir, 'city.toml'), '[workspace]\nstart_command = "sleep 3600"\n');
      const port = await freePort();
      const controller = spawn(
        process.execPath,
        [ctlEntryPath(), 'controller', 'run', '--city', dir, '--listen', String(port)],
        {
          env: sup.env,
          stdio: 'ignore',
        },
      );
      try {
        await waitUntil(
          'the controller to answer',
          async () => (await curl(undefined, `http://127.0.0.1:${port}/v0/city/hand/beads`)).status === 200,
        );
        const refused = await curl(NOBODY, `http://127.0.0.1:${port}/v0/city/hand/beads`);
        expect(refused.status).to.equal(403);
        expect(detailOf(refused)).to.match(/^forbidden: local user nobody \(uid 65534\)/);
        const ws = await curl(NOBODY, `http://127.0.0.1:${port}/v0/city/hand/svc/web/ws`, WEBSOCKET);
        expect(ws.status).to.equal(403);
        const made = await curl(
          undefined,
          `http://127.0.0.1:${port}/v0/city/hand/beads`,
          POST_JSON({ title: 'by hand' }),
        );
        expect(made.status, made.body).to.equal(201);
        const events = await curl(undefined, `http://127.0.0.1:${port}/v0/city/hand/events?type=bead.created`);
        expect((JSON.parse(events.body) as { items: { actor: string }[] }).items[0].actor).to.equal(ME);
      } finally {
        controller.kill('SIGTERM');
        await once(controller, 'exit');
      }
    });
  });
});
