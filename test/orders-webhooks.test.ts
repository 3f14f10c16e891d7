import { createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { CityApi, registerCity, expectProblem, type Envelope } from './helpers/city-api.js';
import { TestSupervisor, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

const SECRET = 'it-is-a-secret';
const sign = (body: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('orders: webhooks and rig instances', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let dir: string;
  let out: string;
  let web: string;
  const root = tempDir('ctl-order-hooks-');

  const writeOrder = (folder: string, name: string, body: string) => {
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `${name}.toml`), `[order]\n${body}\n`);
  };
  /** A delivery as a sender on another machine makes it, on the webhook listener: no token, no X-CTL-Request. */
  const deliver = (name: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${sup.hooksBase!}/hooks/hooks/${name}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'token from-the-sender', ...headers },
      body,
    });
  const events = async (type: string, subject: string): Promise<Envelope[]> =>
    (await api.events(type)).filter((e) => e.subject === subject);

  before(async function () {
    out = join(root, 'out');
    mkdirSync(out);
    web = join(root, 'web');
    const apiRig = join(root, 'api');
    mkdirSync(web);
    mkdirSync(apiRig);
    const tools = join(root, 'tools');
    mkdirSync(tools);
    writeFileSync(join(tools, 'pack.toml'), '[pack]\nname = "tools"\n');
    writeOrder(
      join(tools, 'orders'),
      'sweep',
      `trigger = "manual"\nexec = "echo \\"$CTL_ORDER_SCOPED_NAME $CTL_RIG $PWD\\" >> ${out}/sweep-$CTL_RIG"`,
    );
    writeOrder(join(tools, 'orders'), 'report', `trigger = "manual"\nscope = "city"\nexec = "true"`);
    // A pack the city imports as well as a rig: its orders run once, for the city.
    const common = join(root, 'common');
    mkdirSync(common);
    writeFileSync(join(common, 'pack.toml'), '[pack]\nname = "common"\n');
    writeOrder(join(common, 'orders'), 'once', 'trigger = "manual"\nexec = "true"');
    sup = await TestSupervisor.start({ env: { HOOK_SECRET: SECRET }, webhookListener: true });
    dir = sup.cityDir('hooks');
    writeOrder(
      join(dir, 'orders'),
      'deploy',
      [
        'trigger = "webhook"',
        'secret_env = "HOOK_SECRET"',
        'exec = "echo \\"$CTL_ORDER_ARG_REF $CTL_WEBHOOK_EVENT\\" > ' +
          out +
          '/deploy; cat \\"$CTL_WEBHOOK_PAYLOAD_FILE\\" >> ' +
          out +
          '/deploy"',
        'idempotent = true',
        '[order.params.ref]',
        'required = true',
      ].join('\n'),
    );
    writeOrder(join(dir, 'orders'), 'unsigned', 'trigger = "webhook"\nexec = "true"');
    writeFileSync(
      join(dir, 'city.toml'),
      [
        '[workspace]',
        'provider = "echo"',
        '[imports.common]',
        `source = ${JSON.stringify(common)}`,
        '[[rigs]]',
        'name = "web"',
        `path = ${JSON.stringify(web)}`,
        '[rigs.imports.tools]',
        `source = ${JSON.stringify(tools)}`,
        '[rigs.imports.common]',
        `source = ${JSON.stringify(common)}`,
        '[[rigs]]',
        'name = "api"',
        `path = ${JSON.stringify(apiRig)}`,
        '[rigs.imports.tools]',
        `source = ${JSON.stringify(tools)}`,
        '',
      ].join('\n'),
    );
    api = await registerCity(sup, 'hooks');
  });
  after(async () => {
    await sup?.cleanup();
    rmSync(root, { recursive: true, force: true });
  });

  it('a signed delivery fires its order with the payload and records webhook.received; no token or CSRF header needed', async function () {
    const order = await api.get<{ webhook: { path: string; signature_header: string; secret_env: string } }>(
      '/order/deploy',
    );
    expect(order.body.webhook).to.deep.equal({
      path: '/hooks/hooks/deploy',
      signature_header: 'X-Hub-Signature-256',
      secret_env: 'HOOK_SECRET',
    });
    const body = JSON.stringify({ ref: 'main', size: 3, nested: { no: 'vars' } });
    const res = await deliver('deploy', body, {
      'X-Hub-Signature-256': sign(body),
      'X-GitHub-Event': 'push',
      'X-GitHub-Delivery': 'd-1',
    });
    expect(res.status, await res.clone().text()).to.equal(202);
    const reply = (await res.json()) as { status: string; tracking_id: string; scoped_name: string };
    expect(reply).to.include({ status: 'dispatched', scoped_name: 'deploy' });
    await waitUntil('the order to complete', async () => (await events('order.completed', 'deploy')).length === 1);
    expect(readFileSync(join(out, 'deploy'), 'utf8')).to.equal(`main push\n${body}`);
    const [received] = await events('webhook.received', 'deploy');
    expect(received.payload).to.include({
      webhook: 'deploy',
      order: 'deploy',
      tracking_id: reply.tracking_id,
      event_type: 'push',
      dedup_id: 'd-1',
      body_size: Buffer.byteLength(body),
      scheme: 'hmac-sha256',
    });
    const history = await api.get<{ entries: { bead_id: string; trigger: string }[] }>(
      '/orders/history?scoped_name=deploy',
    );
    expect(history.body.entries[0]).to.include({ bead_id: reply.tracking_id, trigger: 'webhook' });
  });

  it('a delivery with a wrong or missing signature, or without a required param, is refused and recorded', async function () {
    const body = JSON.stringify({ ref: 'main' });
    expectProblem(
      await reply(await deliver('deploy', body, { 'X-Hub-Signature-256': sign(body, 'guess') })),
      401,
      'webhook-rejected',
    );
    expectProblem(await reply(await deliver('deploy', body)), 401, 'webhook-rejected');
    const noRef = JSON.stringify({ other: 'x' });
    expectProblem(
      await reply(await deliver('deploy', noRef, { 'X-Hub-Signature-256': sign(noRef) })),
      422,
      'validation-failed',
    );
    const broken = '{"ref": ';
    expectProblem(
      await reply(await deliver('deploy', broken, { 'X-Hub-Signature-256': sign(broken) })),
      422,
      'webhook-rejected',
    );
    const rejected = await waitUntil('four rejections', async () => {
      const seen = await events('webhook.rejected', 'deploy');
      return seen.length === 4 ? seen : undefined;
    });
    expect(
      rejected.map((e) => [(e.payload as { reason: string }).reason, (e.payload as { status: number }).status]),
    ).to.deep.equal([
      ['bad_signature', 401],
      ['bad_signature', 401],
      ['missing_params', 422],
      ['bad_payload', 422],
    ]);
    expect(await events('order.fired', 'deploy')).to.have.length(1);
  });

  it('a webhook order with no secret takes no deliveries (503); an unknown or non-webhook order is a 404, not recorded', async function () {
    const body = '{}';
    expectProblem(
      await reply(await deliver('unsigned', body, { 'X-Hub-Signature-256': sign(body) })),
      503,
      'webhook-rejected',
    );
    const [rejected] = await waitUntil('no_secret', async () => events('webhook.rejected', 'unsigned'));
    expect(rejected.payload).to.include({ reason: 'no_secret', status: 503 });
    expectProblem(await reply(await deliver('nope', body)), 404, 'order-not-found');
    expectProblem(await reply(await deliver('tools.report', body)), 404, 'order-not-found');
    expect(await events('webhook.rejected', 'nope')).to.have.length(0);
  });

  it('a rig pack’s order runs once per importing rig, in the rig, with its values; scope = "city" runs once', async function () {
    const list = await api.get<{ orders: { name: string; scoped_name: string; rig?: string; scope: string }[] }>(
      '/orders',
    );
    const packed = list.body.orders.filter((o) => o.name.startsWith('tools.') || o.name.startsWith('common.'));
    expect(packed.map((o) => [o.scoped_name, o.rig ?? null]).sort()).to.deep.equal([
      ['common.once', null],
      ['tools.report', null],
      ['tools.sweep:rig:api', 'api'],
      ['tools.sweep:rig:web', 'web'],
    ]);
    const checks = await api.get<{ checks: { scoped_name: string; rig?: string }[] }>('/orders/check');
    expect(checks.body.checks.find((c) => c.scoped_name === 'tools.sweep:rig:web')).to.include({ rig: 'web' });
    const run = await api.post<{ scoped_name: string }>('/order/tools.sweep:rig:web/run', {});
    expect(run.status).to.equal(202);
    expect(run.body.scoped_name).to.equal('tools.sweep:rig:web');
    await waitUntil('the web instance to run', async () =>
      (await events('order.completed', 'tools.sweep:rig:web')).length === 1 ? true : undefined,
    );
    expect(readFileSync(join(out, 'sweep-web'), 'utf8')).to.equal(`tools.sweep:rig:web web ${realpathSync(web)}\n`);
    const [completed] = await events('order.completed', 'tools.sweep:rig:web');
    expect(completed.payload).to.include({ order: 'tools.sweep', rig: 'web' });
    const ambiguous = await api.post('/order/tools.sweep/run', {});
    expectProblem(ambiguous, 422, 'validation-failed');
    expect((ambiguous.body as { detail: string }).detail).to.contain('tools.sweep:rig:api');
    const history = await api.get<{ entries: { scoped_name: string; name: string; rig?: string }[] }>(
      '/orders/history?scoped_name=tools.sweep:rig:web',
    );
    expect(history.body.entries[0]).to.include({ name: 'tools.sweep', rig: 'web' });

    // Disabling one instance writes an override for its rig alone.
    expect((await api.post('/order/tools.sweep:rig:web/disable', {})).status).to.equal(200);
    expect(readFileSync(join(dir, 'city.toml'), 'utf8')).to.contain(
      'name = "tools.sweep"\nrig = "web"\nenabled = false',
    );
    await waitUntil('the web instance to be disabled', async () =>
      (await api.get<{ enabled: boolean }>('/order/tools.sweep:rig:web')).body.enabled === false ? true : undefined,
    );
    expect((await api.get<{ enabled: boolean }>('/order/tools.sweep:rig:api')).body.enabled).to.equal(true);
  });
});

async function reply(res: Response): Promise<{ status: number; body: unknown; headers: Headers }> {
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}
