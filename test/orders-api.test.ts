import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { CityApi, expectProblem, type Envelope } from './helpers/city-api.js';
import { providersToml } from './helpers/sessions.js';
import { CSRF, TestSupervisor, tempDir } from './helpers/supervisor.js';
import { isAlive } from './helpers/processes.js';
import { waitUntil } from './helpers/wait.js';

interface History {
  entries: {
    bead_id: string;
    name: string;
    status?: string;
    exit_code?: string;
    signal?: string;
    error?: string;
    trigger?: string;
    wisp_root_id?: string;
    has_output: boolean;
  }[];
}
interface Check {
  name: string;
  due: boolean;
  reason: string;
  last_run?: string;
  last_run_outcome?: string;
}

describe('orders (automations on time, events and conditions)', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let dir: string;
  let clockFile: string;
  const work = tempDir('ctl-orders-work-');

  /** The city's clock (CTL_CLOCK_FILE): moved, never slept for. */
  const setClock = (iso: string) => writeFileSync(clockFile, iso);
  const writeOrder = (name: string, body: string) =>
    writeFileSync(join(dir, 'orders', `${name}.toml`), `[order]\n${body}\n`);
  const history = async (name: string) => (await api.get<History>(`/orders/history?scoped_name=${name}`)).body.entries;
  const check = async (name: string) =>
    (await api.get<{ checks: Check[] }>('/orders/check')).body.checks.find((c) => c.name === name);
  const events = async (type: string, order: string): Promise<Envelope[]> =>
    (await api.events(type)).filter((e) => e.subject === order);
  const listed = (name: string) =>
    waitUntil(
      `order ${name} to be listed`,
      async () => (await api.get<{ orders: { name: string }[] }>('/orders')).body.orders.some((o) => o.name === name),
      2000,
    );

  before(async function () {
    clockFile = join(tempDir('ctl-clock-'), 'now');
    setClock('2026-06-01T03:00:00Z');
    sup = await TestSupervisor.start({ env: { CTL_CLOCK_FILE: clockFile } });
    dir = sup.cityDir('orders');
    mkdirSync(join(dir, 'orders'), { recursive: true });
    mkdirSync(join(dir, 'formulas'), { recursive: true });
    writeFileSync(
      join(dir, 'city.toml'),
      `# Orders city.\n[workspace]\nprovider = "echo"\n${providersToml(tempDir('ctl-agent-state-'))}\n[[agent]]\nname = "worker"\nprovider = "echo"\nsuspended = true\n`,
    );
    const res = await fetch(`${sup.base}/v0/cities/register`, {
      method: 'POST',
      headers: { ...CSRF, 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: dir }),
    });
    expect(res.status).to.equal(201);
    await waitUntil('the city to run', async () => (await sup.city('orders'))?.running === true);
    api = new CityApi(sup, 'orders');
  });
  after(async () => {
    await sup?.cleanup();
    rmSync(work, { recursive: true, force: true });
  });

  it('an order file written on disk is listed within 2 s; run answers 202 and history has its exit code and output', async function () {
    writeOrder(
      'hello',
      `description = "Say hello"\ntrigger = "manual"\nexec = "echo hello from $CTL_ORDER; echo oops >&2; exit 3"`,
    );
    await listed('hello');
    const order = await api.get<{ type: string; trigger: string; timeout_ms: number; enabled: boolean }>(
      '/order/hello',
    );
    expect(order.body).to.include({ type: 'exec', trigger: 'manual', timeout_ms: 300_000, enabled: true });
    expect((await check('hello'))!.reason).to.match(/^manual trigger/);

    const run = await api.post<{ status: string; tracking_id: string }>('/order/hello/run', {});
    expect(run.status).to.equal(202);
    expect(run.body.status).to.equal('dispatched');
    const failed = await waitUntil('order.failed', async () => (await events('order.failed', 'hello'))[0]);
    expect(failed.payload).to.include({ tracking_id: run.body.tracking_id, exit_code: 3 });
    expect((await events('order.fired', 'hello')).length).to.equal(1);
    const [entry] = await history('hello');
    expect(entry).to.include({
      bead_id: run.body.tracking_id,
      status: 'failed',
      exit_code: '3',
      has_output: true,
      trigger: 'manual',
    });
    const detail = await api.get<{ output: string }>(`/order/history/${run.body.tracking_id}`);
    expect(detail.body.output).to.equal('hello from hello\noops\n');
    expectProblem(await api.post('/order/nope/run', {}), 404, 'order-not-found');
  });

  it('cooldown: fires when never run, not again until its interval passes on the clock', async function () {
    const out = join(work, 'cooldown.txt');
    writeOrder('tidy', `trigger = "cooldown"\ninterval = "1h"\nexec = "echo tidy >> ${out}"`);
    await waitUntil('the first firing', async () => (await events('order.completed', 'tidy')).length === 1);
    const waiting = await check('tidy');
    expect(waiting).to.include({ due: false, last_run_outcome: 'success' });
    expect(waiting!.reason).to.match(/^cooldown: 59m\d+s remaining$|^cooldown: 1h0m0s remaining$/);
    setClock('2026-06-01T04:00:30Z');
    await waitUntil('the second firing', async () => (await events('order.completed', 'tidy')).length === 2);
    expect(readFileSync(out, 'utf8')).to.equal('tidy\ntidy\n');
    const entries = await history('tidy');
    expect(entries.map((e) => e.trigger)).to.deep.equal(['cooldown', 'cooldown']);
  });

  it('cron: due on a matching minute of its schedule in its time zone, once', async function () {
    const out = join(work, 'cron.txt');
    setClock('2026-06-01T05:29:30Z');
    writeOrder(
      'nightly',
      `trigger = "cron"\nschedule = "30 7 * * *"\ntz = "Europe/Paris"\nexec = "echo nightly >> ${out}"`,
    );
    await listed('nightly');
    const before = await check('nightly');
    expect(before!.due).to.equal(false);
    expect(before!.reason).to.equal('next at 2026-06-01T05:30:00.000Z'); // 07:30 in Paris (UTC+2)
    setClock('2026-06-01T05:30:05Z');
    await waitUntil('the cron firing', async () => (await events('order.completed', 'nightly')).length === 1);
    expect(readFileSync(out, 'utf8')).to.equal('nightly\n');
    expect((await check('nightly'))!.due).to.equal(false);
  });

  it('condition: fires when its check exits 0', async function () {
    const flag = join(work, 'flag');
    writeOrder(
      'when-flag',
      `trigger = "condition"\ncheck = "test -f ${flag}"\ninterval = "100ms"\nexec = "rm ${flag}"`,
    );
    await listed('when-flag');
    await waitUntil('its check to have run', async () =>
      (await check('when-flag'))!.reason.startsWith('check: exited with code 1'),
    );
    writeFileSync(flag, '');
    await waitUntil('the condition firing', async () => (await events('order.completed', 'when-flag')).length === 1);
    await waitUntil('the check to say no again', async () =>
      (await check('when-flag'))!.reason.startsWith('check: exited'),
    );
    expect((await events('order.fired', 'when-flag')).length).to.equal(1);
  });

  it('event: fires once for events of its type after its cursor', async function () {
    const out = join(work, 'event.txt');
    writeOrder('on-deploy', `trigger = "event"\non = "deploy.done"\nexec = "echo seq $CTL_EVENT_SEQ >> ${out}"`);
    await listed('on-deploy');
    await waitUntil('its cursor', async () => (await check('on-deploy'))!.reason.startsWith('no deploy.done event'));
    const emit = async () => {
      const res = await api.post('/events', { type: 'deploy.done', actor: 'test' });
      expect(res.status).to.equal(201);
    };
    await emit();
    await waitUntil('the event firing', async () => (await events('order.completed', 'on-deploy')).length === 1);
    await emit();
    await waitUntil('the second event firing', async () => (await events('order.completed', 'on-deploy')).length === 2);
    expect(readFileSync(out, 'utf8').trim().split('\n')).to.have.length(2);
    expect((await history('on-deploy')).every((e) => e.trigger === 'event')).to.equal(true);
  });

  it('the open-work gate refuses a second firing while the first runs; a hanging command is killed at its time-out', async function () {
    const hangPid = join(work, 'hang.pid');
    writeOrder(
      'hang',
      `trigger = "manual"\ntimeout = "700ms"\nexec = "echo started; sleep 30 & echo $! > ${hangPid}; wait"`,
    );
    await listed('hang');
    const first = await api.post<{ tracking_id: string }>('/order/hang/run', {});
    expect(first.status).to.equal(202);
    const second = await api.post('/order/hang/run', {});
    expectProblem(second, 409, 'conflict-wrong-state');
    expect(JSON.stringify(second.body)).to.include(first.body.tracking_id);
    const failed = await waitUntil('order.failed', async () => (await events('order.failed', 'hang'))[0]);
    expect(failed.payload).to.include({ tracking_id: first.body.tracking_id, signal: 'SIGKILL' });
    expect(String((failed.payload as { error: string }).error)).to.include('timed out after 700 ms');
    const [entry] = await history('hang');
    expect(entry).to.include({ status: 'failed', signal: 'SIGKILL' });
    expect((await api.get<{ output: string }>(`/order/history/${entry.bead_id}`)).body.output).to.equal('started\n');
    // Nothing of it is left running: the command's whole process group went with it.
    expect(isAlive(Number(readFileSync(hangPid, 'utf8')))).to.equal(false);
    // Once it ended, it fires again.
    expect((await api.post('/order/hang/run', {})).status).to.equal(202);
  });

  it('a formula order starts a run routed to its pool; the run holds the next firing back until it ends', async function () {
    writeFileSync(join(dir, 'formulas', 'sweep.toml'), '[[steps]]\nid = "sweep"\ntitle = "Sweep the floor"\n');
    writeOrder('sweeper', `trigger = "manual"\nformula = "sweep"\npool = "worker"`);
    await listed('sweeper');
    expect((await api.post('/order/sweeper/run', {})).status).to.equal(202);
    const completed = await waitUntil('order.completed', async () => (await events('order.completed', 'sweeper'))[0]);
    const runId = (completed.payload as { run_id: string }).run_id;
    expect((await history('sweeper'))[0]).to.include({ status: 'dispatched', wisp_root_id: runId });
    const run = await api.get<{ formula: string; target: string; status: string }>(`/runs/${runId}`);
    expect(run.body).to.include({ formula: 'sweep', target: 'worker', status: 'pending' });
    expectProblem(await api.post('/order/sweeper/run', {}), 409, 'conflict-wrong-state');
    expect((await api.post(`/runs/${runId}/cancel`)).status).to.equal(202);
    expect((await api.post('/order/sweeper/run', {})).status).to.equal(202);
  });

  it('a broken order file is reported by /orders, /orders/check and /config/validate; the others run', async function () {
    writeOrder('broken', `trigger = "cron"\nschedule = "61 * * * *"\nexec = "true"`);
    writeFileSync(join(dir, 'orders', 'garbage.toml'), '[order\n');
    await waitUntil(
      'the errors',
      async () => ((await api.get<{ errors?: string[] }>('/orders')).body.errors ?? []).length === 2,
    );
    const { errors } = (await api.get<{ errors: string[] }>('/orders')).body;
    expect(errors.find((e) => e.startsWith('orders/broken.toml: order.schedule'))).to.not.equal(undefined);
    // A TOML syntax error names its line and column.
    expect(errors.find((e) => /^orders\/garbage\.toml:\d+:\d+: /.test(e))).to.not.equal(undefined);
    expect((await api.get<{ errors: string[] }>('/orders/check')).body.errors).to.have.length(2);
    const validate = await api.get<{ valid: boolean; errors: { file: string }[] }>('/config/validate');
    expect(validate.body.valid).to.equal(false);
    expect(validate.body.errors.map((e) => e.file)).to.include.members(['orders/broken.toml', 'orders/garbage.toml']);
    expectProblem(await api.post('/order/broken/run', {}), 422, 'validation-failed');
    expect((await api.post('/order/hello/run', {})).status).to.equal(202);
    rmSync(join(dir, 'orders', 'broken.toml'));
    rmSync(join(dir, 'orders', 'garbage.toml'));
  });

  it('disable and enable write city.toml overrides that survive a controller restart', async function () {
    expect((await api.post('/order/tidy/disable')).status).to.equal(200);
    const firings = (await events('order.fired', 'tidy')).length;
    const toml = readFileSync(join(dir, 'city.toml'), 'utf8');
    expect(toml).to.match(/^# Orders city\./);
    expect(toml).to.include('[[orders.overrides]]\nname = "tidy"\nenabled = false\n');
    expect(await check('tidy')).to.include({ due: false, reason: 'disabled' });
    setClock('2026-06-01T09:00:00Z');
    const before = (await sup.city('orders'))!.pid!;
    process.kill(before, 'SIGTERM');
    await waitUntil(
      'a new controller',
      async () => {
        const city = await sup.city('orders');
        return city?.running === true && city.pid !== before && !isAlive(before);
      },
      30_000,
    );
    const order = await api.get<{ enabled: boolean; overridden?: boolean }>('/order/tidy');
    expect(order.body).to.include({ enabled: false, overridden: true });
    expect((await events('order.fired', 'tidy')).length).to.equal(firings);
    expect((await api.post('/order/tidy/enable')).status).to.equal(200);
    expect(readFileSync(join(dir, 'city.toml'), 'utf8')).to.include(
      '[[orders.overrides]]\nname = "tidy"\nenabled = true\n',
    );
    // Enabled again, with its interval long passed on the clock, it fires.
    await waitUntil('tidy to fire again', async () => (await events('order.fired', 'tidy')).length === firings + 1);
  });

  it('webhook: fires only when called, with its required params as environment; the feed lists firings', async function () {
    const out = join(work, 'webhook.txt');
    writeOrder(
      'hook',
      `trigger = "webhook"\nexec = "echo env=$CTL_ORDER_ARG_ENV > ${out}"\n[order.params]\nenv = { required = true }`,
    );
    await listed('hook');
    expect((await check('hook'))!.reason).to.match(/^webhook trigger/);
    const missing = await api.post('/order/hook/run', {});
    expectProblem(missing, 422, 'validation-failed');
    expect(JSON.stringify(missing.body)).to.include('body.vars.env');
    const fired = await api.post<{ tracking_id: string }>('/order/hook/run', { vars: { env: 'staging' } });
    expect(fired.status).to.equal(202);
    await waitUntil('the webhook firing', async () => (await events('order.completed', 'hook')).length === 1);
    expect(readFileSync(out, 'utf8')).to.equal('env=staging\n');
    const feed = await api.get<{ items: { id: string; type: string; status: string; target: string }[] }>(
      '/orders/feed?limit=5',
    );
    expect(feed.body.items[0]).to.include({
      id: fired.body.tracking_id,
      type: 'order',
      status: 'success',
      target: 'hook',
    });
  });

  it("history is the firings' tracking beads, newest first: every order's or one order's, by limit and time", async function () {
    writeOrder('first', 'trigger = "manual"\nexec = "true"');
    writeOrder('second', 'trigger = "manual"\nexec = "true"');
    await listed('first');
    await listed('second');
    const fire = async (name: string) => {
      const run = await api.post<{ tracking_id: string }>('/order/' + name + '/run', {});
      expect(run.status).to.equal(202);
      await waitUntil(`${name} to complete`, async () =>
        (await events('order.completed', name)).some((e) => e.payload?.tracking_id === run.body.tracking_id),
      );
      return run.body.tracking_id;
    };
    const f1 = await fire('first');
    const s1 = await fire('second');
    const f2 = await fire('first');
    // A bead with an order's run label that is no firing (as a formula order's run is) is not in its history.
    const other = await api.post<{ id: string }>('/beads', { title: 'not a firing', labels: ['order-run:first'] });
    expect(other.status).to.equal(201);
    type Entry = History['entries'][number] & { created_at: string };
    const get = async (query: string) => (await api.get<{ entries: Entry[] }>(`/orders/history?${query}`)).body.entries;

    expect((await get('limit=3')).map((e) => e.bead_id)).to.deep.equal([f2, s1, f1]);
    expect((await get('scoped_name=first')).map((e) => e.bead_id)).to.deep.equal([f2, f1]);
    expect((await get('scoped_name=first&limit=1')).map((e) => e.bead_id)).to.deep.equal([f2]);
    const all = await get('limit=1000');
    const cut = all.find((e) => e.bead_id === s1)!.created_at;
    const earlier = all.filter((e) => Date.parse(e.created_at) < Date.parse(cut)).map((e) => e.bead_id);
    expect(earlier).to.include(f1);
    expect((await get(`limit=1000&before=${encodeURIComponent(cut)}`)).map((e) => e.bead_id)).to.deep.equal(earlier);
    const cutFirst = encodeURIComponent(all.find((e) => e.bead_id === f2)!.created_at);
    expect((await get(`scoped_name=first&before=${cutFirst}`)).map((e) => e.bead_id)).to.deep.equal([f1]);
    expectProblem(await api.get(`/order/history/${other.body.id}`), 404, 'bead-not-found');
  });

  it('a command still running when its city stops is killed with it (no orphan in the process table)', async function () {
    const pidFile = join(work, 'long.pid');
    writeOrder('long', `trigger = "manual"\nexec = "sleep 120 & echo $! > ${pidFile}; wait"`);
    await listed('long');
    expect((await api.post('/order/long/run', {})).status).to.equal(202);
    const pid = await waitUntil('the command to run', () => {
      try {
        const n = Number(readFileSync(pidFile, 'utf8'));
        return n > 0 && isAlive(n) ? n : undefined;
      } catch {
        return undefined;
      }
    });
    const stopped = await sup.ctl(['city', 'stop', 'orders']);
    expect(stopped.code, stopped.stderr).to.equal(0);
    await waitUntil('the command to be gone', () => !isAlive(pid));
  });
});
