import { userInfo } from 'node:os';
import { expect } from 'chai';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { CSRF, freePort, TestSupervisor } from './helpers/supervisor.js';

// `GET /v0/whoami` and `ctl whoami`: who the supervisor takes a request for — the local user, a token, a browser
// session made from either — named as events and comments record their author (the dashboard offers deleting a
// comment only to its author by this). Issue 23.

const ME = userInfo().username;

describe('who the request is from (GET /v0/whoami, ctl whoami)', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  /** A read-only token that expires, created through the CLI. */
  let readOnly: { token: string; expires_at: string };

  before(async () => {
    sup = await TestSupervisor.start();
    const created = await sup.ctl(['token', 'create', 'watcher', '--read-only', '--expires', '30d', '--json']);
    expect(created.code, created.stderr).to.equal(0);
    readOnly = JSON.parse(created.stdout) as typeof readOnly;
  });

  after(async () => {
    await sup?.cleanup();
  });

  const whoami = (headers: Record<string, string> = {}) => fetch(`${sup.base}/v0/whoami`, { headers });

  it('names the local user, as events record them', async () => {
    const res = await whoami();
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(await res.json()).to.deep.equal({
      actor: ME,
      kind: 'user',
      name: ME,
      read_only: false,
      browser_session: false,
    });
    expect(expectSuccess(await sup.ctl(['whoami']))).to.deep.equal([ME]);
    // The actor is the one the supervisor's log records for this caller's changes.
    const events = (await (await fetch(`${sup.base}/v0/events?type=token.created`)).json()) as {
      items: { actor: string }[];
    };
    expect(events.items.map((e) => e.actor)).to.deep.equal([ME]);
  });

  it('names a token as token:NAME, read-only and until when', async () => {
    const res = await whoami({ Authorization: `Bearer ${readOnly.token}` });
    expect(await res.json()).to.deep.equal({
      actor: 'token:watcher',
      kind: 'token',
      name: 'watcher',
      read_only: true,
      browser_session: false,
      expires_at: readOnly.expires_at,
    });
    const env = { CTL_TOKEN: readOnly.token };
    expect(expectSuccess(await sup.ctl(['whoami'], { env }))).to.deep.equal([
      `token:watcher (read-only, expires ${readOnly.expires_at})`,
    ]);
    const json = expectSuccess(await sup.ctl(['whoami', '--json'], { env }));
    expect(JSON.parse(json.join('\n'))).to.include({ actor: 'token:watcher', read_only: true });
  });

  it('says a browser session stands for the caller that made its link', async () => {
    const minted = await fetch(`${sup.base}/v0/auth/codes`, {
      method: 'POST',
      headers: { ...CSRF, Authorization: `Bearer ${readOnly.token}` },
    });
    expect(minted.status).to.equal(201);
    const { url } = (await minted.json()) as { url: string };
    const exchanged = await fetch(`${sup.base}${url}`, { redirect: 'manual' });
    expect(exchanged.status).to.equal(303);
    const cookie = exchanged.headers.get('set-cookie')!.split(';')[0];
    expect(await (await whoami({ Cookie: cookie })).json()).to.deep.include({
      actor: 'token:watcher',
      browser_session: true,
    });
  });

  it('refuses a bad credential with the gate’s problem, and the CLI says it in one line', async () => {
    const malformed = await whoami({ Authorization: 'Basic YW5uOnNlY3JldA==' });
    expect(malformed.status).to.equal(401);
    expect(malformed.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(malformed.headers.get('www-authenticate')).to.match(/^Bearer/);
    expect(((await malformed.json()) as { detail: string }).detail).to.match(/Bearer <token>/);
    const unknown = await whoami({ Authorization: 'Bearer ctl_not-a-token-we-made' });
    expect(unknown.status).to.equal(401);
    expectFailure(await sup.ctl(['whoami'], { env: { CTL_TOKEN: 'ctl_not-a-token-we-made' } }), 'whoami', /token/);
    // A revoked token is refused from then on.
    const revoked = await sup.ctl(['token', 'create', 'gone', '--json']);
    const { token } = JSON.parse(revoked.stdout) as { token: string };
    expectSuccess(await sup.ctl(['token', 'revoke', 'gone']));
    expect((await whoami({ Authorization: `Bearer ${token}` })).status).to.equal(401);
  });

  it('refuses words it does not take, and says when no supervisor answers', async () => {
    expectFailure(await sup.ctl(['whoami', 'ann']), 'whoami');
    expectFailure(await sup.ctl(['whoami', '--user', 'ann']), 'whoami', /--user/);
    const nobody = `http://127.0.0.1:${await freePort()}`;
    expectFailure(await sup.ctl(['whoami', '--api', nobody]), 'whoami', /supervisor|connect|refused/i);
  });
});
