// The pieces of "who may use the API", in process: the /proc/net/tcp address encoding, the account tables, the
// peer rule's verdicts, API tokens and browser sessions, and the actor an event records.
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { statSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { requestActor, recordedActor } from '../../shared/events/request-actor.js';
import { LocalAccounts } from '../../shared/http/local-accounts.js';
import { isLoopbackAddress, PeerAccess } from '../../shared/http/peer-access.js';
import { parseAddress, peerUid, socketTableReads, v4Hex, v6Hex } from '../../shared/http/peer-uid.js';
import { Problem } from '../../shared/http/problem.js';
import { ApiTokens } from '../../supervisor/api-tokens.js';
import { BrowserSessions, CODE_TTL_MS, cookieValue } from '../../supervisor/browser-sessions.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitUntil } from '../helpers/wait.js';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'alice:x:1000:1000::/home/alice:/bin/sh',
  'bob:x:1001:1001::/home/bob:/bin/sh',
  'carol:x:1002:1002::/home/carol:/bin/sh',
].join('\n');
const GROUP = ['root:x:0:', 'alice:x:1000:', 'bob:x:1001:', 'carol:x:1002:', 'builders:x:2000:carol,dave'].join('\n');

describe('access rules', function () {
  let dir: string;
  let accounts: LocalAccounts;

  beforeEach(function () {
    dir = tempDir();
    writeFileSync(join(dir, 'passwd'), PASSWD);
    writeFileSync(join(dir, 'group'), GROUP);
    accounts = new LocalAccounts({ passwd: join(dir, 'passwd'), group: join(dir, 'group') });
  });

  afterEach(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  describe('the kernel’s socket table encoding', function () {
    it('writes addresses as 32-bit words in the machine’s byte order, as /proc/net/tcp does', function () {
      expect(v4Hex(parseAddress('127.0.0.1')!.v4!)).to.equal('0100007F');
      expect(v6Hex(parseAddress('::1')!.bytes)).to.equal('00000000000000000000000001000000');
      expect(v6Hex(parseAddress('::ffff:127.0.0.1')!.bytes)).to.equal('0000000000000000FFFF00000100007F');
      expect(parseAddress('::ffff:127.0.0.1')!.v4).to.deep.equal([127, 0, 0, 1]);
      expect(parseAddress('not an address')).to.equal(undefined);
    });

    it('tells loopback peers from others', function () {
      for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'])
        expect(isLoopbackAddress(a), a).to.equal(true);
      for (const a of ['10.0.0.1', '::ffff:10.0.0.1', '::2', '128.0.0.1'])
        expect(isLoopbackAddress(a), a).to.equal(false);
    });

    it('finds the uid owning a live client socket, and refuses one no local socket owns', async function () {
      const seen: (number | string)[] = [];
      const server: Server = createServer((req, res) => {
        const s = req.socket;
        peerUid({
          localAddress: s.localAddress!,
          localPort: s.localPort!,
          remoteAddress: s.remoteAddress!,
          remotePort: s.remotePort!,
        })
          .then(
            (uid) => seen.push(uid),
            (err: Error) => seen.push(err.message),
          )
          .finally(() => res.end());
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const port = (server.address() as { port: number }).port;
        await (await fetch(`http://127.0.0.1:${port}/`)).text();
        expect(seen).to.deep.equal([process.getuid!()]);
        const ghost = await peerUid({
          localAddress: '127.0.0.1',
          localPort: port,
          remoteAddress: '127.0.0.1',
          remotePort: 1,
        }).then(
          () => 'found',
          (err: Error) => err.message,
        );
        expect(ghost).to.match(/^cannot identify the peer 127\.0\.0\.1:1: no local socket owns it$/);
      } finally {
        server.close();
      }
    });
  });

  describe('a burst of new connections', function () {
    it('answers each from shared reads of the socket table, not one read per connection', async function () {
      const sockets: Socket[] = [];
      const server: Server = createServer();
      server.on('connection', (socket) => sockets.push(socket));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const clients: Socket[] = [];
      try {
        const port = (server.address() as { port: number }).port;
        for (let i = 0; i < 40; i++) clients.push(connect(port, '127.0.0.1'));
        await Promise.all(clients.map((c) => new Promise((resolve) => c.once('connect', resolve))));
        await waitUntil('the server to accept every connection', () => sockets.length === 40);
        const before = socketTableReads();
        const uids = await Promise.all(
          sockets.map((s) =>
            peerUid({
              localAddress: s.localAddress!,
              localPort: s.localPort!,
              remoteAddress: s.remoteAddress!,
              remotePort: s.remotePort!,
            }),
          ),
        );
        expect(uids).to.deep.equal(sockets.map(() => process.getuid!()));
        // The first lookup reads the table; the 39 that came while it read share the next read.
        expect(socketTableReads() - before).to.be.at.most(2);
      } finally {
        for (const c of clients) c.destroy();
        server.close();
      }
    });
  });

  describe('accounts and the peer rule', function () {
    it('knows primary and supplementary groups', function () {
      expect(accounts.byUid(1002)).to.deep.equal({ uid: 1002, name: 'carol', gids: [1002, 2000] });
      expect(accounts.uidOf('bob')).to.equal(1001);
      expect(accounts.gidOf('builders')).to.equal(2000);
    });

    it('lets in our own uid, allow_users and members of allow_groups; refuses others with a 403 naming them', function () {
      const rule = new PeerAccess({ allowUsers: ['bob'], allowGroups: ['builders'] }, accounts, 1000);
      expect(rule.ownUser).to.equal('alice');
      expect(rule.verdictForUid(1000)).to.deep.include({ allowed: true, user: 'alice' });
      expect(rule.verdictForUid(1001)).to.deep.include({ allowed: true, user: 'bob' });
      expect(rule.verdictForUid(1002)).to.deep.include({ allowed: true, user: 'carol' });
      const refused = rule.verdictForUid(0);
      expect(refused.allowed).to.equal(false);
      const problem = (refused as { problem: Problem }).problem;
      expect(problem.status).to.equal(403);
      expect(problem.detail).to.match(/^forbidden: local user root \(uid 0\) may not use this API/);
    });

    it('refuses a peer it cannot identify, and one not on loopback, never letting it through', async function () {
      const rule = new PeerAccess({ allowUsers: [], allowGroups: [] }, accounts, process.getuid!());
      const fake = (remoteAddress: string) =>
        ({ localAddress: '127.0.0.1', localPort: 1, remoteAddress, remotePort: 2 }) as unknown as Socket;
      const gone = await rule.verdictOf(fake('127.0.0.1'));
      expect(gone.allowed).to.equal(false);
      expect((gone as { problem: Problem }).problem.detail).to.equal(
        'forbidden: cannot identify the peer 127.0.0.1:2: no local socket owns it',
      );
      const remote = await rule.verdictOf(fake('10.1.2.3'));
      expect((remote as { problem: Problem }).problem.detail).to.match(
        /^forbidden: a connection from 10\.1\.2\.3 is not on loopback/,
      );
    });

    it('refuses a name no account or group has, at construction', function () {
      expect(() => new PeerAccess({ allowUsers: ['zed-no-such'], allowGroups: [] }, accounts, 1000)).to.throw(
        'supervisor.allow_users: no such user: zed-no-such',
      );
      expect(() => new PeerAccess({ allowUsers: [], allowGroups: ['zed-no-such'] }, accounts, 1000)).to.throw(
        'supervisor.allow_groups: no such group: zed-no-such',
      );
    });
  });

  describe('API tokens', function () {
    it('keeps only hashes, in a 0600 file, and accepts the secret shown once', function () {
      const path = join(dir, 'tokens.json');
      const tokens = new ApiTokens(path);
      tokens.load();
      const made = tokens.create({ name: 'ci', read_only: true, expires_in: '30d' }, 'alice', 0);
      expect(made.token).to.match(/^ctl_[A-Za-z0-9_-]{43}$/);
      expect(made).to.include({ name: 'ci', read_only: true, expires_at: new Date(30 * 86_400_000).toISOString() });
      expect(statSync(path).mode & 0o777).to.equal(0o600);
      expect(readFileSync(path, 'utf8')).to.not.include(made.token);
      const again = new ApiTokens(path);
      again.load();
      expect(again.check(made.token, 1)).to.deep.equal({ name: 'ci', readOnly: true });
    });

    it('answers 401 with WWW-Authenticate for malformed, unknown, revoked and expired tokens', function () {
      const tokens = new ApiTokens(join(dir, 'tokens.json'));
      const made = tokens.create({ name: 'brief', expires_in: '1s' }, 'alice', 0);
      const problemOf = (f: () => unknown) => {
        try {
          f();
        } catch (err) {
          return err as Problem;
        }
        throw new Error('accepted');
      };
      expect(problemOf(() => tokens.check('ctl_short', 0)).detail).to.match(/^unauthorized: malformed token/);
      expect(problemOf(() => tokens.check(`ctl_${'x'.repeat(43)}`, 0)).detail).to.equal(
        'unauthorized: unknown or revoked token',
      );
      const expired = problemOf(() => tokens.check(made.token, 1000));
      expect(expired.status).to.equal(401);
      expect(expired.detail).to.equal('unauthorized: token brief expired at 1970-01-01T00:00:01.000Z');
      expect(expired.headers!['WWW-Authenticate']).to.match(/^Bearer realm="ctl", error="invalid_token"/);
      tokens.revoke('brief');
      expect(problemOf(() => tokens.check(made.token, 0)).detail).to.equal('unauthorized: unknown or revoked token');
      expect(problemOf(() => tokens.revoke('brief')).status).to.equal(404);
    });

    it('refuses a bad name, a taken name and a bad lifetime', function () {
      const tokens = new ApiTokens(join(dir, 'tokens.json'));
      tokens.create({ name: 'a' }, 'alice');
      expect(() => tokens.create({ name: 'a' }, 'alice')).to.throw('conflict: a token named a exists');
      expect(() => tokens.create({ name: '-x' }, 'alice')).to.throw(/invalid: token name/);
      expect(() => tokens.create({ name: 'b', expires_in: 'soon' }, 'alice')).to.throw(/invalid: expires_in/);
      expect(() => tokens.create({ name: 'b', expires_in: '0s' }, 'alice')).to.throw(/must be positive/);
    });

    it('refuses a tokens file it cannot read, naming it', function () {
      const path = join(dir, 'tokens.json');
      writeFileSync(path, '{"tokens": [{"name": 1}]}');
      expect(() => new ApiTokens(path).load()).to.throw(`${path}: expected`);
    });
  });

  describe('browser sessions', function () {
    it('spends a code once, within its minute, for a session standing for its caller', function () {
      const sessions = new BrowserSessions();
      const { code } = sessions.mint({ kind: 'token', name: 'ci', readOnly: true }, 0);
      const { session, maxAgeSec } = sessions.exchange(code, () => Infinity, 10);
      expect(maxAgeSec).to.equal(12 * 3600);
      expect(sessions.callerOf(session, 20)).to.deep.equal({ kind: 'token', name: 'ci', readOnly: true });
      expect(() => sessions.exchange(code, () => Infinity, 30)).to.throw('unknown, used or expired code');
      const late = sessions.mint({ kind: 'user', name: 'alice' }, 0);
      expect(() => sessions.exchange(late.code, () => Infinity, CODE_TTL_MS)).to.throw('unknown, used or expired code');
      sessions.endFor('ci');
      expect(sessions.callerOf(session, 40)).to.equal(undefined);
    });

    it('ends a session made from a token no later than the token', function () {
      const sessions = new BrowserSessions();
      const { code } = sessions.mint({ kind: 'token', name: 'ci', readOnly: false }, 0);
      const { session, maxAgeSec } = sessions.exchange(code, () => 5_000, 0);
      expect(maxAgeSec).to.equal(5);
      expect(sessions.callerOf(session, 5_000)).to.equal(undefined);
    });

    it('reads one cookie from a Cookie header', function () {
      expect(cookieValue('a=1; ctl_session=abc; b=2', 'ctl_session')).to.equal('abc');
      expect(cookieValue('xctl_session=abc', 'ctl_session')).to.equal(undefined);
      expect(cookieValue(undefined, 'ctl_session')).to.equal(undefined);
    });
  });

  describe('the recorded actor', function () {
    it('names the requester for an event the API causes, and keeps any better actor', function () {
      expect(recordedActor('api')).to.equal('api');
      requestActor.run({ actor: 'alice', live: true }, () => {
        expect(recordedActor('api')).to.equal('alice');
        expect(recordedActor('ctl')).to.equal('alice');
        expect(recordedActor('mayor')).to.equal('mayor');
      });
    });

    it('leaves the system’s own events to it once the mutation is answered, and for reads', function () {
      requestActor.run({ actor: 'alice', live: false }, () => {
        expect(recordedActor('ctl')).to.equal('ctl');
        expect(recordedActor('api')).to.equal('alice');
      });
    });
  });
});
