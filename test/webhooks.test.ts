import { createHmac, generateKeyPairSync, sign as ed25519Sign } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { CityApi, registerCity, type Envelope } from './helpers/city-api.js';
import { expectFailure, expectSuccess, runCtl } from './helpers/cli.js';
import { CSRF, TestSupervisor, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

const GH_SECRET = 'gh-secret-of-twenty-bytes';
const discord = generateKeyPairSync('ed25519');
const DISCORD_KEY = Buffer.from(discord.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('hex');
const sign = (body: string, secret = GH_SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('webhooks: [[webhook]] tables and redelivery dedupe', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let out: string;
  const root = tempDir('ctl-webhooks-');

  /** A delivery as GitHub makes it, on the webhook listener: no token, no X-CTL-Request. */
  const deliver = (name: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${sup.hooksBase!}/hooks/hooks/${name}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body,
    });
  const github = (name: string, body: string, delivery: string, event = 'pull_request') =>
    deliver(name, body, { 'X-Hub-Signature-256': sign(body), 'X-GitHub-Event': event, 'X-GitHub-Delivery': delivery });
  const events = async (type: string, subject: string): Promise<Envelope[]> =>
    (await api.events(type)).filter((e) => e.subject === subject);
  const lines = (file: string) => {
    try {
      return readFileSync(join(out, file), 'utf8').trim().split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };

  before(async function () {
    out = join(root, 'out');
    mkdirSync(out);
    sup = await TestSupervisor.start({
      env: { GH_SECRET, ORDER_SECRET: GH_SECRET, HOOK_TOKEN: 'token-of-the-sender', DISCORD_KEY },
      webhookListener: true,
    });
    const dir = sup.cityDir('hooks');
    mkdirSync(join(dir, 'orders'), { recursive: true });
    writeFileSync(
      join(dir, 'orders', 'review.toml'),
      `[order]\ntrigger = "webhook"\nidempotent = true\nexec = "echo \\"$CTL_ORDER_ARG_PR $CTL_ORDER_ARG_REF\\" >> ${out}/review"\n`,
    );
    writeFileSync(
      join(dir, 'orders', 'deploy.toml'),
      `[order]\ntrigger = "webhook"\nidempotent = true\nsecret_env = "ORDER_SECRET"\nexec = "echo fired >> ${out}/deploy"\n`,
    );
    // Runs until the controller ends: its firing is cut off by the SIGKILL of a test.
    for (const name of ['slow', 'halted']) {
      writeFileSync(
        join(dir, 'orders', `${name}.toml`),
        `[order]\ntrigger = "webhook"\nsecret_env = "ORDER_SECRET"\ntimeout = "5m"\nexec = "echo started >> ${out}/${name}; sleep 600"\n`,
      );
    }
    const hook = (name: string, extra: string) =>
      [
        '[[webhook]]',
        `name = "${name}"`,
        extra,
        '[webhook.verify]',
        'scheme = "github-hmac-sha256"',
        'secret_env = "GH_SECRET"',
        ...(name === 'fenced' ? ['allowed_cidrs = ["192.0.2.0/24"]'] : []),
        ...(name === 'tokened' ? ['bearer_env = "HOOK_TOKEN"'] : []),
        '[[webhook.rule]]',
        'event = "pull_request"',
        'order = "review"',
        'match = { action = "opened" }',
        'args = { pr = "{{number}}", ref = "{{pull_request.head.ref}}" }',
      ].join('\n');
    writeFileSync(
      join(dir, 'city.toml'),
      [
        '[workspace]',
        'provider = "echo"',
        hook('gh', ''),
        hook('limited', 'max_per_minute = 1'),
        hook('guarded', 'max_per_minute = 2'),
        hook('fenced', ''),
        hook('tokened', ''),
        '[[webhook]]\nname = "discord"\nverify = { scheme = "discord-ed25519", secret_env = "DISCORD_KEY" }',
        '[[webhook.rule]]\nevent = "application_command"\norder = "review"',
        '[[webhook]]\nname = "broken"\nverify = { scheme = "md5" }',
        '[[webhook]]\nname = "stray"\nverify = { scheme = "hmac-sha256", secret_env = "GH_SECRET", signature_header = "X-Sig" }',
        '[[webhook.rule]]\nevent = "*"\norder = "nowhere"',
        '',
      ].join('\n'),
    );
    api = await registerCity(sup, 'hooks');
  });
  after(async () => {
    await sup?.cleanup();
    rmSync(root, { recursive: true, force: true });
  });

  it('a rule fires its order with its args; a redelivery is a 200 duplicate that fires nothing, also after a controller restart', async function () {
    const body = JSON.stringify({ action: 'opened', number: 7, pull_request: { head: { ref: 'feat' } } });
    const first = await github('gh', body, 'gh-1');
    expect(first.status, await first.clone().text()).to.equal(202);
    const fired = (await first.json()) as { tracking_id: string; matched: boolean; dedup_id: string };
    expect(fired).to.include({
      status: 'dispatched',
      scoped_name: 'review',
      matched: true,
      deduped: false,
      dedup_id: 'gh-1',
    });
    await waitUntil('the order to run', async () => lines('review').length === 1);
    expect(lines('review')).to.deep.equal(['7 feat']);

    const again = await github('gh', body, 'gh-1');
    expect(again.status).to.equal(200);
    expect(await again.json()).to.deep.equal({
      status: 'duplicate',
      deduped: true,
      matched: true,
      scoped_name: 'review',
      dedup_id: 'gh-1',
      tracking_id: fired.tracking_id,
    });
    // The same signed body under a fresh delivery id is a replay, not a new delivery.
    expect((await github('gh', body, 'gh-forged')).status).to.equal(200);

    const pid = (await sup.city('hooks'))!.pid!;
    process.kill(pid, 'SIGKILL');
    await waitUntil(
      'the controller to be restarted',
      async () => {
        const city = await sup.city('hooks');
        return city?.running && city.pid !== pid ? true : undefined;
      },
      30_000,
    );
    const afterRestart = await github('gh', body, 'gh-1');
    expect(afterRestart.status, await afterRestart.clone().text()).to.equal(200);
    expect(((await afterRestart.json()) as { tracking_id: string }).tracking_id).to.equal(fired.tracking_id);

    const received = await waitUntil('four webhook.received', async () => {
      const seen = await events('webhook.received', 'gh');
      return seen.length === 4 ? seen : undefined;
    });
    expect(received.map((e) => (e.payload as { deduped: boolean }).deduped)).to.deep.equal([false, true, true, true]);
    expect(received[1].payload).to.include({
      webhook: 'gh',
      scheme: 'github-hmac-sha256',
      event_type: 'pull_request',
      dedup_id: 'gh-1',
      deduped: true,
      dispatched: false,
      matched: true,
      rule_index: 0,
      tracking_id: fired.tracking_id,
    });
    expect(await events('order.fired', 'review')).to.have.length(1);
    expect(lines('review')).to.have.length(1);
  });

  it('forged deliveries draw nothing from the rate bucket: the real sender’s next one is accepted', async function () {
    for (let i = 0; i < 5; i++) {
      const body = JSON.stringify({ action: 'opened', number: 100 + i });
      const forged = await deliver('guarded', body, {
        'X-Hub-Signature-256': sign(body, 'a-guessed-secret-guessed'),
        'X-GitHub-Event': 'pull_request',
        'X-GitHub-Delivery': `forged-${i}`,
      });
      expect(forged.status).to.equal(401);
    }
    // max_per_minute = 2: a burst of 2, which the authentic ones draw from.
    const signed = await github('guarded', JSON.stringify({ action: 'opened', number: 200 }), 'g-1');
    expect(signed.status, await signed.clone().text()).to.equal(202);
    expect((await github('guarded', JSON.stringify({ action: 'opened', number: 201 }), 'g-2')).status).to.equal(202);
    const third = await github('guarded', JSON.stringify({ action: 'opened', number: 202 }), 'g-3');
    expect(third.status, 'the authentic ones still meet the limit').to.equal(429);
  });

  it('a delivery whose firing the controller’s death cut off is fired again by its redelivery, once', async function () {
    const body = JSON.stringify({ job: 'long' });
    const headers = { 'X-Hub-Signature-256': sign(body), 'X-CTL-Delivery': 'slow-1' };
    const first = await deliver('slow', body, headers);
    expect(first.status, await first.clone().text()).to.equal(202);
    const cut = ((await first.json()) as { tracking_id: string }).tracking_id;
    await waitUntil('the order to run', async () => lines('slow').length === 1);

    const pid = (await sup.city('hooks'))!.pid!;
    process.kill(pid, 'SIGKILL');
    await waitUntil(
      'the controller to be restarted',
      async () => {
        const city = await sup.city('hooks');
        return city?.running && city.pid !== pid ? true : undefined;
      },
      30_000,
    );
    const failed = await waitUntil('the cut-off firing closed as failed', async () => {
      const seen = await events('order.failed', 'slow');
      return seen.length === 1 ? seen[0] : undefined;
    });
    expect(failed.payload).to.include({ tracking_id: cut });

    const again = await deliver('slow', body, headers);
    expect(again.status, await again.clone().text()).to.equal(202);
    const refired = ((await again.json()) as { tracking_id: string }).tracking_id;
    expect(refired).to.not.equal(cut);
    await waitUntil('the order to run again', async () => lines('slow').length === 2);
    const third = await deliver('slow', body, headers);
    expect(third.status).to.equal(200);
    expect(await third.json()).to.include({ status: 'duplicate', tracking_id: refired });
    expect(await events('order.fired', 'slow')).to.have.length(2);
  });

  it('a delivery whose firing a stop of the city cut off is fired again by its redelivery, once', async function () {
    const body = JSON.stringify({ job: 'halted' });
    const headers = { 'X-Hub-Signature-256': sign(body), 'X-CTL-Delivery': 'halted-1' };
    const first = await deliver('halted', body, headers);
    expect(first.status, await first.clone().text()).to.equal(202);
    await waitUntil('the order to run', async () => lines('halted').length === 1);
    const stop = await fetch(`${sup.base}/v0/city/hooks/stop`, { method: 'POST', headers: CSRF });
    expect(stop.status).to.be.oneOf([200, 202]);
    await waitUntil('the city to stop', async () => (await sup.city('hooks'))?.running === false, 30_000);
    const start = await fetch(`${sup.base}/v0/city/hooks/start`, { method: 'POST', headers: CSRF });
    expect(start.status).to.be.oneOf([200, 202]);
    await waitUntil('the city to run again', async () => (await sup.city('hooks'))?.running === true, 30_000);
    await waitUntil('the cut-off firing closed as failed', async () => {
      const failed = await events('order.failed', 'halted');
      return failed.length === 1 ? true : undefined;
    });

    const again = await deliver('halted', body, headers);
    expect(again.status, await again.clone().text()).to.equal(202);
    await waitUntil('the order to run again', async () => lines('halted').length === 2);
    const third = await deliver('halted', body, headers);
    expect(third.status).to.equal(200);
    expect(await third.json()).to.include({ status: 'duplicate' });
    expect(await events('order.fired', 'halted')).to.have.length(2);
  });

  it('an authentic delivery no rule matches is a 200 that fires nothing', async function () {
    const body = JSON.stringify({ action: 'closed', number: 8 });
    const res = await github('gh', body, 'gh-2');
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ status: 'ok', matched: false, deduped: false, dedup_id: 'gh-2' });
  });

  it('a signed Discord PING is answered PONG and fires nothing; a forged one is refused', async function () {
    const body = '{"type":1}';
    const ts = String(Math.floor(Date.now() / 1000));
    const signature = ed25519Sign(null, Buffer.from(ts + body), discord.privateKey).toString('hex');
    const ping = await deliver('discord', body, { 'X-Signature-Ed25519': signature, 'X-Signature-Timestamp': ts });
    expect(ping.status).to.equal(200);
    expect(await ping.json()).to.deep.equal({ type: 1 });
    const forged = await deliver('discord', body, {
      'X-Signature-Ed25519': signature.replace(/^./, (c) => (c === '0' ? '1' : '0')),
      'X-Signature-Timestamp': ts,
    });
    expect(forged.status).to.equal(401);
    expect(await events('webhook.received', 'discord')).to.have.length(0);
  });

  it('a webhook order’s redelivery is a duplicate too: by X-GitHub-Delivery, or by its body when it has none', async function () {
    const body = JSON.stringify({ ref: 'main' });
    const headers = { 'X-Hub-Signature-256': sign(body) };
    expect((await deliver('deploy', body, headers)).status).to.equal(202);
    const dup = await deliver('deploy', body, headers);
    expect(dup.status).to.equal(200);
    expect(await dup.json()).to.include({ status: 'duplicate', deduped: true });
    await waitUntil('the order to run', async () => lines('deploy').length === 1);
    expect(await events('order.fired', 'deploy')).to.have.length(1);
  });

  it('refuses a bad signature (401), a source outside allowed_cidrs (403) and past the rate limit (429), as problems, recorded', async function () {
    const body = JSON.stringify({ action: 'opened', number: 9 });
    const bad = await deliver('gh', body, {
      'X-Hub-Signature-256': sign(body, 'guessed-secret-guessed'),
      'X-GitHub-Event': 'pull_request',
    });
    expect(bad.status).to.equal(401);
    expect(bad.headers.get('content-type')).to.contain('application/problem+json');
    expect(await bad.json()).to.include({
      code: 'webhook-rejected',
      detail: 'unauthorized: webhook gh: X-Hub-Signature-256 does not match',
    });

    // The address is the connection's: one the sender writes in the supervisor's header is replaced.
    const fenced = await deliver('fenced', body, {
      'X-Hub-Signature-256': sign(body),
      'X-GitHub-Event': 'pull_request',
      'X-CTL-Webhook-Peer': '192.0.2.5',
    });
    expect(fenced.status).to.equal(403);
    expect(((await fenced.json()) as { detail: string }).detail).to.match(
      /^forbidden: webhook fenced takes no deliveries from (127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/,
    );

    expect((await github('limited', body, 'l-1')).status).to.equal(202);
    const limited = await github('limited', JSON.stringify({ action: 'opened', number: 10 }), 'l-2');
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    expect(await limited.json()).to.include({ code: 'webhook-rejected', status: 429 });

    const untokened = await github('tokened', body, 't-1');
    expect(untokened.status).to.equal(401);
    expect(await untokened.json()).to.include({
      detail: 'unauthorized: webhook tokened: the bearer token is missing or wrong',
    });
    const tokened = await deliver('tokened', body, {
      'X-Hub-Signature-256': sign(body),
      'X-GitHub-Event': 'pull_request',
      Authorization: 'Bearer token-of-the-sender',
    });
    expect(tokened.status, await tokened.clone().text()).to.equal(202);

    const reasons = async (hook: string) =>
      (await events('webhook.rejected', hook)).map((e) => (e.payload as { reason: string; status: number }).reason);
    await waitUntil('the rejections recorded', async () => (await reasons('limited')).length === 1);
    expect(await reasons('gh')).to.deep.equal(['bad_signature']);
    expect(await reasons('fenced')).to.deep.equal(['forbidden_source']);
    expect(await reasons('limited')).to.deep.equal(['rate_limited']);
    expect(await reasons('tokened')).to.deep.equal(['bad_bearer']);
  });

  it('lists the webhooks it takes deliveries for, secrets named and never shown', async function () {
    const list = await api.get<{
      webhooks: { name: string; rate_limit: object; rules: object[]; secret_env: string }[];
    }>('/webhooks');
    expect(list.status).to.equal(200);
    expect(list.body.webhooks.map((w) => w.name)).to.deep.equal([
      'gh',
      'limited',
      'guarded',
      'fenced',
      'tokened',
      'discord',
      'stray',
    ]);
    expect(list.body.webhooks[1]).to.deep.include({
      path: '/hooks/hooks/limited',
      scheme: 'github-hmac-sha256',
      secret_env: 'GH_SECRET',
      rate_limit: { per_minute: 1, burst: 1 },
      allowed_cidrs: [],
    });
    expect(list.body.webhooks[0].rules).to.deep.equal([
      {
        event: 'pull_request',
        match: { action: 'opened' },
        order: 'review',
        args: { pr: '{{number}}', ref: '{{pull_request.head.ref}}' },
      },
    ]);
    expect(JSON.stringify(list.body)).to.not.contain(GH_SECRET);
  });

  it('ctl webhook list and show say the same; an unknown name is one line and exit 1', async function () {
    const ctl = async (...args: string[]) => runCtl([...args, '--city', 'hooks'], { env: sup.env });
    const listed = expectSuccess(await ctl('webhook', 'list'));
    expect(listed[0]).to.match(/^NAME\s+PATH\s+SCHEME\s+RULES\s+LIMIT$/);
    expect(listed.slice(1).map((l) => l.split(/\s+/)[0])).to.deep.equal([
      'gh',
      'limited',
      'guarded',
      'fenced',
      'tokened',
      'discord',
      'stray',
    ]);
    expect(listed[2]).to.match(/^limited\s+\/hooks\/hooks\/limited\s+github-hmac-sha256\s+1\s+1\/min \(burst 1\)$/);
    const shown = expectSuccess(await ctl('webhook', 'show', 'fenced')).join('\n');
    expect(shown).to.include('Webhook fenced: POST /hooks/hooks/fenced (on the webhook listener)');
    expect(shown).to.include('Verified:  github-hmac-sha256, secret in GH_SECRET');
    expect(shown).to.include('Sources:   192.0.2.0/24');
    expect(shown).to.include('0. pull_request where action=opened → review');
    expect(shown).to.not.include(GH_SECRET);
    const asJson = JSON.parse(expectSuccess(await ctl('webhook', 'show', 'gh', '--json')).join('\n')) as object;
    expect(asJson).to.deep.include({ name: 'gh', path: '/hooks/hooks/gh' });
    expectFailure(
      await ctl('webhook', 'show', 'nope'),
      'webhook show',
      /^no webhook named nope in hooks \(it has gh, /,
    );
  });

  it('a broken [[webhook]] is named by validate with its key, and takes nothing; the others take deliveries', async function () {
    type Issue = { file: string; key?: string; message: string };
    const validate = await api.get<{ errors: Issue[]; warnings: Issue[] }>('/config/validate');
    const broken = validate.body.errors.filter((e) => e.key?.startsWith('webhook['));
    expect(broken).to.have.length(1);
    expect(broken[0]).to.include({ file: 'city.toml', key: 'webhook[6].verify.scheme' });
    expect(broken[0].message).to.contain('"md5" is not a scheme; one of github-hmac-sha256');
    expect(validate.body.warnings.filter((w) => w.key?.startsWith('webhook['))).to.deep.equal([
      {
        file: 'city.toml',
        key: 'webhook[7].rule[0].order',
        message: 'webhook stray: the city has no order nowhere: deliveries this rule matches are refused (422)',
      },
    ]);
    const res = await deliver('broken', '{}');
    expect(res.status).to.equal(404);
  });
});
