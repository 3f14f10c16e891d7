// What a remote session's credential may do (controller/hosts/session-scope.ts), request by request, and the
// credentials themselves (session-credentials.ts): minted per session, checked by hash, revoked with it.
import { expect } from 'chai';
import { Problem } from '../../shared/http/problem.js';
import { SessionCredentials } from '../../controller/hosts/session-credentials.js';
import {
  checkBody,
  namesOf,
  sessionScope,
  type ScopeVerdict,
  type SessionGrant,
} from '../../controller/hosts/session-scope.js';

const GRANT: SessionGrant = {
  city: 'alpha',
  host: 'box1',
  sessionId: 'alp-7',
  sessionName: 'worker-1',
  actor: 'worker',
};

type Row = [method: string, target: string, expected: ScopeVerdict | 'refuse'];

const ROWS: Row[] = [
  // Answered by the gateway itself, for its session and city.
  ['GET', '/v0/whoami', { kind: 'answer', what: 'whoami' }],
  ['GET', '/v0/cities?limit=100', { kind: 'answer', what: 'cities' }],
  ['HEAD', '/v0/cities', { kind: 'answer', what: 'cities' }],
  // Reads of its own city, streams included.
  ['GET', '/v0/city/alpha', { kind: 'forward' }],
  ['GET', '/v0/city/alpha/beads?status=open', { kind: 'forward' }],
  ['GET', '/v0/city/alpha/bead/alp-1', { kind: 'forward' }],
  ['GET', '/v0/city/alpha/session/alp-9/transcript', { kind: 'forward' }],
  ['GET', '/v0/city/alpha/events/stream', { kind: 'forward' }],
  ['HEAD', '/v0/city/alpha/status', { kind: 'forward' }],
  ['GET', '/v0/city/alp%68a/status', { kind: 'forward' }],
  // Its own work.
  ['POST', '/v0/city/alpha/session/alp-7/hook', { kind: 'forward' }],
  ['POST', '/v0/city/alpha/session/worker-1/hook', { kind: 'forward' }],
  ['POST', '/v0/city/alpha/session/alp-7/wait', { kind: 'forward' }],
  ['POST', '/v0/city/alpha/wait/alp-30/cancel', { kind: 'forward', owns: { wait: 'alp-30' } }],
  ['POST', '/v0/city/alpha/wait/alp-30/ready', { kind: 'forward', owns: { wait: 'alp-30' } }],
  ['POST', '/v0/city/alpha/bead/alp-1/close', { kind: 'forward', owns: { bead: 'alp-1' }, body: 'session' }],
  ['POST', '/v0/city/alpha/bead/alp-1/comments', { kind: 'forward', owns: { bead: 'alp-1' }, body: 'session' }],
  ['DELETE', '/v0/city/alpha/bead/alp-1/comments/3?session=alp-7', { kind: 'forward', owns: { bead: 'alp-1' } }],
  ['PATCH', '/v0/city/alpha/bead/alp-1', { kind: 'forward', owns: { bead: 'alp-1' } }],
  ['POST', '/v0/city/alpha/bead/alp%2D1/update', { kind: 'forward', owns: { bead: 'alp-1' } }],
  ['POST', '/v0/city/alpha/mail', { kind: 'forward', body: 'sender' }],
  ['POST', '/v0/city/alpha/mail/alp-5/read', { kind: 'forward', owns: { mail: 'alp-5' } }],
  ['POST', '/v0/city/alpha/mail/alp-5/mark-unread', { kind: 'forward', owns: { mail: 'alp-5' } }],
  ['POST', '/v0/city/alpha/mail/alp-5/archive', { kind: 'forward', owns: { mail: 'alp-5' } }],
  ['POST', '/v0/city/alpha/mail/alp-5/reply', { kind: 'forward', owns: { mail: 'alp-5' }, body: 'sender' }],
  ['DELETE', '/v0/city/alpha/mail/alp-5', { kind: 'forward', owns: { mail: 'alp-5' } }],
  // Another session's work, or itself as another.
  ['POST', '/v0/city/alpha/session/alp-9/hook', 'refuse'],
  ['POST', '/v0/city/alpha/session/alp-9/wait', 'refuse'],
  ['DELETE', '/v0/city/alpha/bead/alp-1/comments/3?session=alp-9', 'refuse'],
  // Its own session's lifecycle and the person's answers.
  ['POST', '/v0/city/alpha/session/alp-7/respond', 'refuse'],
  ['POST', '/v0/city/alpha/session/alp-7/close', 'refuse'],
  ['POST', '/v0/city/alpha/session/alp-7/messages', 'refuse'],
  ['PATCH', '/v0/city/alpha/session/alp-7', 'refuse'],
  ['POST', '/v0/city/alpha/session/alp-7/permission-mode', 'refuse'],
  // Work it does not route, and the city's configuration.
  ['POST', '/v0/city/alpha/beads', 'refuse'],
  ['POST', '/v0/city/alpha/sling', 'refuse'],
  ['POST', '/v0/city/alpha/sessions', 'refuse'],
  ['DELETE', '/v0/city/alpha/bead/alp-1', 'refuse'],
  ['POST', '/v0/city/alpha/bead/alp-1/assign', 'refuse'],
  ['POST', '/v0/city/alpha/bead/alp-1/reopen', 'refuse'],
  ['POST', '/v0/city/alpha/events', 'refuse'],
  ['PATCH', '/v0/city/alpha', 'refuse'],
  ['POST', '/v0/city/alpha/agent/worker/suspend', 'refuse'],
  ['POST', '/v0/city/alpha/svc/web/x', 'refuse'],
  ['POST', '/v0/city/alpha/formulas/x/cook', 'refuse'],
  // Supervisor operations.
  ['POST', '/v0/city/alpha/stop', 'refuse'],
  ['POST', '/v0/city/alpha/start', 'refuse'],
  ['POST', '/v0/city/alpha/unregister', 'refuse'],
  ['POST', '/v0/city', 'refuse'],
  ['POST', '/v0/cities/register', 'refuse'],
  ['GET', '/v0/tokens', 'refuse'],
  ['POST', '/v0/tokens', 'refuse'],
  ['DELETE', '/v0/tokens/ci', 'refuse'],
  ['POST', '/v0/auth/codes', 'refuse'],
  ['GET', '/v0/auth/exchange?code=x', 'refuse'],
  ['GET', '/v0/events/stream', 'refuse'],
  ['GET', '/v0/doctor', 'refuse'],
  ['GET', '/health', 'refuse'],
  ['POST', '/v0/whoami', 'refuse'],
  // Other cities, however spelled.
  ['GET', '/v0/city/beta/status', 'refuse'],
  ['POST', '/v0/city/beta/bead/alp-1/close', 'refuse'],
  ['GET', '/v0/city/alpha2/status', 'refuse'],
  ['GET', '/v0/city//status', 'refuse'],
  ['GET', '/v0/city/alpha/../beta/status', 'refuse'],
  ['GET', '/v0/city/alpha/%2e%2e/beta/status', 'refuse'],
  ['GET', '/v0/city/alpha/bead/..%2f..%2ftokens', 'refuse'],
];

describe('session scope', function () {
  for (const [method, target, expected] of ROWS) {
    it(`${method} ${target}: ${expected === 'refuse' ? 'refused' : expected.kind}`, function () {
      const verdict = sessionScope(GRANT, method, target);
      if (expected === 'refuse') {
        expect(verdict.kind).to.equal('refuse');
        expect((verdict as { detail: string }).detail).to.match(/^forbidden: session worker-1 \(alp-7\) /);
      } else {
        expect(verdict).to.deep.equal(expected);
      }
    });
  }

  it('names the city it may use when refusing another', function () {
    const verdict = sessionScope(GRANT, 'GET', '/v0/city/beta/status');
    expect(verdict).to.deep.equal({
      kind: 'refuse',
      detail: 'forbidden: session worker-1 (alp-7) may use only its city alpha, not city beta',
    });
  });

  it('answers malformed percent-encoding as a 400 problem', function () {
    expect(() => sessionScope(GRANT, 'GET', '/v0/city/%zz/status'))
      .to.throw(Problem)
      .with.property('status', 400);
  });

  describe('bodies', function () {
    const rows: [rule: 'session' | 'sender', body: string, expected: string | { refused: RegExp }][] = [
      ['session', '{"reason":"done"}', '{"reason":"done"}'],
      ['session', '{"session":"alp-7","reason":"done"}', '{"session":"alp-7","reason":"done"}'],
      ['session', '{"session":"worker-1"}', '{"session":"worker-1"}'],
      ['session', '{"session":"alp-9"}', { refused: /not as session "alp-9"/ }],
      ['session', '{"session":{"id":"alp-7"}}', { refused: /not as session/ }],
      ['session', 'not json', 'not json'],
      ['sender', '{"to":"human","subject":"s"}', '{"to":"human","subject":"s","from":"worker"}'],
      ['sender', '{"to":"human","from":"worker-1"}', '{"to":"human","from":"worker-1"}'],
      ['sender', '{"to":"human","from":"alp-7"}', '{"to":"human","from":"alp-7"}'],
      ['sender', '{"to":"human","from":"human"}', { refused: /may send mail only as worker or worker-1 or alp-7/ }],
      ['sender', '{"to":"human","from":7}', { refused: /may send mail only as/ }],
      ['sender', '', '{"from":"worker"}'],
      ['sender', '[1]', '[1]'],
    ];
    for (const [rule, body, expected] of rows) {
      it(`${rule} ${body || '(empty)'}`, function () {
        const checked = checkBody(GRANT, rule, body);
        if (typeof expected === 'string') expect(checked).to.deep.equal({ ok: true, text: expected });
        else {
          expect(checked.ok).to.equal(false);
          expect((checked as { detail: string }).detail).to.match(expected.refused);
        }
      });
    }

    it("a session's names are its agent, its name and its id, once each", function () {
      expect(namesOf(GRANT)).to.deep.equal(['worker', 'worker-1', 'alp-7']);
      expect(namesOf({ ...GRANT, actor: 'worker-1' })).to.deep.equal(['worker-1', 'alp-7']);
    });
  });
});

describe('session credentials', function () {
  it('mints a ctls_ secret that stands for its session', function () {
    const credentials = new SessionCredentials();
    const secret = credentials.mint(GRANT);
    expect(secret).to.match(/^ctls_[A-Za-z0-9_-]{43}$/);
    expect(credentials.check(secret)).to.deep.equal(GRANT);
    expect(credentials.has('alp-7')).to.equal(true);
  });

  it('refuses a malformed, unknown or revoked secret with a 401 and a Bearer challenge', function () {
    const credentials = new SessionCredentials();
    const secret = credentials.mint(GRANT);
    const refusal = (s: string) => {
      try {
        credentials.check(s);
      } catch (err) {
        return err as Problem;
      }
      throw new Error(`${s} was accepted`);
    };
    for (const bad of ['', 'ctl_' + 'a'.repeat(43), 'ctls_short', `${secret}x`]) {
      const p = refusal(bad);
      expect(p.status).to.equal(401);
      expect(p.detail).to.match(/^unauthorized: malformed session credential/);
      expect(p.headers?.['WWW-Authenticate']).to.match(/^Bearer realm="ctl", error="invalid_token"/);
    }
    expect(refusal('ctls_' + 'a'.repeat(43)).detail).to.match(/^unauthorized: unknown or revoked/);
    expect(credentials.revoke('alp-7')).to.equal(true);
    expect(credentials.revoke('alp-7')).to.equal(false);
    expect(refusal(secret).detail).to.match(/^unauthorized: unknown or revoked/);
    expect(credentials.has('alp-7')).to.equal(false);
  });

  it('keeps one secret per session: minting again ends the old one', function () {
    const credentials = new SessionCredentials();
    const first = credentials.mint(GRANT);
    const second = credentials.mint(GRANT);
    expect(second).to.not.equal(first);
    expect(() => credentials.check(first)).to.throw(Problem);
    expect(credentials.check(second).sessionId).to.equal('alp-7');
  });

  it("revokes every session of a host, and only that host's", function () {
    const credentials = new SessionCredentials();
    const a = credentials.mint(GRANT);
    const b = credentials.mint({ ...GRANT, sessionId: 'alp-8', sessionName: 'worker-2' });
    const c = credentials.mint({ ...GRANT, sessionId: 'alp-9', sessionName: 'worker-3', host: 'box2' });
    expect(credentials.revokeHost('box1')).to.equal(2);
    expect(() => credentials.check(a)).to.throw(Problem);
    expect(() => credentials.check(b)).to.throw(Problem);
    expect(credentials.check(c).host).to.equal('box2');
  });

  it('tells its listeners of each credential that ends, revoked or replaced, until they stop listening', function () {
    const credentials = new SessionCredentials();
    const ended: string[] = [];
    const stop = credentials.onRevoke((id) => ended.push(id));
    credentials.mint(GRANT);
    credentials.mint(GRANT);
    credentials.revoke('alp-7');
    credentials.revoke('alp-7');
    expect(ended).to.deep.equal(['alp-7', 'alp-7']);
    stop();
    credentials.mint(GRANT);
    credentials.revoke('alp-7');
    expect(ended).to.have.length(2);
  });

  it('keeps a copy of the grant: changing what was minted from changes nothing', function () {
    const credentials = new SessionCredentials();
    const grant = { ...GRANT };
    const secret = credentials.mint(grant);
    grant.city = 'beta';
    expect(credentials.check(secret).city).to.equal('alpha');
  });
});
