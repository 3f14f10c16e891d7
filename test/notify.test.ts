import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { expect } from 'chai';
import { CityApi } from './helpers/city-api.js';
import { processesMentioning } from './helpers/processes.js';
import { createSession, providersToml, send } from './helpers/sessions.js';
import { CSRF, TestSupervisor, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// `[notify]` of supervisor.toml with a real supervisor and city: a local HTTP server is the webhook, a shell
// command appends what it reads to a file. A pending permission (the stream-json example agent), a failed run
// (a step closed with outcome fail) and a quarantined agent (one whose program keeps crashing) each reach both;
// a webhook that keeps failing and a command that fails or overstays are logged and recorded as notify.failed,
// and the command's process group is gone. Issue 23.

interface Notice {
  kind: string;
  city: string;
  title: string;
  text: string;
  url: string;
  event: { type: string; seq: number; city: string; payload: Record<string, unknown> };
}

const CITY = `
[daemon]
restart_backoff = "100ms"
restart_window = "10s"
max_restarts = 2

[providers.crashy]
command = "/bin/sh -c 'sleep 0.3; exit 3'"

[[agent]]
name = "crasher"
provider = "crashy"
suspended = true
`;

const ONE_STEP = `
formula = "one"
[[steps]]
id = "build"
title = "Build"
`;

describe('notifications ([notify] of supervisor.toml)', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let hook: Server;
  /** What the webhook was sent, every attempt. */
  const posted: { notice: Notice; headers: Record<string, string | string[] | undefined> }[] = [];
  /** The webhook answers 500 to the next this many requests. */
  let failNext = 0;
  let dir: string;
  let written: string;
  let failFlag: string;
  let sleepFlag: string;

  const commandNotices = (): Notice[] =>
    existsSync(written)
      ? readFileSync(written, 'utf8')
          .split('\n')
          .filter((l) => l.trim())
          .map((l) => JSON.parse(l) as Notice)
      : [];
  const webhookNotices = () => posted.map((p) => p.notice);
  const supervisorEvents = async (type: string) => {
    const res = await fetch(`${sup.base}/v0/events?type=${type}&limit=100`);
    return ((await res.json()) as { items: { type: string; payload: Record<string, unknown> }[] }).items;
  };

  before(async function () {
    this.timeout(90_000);
    hook = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        posted.push({ notice: JSON.parse(body) as Notice, headers: req.headers });
        res.statusCode = failNext > 0 ? 500 : 204;
        if (failNext > 0) failNext--;
        res.end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const port = (hook.address() as { port: number }).port;
    dir = tempDir('ctl-notify-');
    written = join(dir, 'notices.jsonl');
    failFlag = join(dir, 'fail');
    sleepFlag = join(dir, 'sleep');
    const script = `cat >> '${written}'; if [ -e '${sleepFlag}' ]; then sleep 30; fi; test ! -e '${failFlag}' || { echo refused >&2; exit 4; }`;
    sup = await TestSupervisor.start({
      config: [
        '[notify]',
        `webhook = "http://127.0.0.1:${port}/hook"`,
        // The receiver is on loopback, which counts as a private network for a notice's webhook.
        'allow_private_networks = true',
        'webhook_headers = { Authorization = "Bearer hook-secret" }',
        'webhook_timeout = "2s"',
        'webhook_retries = 2',
        `command = ${JSON.stringify(['/bin/sh', '-c', script])}`,
        'command_timeout = "2s"',
      ],
    });
    const cityDir = sup.cityDir('alerts');
    mkdirSync(join(cityDir, 'formulas'), { recursive: true });
    writeFileSync(join(cityDir, 'formulas', 'one.toml'), ONE_STEP);
    writeFileSync(
      join(cityDir, 'city.toml'),
      `[workspace]\nprovider = "echo"\n${providersToml(tempDir('ctl-agent-state-'))}${CITY}`,
    );
    const res = await fetch(`${sup.base}/v0/cities/register`, {
      method: 'POST',
      headers: { ...CSRF, 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: cityDir }),
    });
    expect(res.status, await res.text()).to.equal(201);
    await waitUntil('alerts to run', async () => (await sup.city('alerts'))?.running === true);
    api = new CityApi(sup, 'alerts');
  });

  after(async () => {
    await sup?.cleanup();
    hook?.close();
    hook?.closeAllConnections();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a pending permission reaches the webhook (POSTed JSON, its headers) and the command (JSON on stdin)', async () => {
    const session = await createSession(api, { name: 'pretend-claude' });
    await send(api, session, 'run ls -la');
    const byHook = await waitUntil('the webhook to get the permission', () =>
      posted.find((p) => p.notice.kind === 'permission'),
    );
    expect(byHook.headers['content-type']).to.equal('application/json');
    expect(byHook.headers.authorization).to.equal('Bearer hook-secret');
    const notice = byHook.notice;
    expect(notice).to.include({
      kind: 'permission',
      city: 'alerts',
      url: `${sup.base}/ui/city/alerts/session/${session}`,
    });
    expect(notice.title).to.equal(`alerts: ${session} is waiting for you (a permission)`);
    expect(notice.text).to.match(/Allow Bash\?.*ls -la/);
    expect(notice.event).to.include({ type: 'session.pending', city: 'alerts' });
    const byCommand = await waitUntil('the command to get the permission', () =>
      commandNotices().find((n) => n.kind === 'permission'),
    );
    expect(byCommand).to.deep.equal(notice);
  });

  it('a question to the person reaches both as its own kind, question', async () => {
    const session = await createSession(api, { name: 'echo' });
    await send(api, session, 'ask Which port?');
    const notice = await waitUntil('the webhook to get the question', () =>
      webhookNotices().find((n) => n.kind === 'question' && n.event.payload.session_id === session),
    );
    expect(notice).to.include({ city: 'alerts', text: 'Which port?' });
    expect(notice.title).to.equal(`alerts: ${session} is waiting for you (a question)`);
    await waitUntil('the command to get the question', () =>
      commandNotices().find((n) => n.kind === 'question' && n.event.seq === notice.event.seq),
    );
  });

  it('a failed run reaches both, with its run page', async () => {
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>('/formulas/one/cook', {});
    expect(cooked.status, JSON.stringify(cooked.body)).to.equal(201);
    const run = cooked.body.root_bead_id;
    expect(
      (await api.patch(`/bead/${cooked.body.beads.build}`, { metadata: { 'ctl.outcome': 'fail' } })).status,
    ).to.equal(200);
    expect((await api.post(`/bead/${cooked.body.beads.build}/close`)).status).to.equal(200);
    const isRun = (n: Notice) => n.kind === 'run_failed' && n.event.payload.run_id === run;
    const notice = await waitUntil('the webhook to get the failed run', () => webhookNotices().find(isRun));
    expect(notice.title).to.equal(`alerts: run ${run} of one failed`);
    expect(notice.url).to.equal(`${sup.base}/ui/city/alerts/runs/${run}`);
    await waitUntil('the command to get the failed run', () => commandNotices().find(isRun));
  });

  it('a quarantined agent reaches both', async () => {
    expect((await api.post('/agent/crasher/resume')).status).to.be.oneOf([200, 202]);
    const notice = await waitUntil('the webhook to get the quarantine', () =>
      webhookNotices().find((n) => n.kind === 'quarantined'),
    );
    expect(notice.title).to.match(/^alerts: crasher is quarantined \(session \S+\)$/);
    await waitUntil('the command to get the quarantine', () => commandNotices().find((n) => n.kind === 'quarantined'));
  });

  it('retries a failing webhook, then records notify.failed; a failing command is recorded too', async () => {
    // Once: the retry gets it through.
    failNext = 1;
    const before = posted.length;
    const first = await createSession(api, { name: 'pretend-claude' });
    await send(api, first, 'run ls');
    await waitUntil(
      'a retried delivery',
      () => posted.slice(before).filter((p) => p.notice.text.includes('ls')).length === 2,
    );
    const failedBefore = (await supervisorEvents('notify.failed')).length;
    expect(failedBefore, 'a retried delivery is no failure').to.equal(0);
    // Every attempt: three (two retries), then the failure is recorded — and the command fails as well.
    failNext = 3;
    writeFileSync(failFlag, '');
    const second = await createSession(api, { name: 'pretend-claude' });
    await send(api, second, 'run pwd');
    const failures = await waitUntil('two notify.failed', async () => {
      const events = await supervisorEvents('notify.failed');
      return events.length === 2 ? events : undefined;
    });
    const byChannel = Object.fromEntries(failures.map((e) => [String(e.payload.channel), e.payload]));
    expect(byChannel.webhook).to.include({ kind: 'permission', city: 'alerts', error: 'HTTP 500', attempts: 3 });
    expect(byChannel.command).to.include({ kind: 'permission', city: 'alerts', event_type: 'session.pending' });
    expect(byChannel.command.error).to.match(/exited with status 4: refused/);
    rmSync(failFlag);
  });

  it('stops a command that overstays its time-out, its whole process group', async () => {
    writeFileSync(sleepFlag, '');
    const session = await createSession(api, { name: 'pretend-claude' });
    await send(api, session, 'run date');
    const failed = await waitUntil('notify.failed for the command', async () =>
      (await supervisorEvents('notify.failed')).find(
        (e) => e.payload.channel === 'command' && /still running after 2s/.test(String(e.payload.error)),
      ),
    );
    expect(failed.payload.kind).to.equal('permission');
    await waitUntil('no command left', () => processesMentioning(sleepFlag).length === 0);
    rmSync(sleepFlag);
  });
});
