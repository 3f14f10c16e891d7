import { createServer } from 'node:http';
import { expect } from 'chai';
import { pino } from 'pino';
import { ConfigError } from '../../shared/config/config-error.js';
import { NOTICE_KINDS, readNotifyConfig } from '../../shared/config/notify-config.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { EventHub, HubSubscriber } from '../../supervisor/event-hub.js';
import { noticeOf } from '../../supervisor/notices.js';
import { NOTICE_KINDS as PAGE_NOTICE_KINDS, noticeOf as pageNoticeOf } from '../../ui/src/notices.js';
import { forbiddenRange, guardedLookup } from '../../shared/http/address-policy.js';
import { DeliveryFailure, postWebhook } from '../../supervisor/notice-delivery.js';
import type { Notice } from '../../supervisor/notices.js';
import { Notifier } from '../../supervisor/notifier.js';
import { waitUntil } from '../helpers/wait.js';

// `[notify]`: reading the table, the notices events make, and the kinds a person chose. Issue 23.

const PATH = '/home/x/.ctl/supervisor.toml';

function refused(table: unknown): string {
  try {
    readNotifyConfig(table, PATH);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(table)}`);
}

function record(type: string, payload: Record<string, unknown>, extra: Partial<EventRecord> = {}): EventRecord {
  return { seq: 7, type, ts: '2026-11-26T00:00:00.000Z', actor: 'ctl', payload, ...extra };
}

describe('[notify] of supervisor.toml', () => {
  it('takes a webhook and a command, with every kind and bounded defaults', () => {
    expect(readNotifyConfig(undefined, PATH)).to.equal(undefined);
    expect(readNotifyConfig({}, PATH), 'no channel: nothing to do').to.equal(undefined);
    expect(
      readNotifyConfig({ webhook: 'https://hooks.example/x', command: 'notify-send "$CTL_NOTICE_TITLE"' }, PATH),
    ).to.deep.equal({
      kinds: [...NOTICE_KINDS],
      webhook: {
        url: 'https://hooks.example/x',
        headers: {},
        timeoutMs: 5_000,
        retries: 2,
        allowPrivateNetworks: false,
      },
      command: { argv: ['/bin/sh', '-c', 'notify-send "$CTL_NOTICE_TITLE"'], timeoutMs: 10_000 },
    });
    expect(
      readNotifyConfig({ on: ['quarantined'], command: ['/usr/bin/logger', '-t', 'ctl'], command_timeout: '3s' }, PATH),
    ).to.deep.equal({ kinds: ['quarantined'], command: { argv: ['/usr/bin/logger', '-t', 'ctl'], timeoutMs: 3_000 } });
    expect(readNotifyConfig({ on: ['question'], command: 'x' }, PATH)?.kinds).to.deep.equal(['question']);
    expect(
      readNotifyConfig({ webhook: 'http://127.0.0.1:9/', allow_private_networks: true }, PATH)?.webhook
        ?.allowPrivateNetworks,
    ).to.equal(true);
  });

  it('refuses what it cannot use, naming the setting', () => {
    expect(refused('x')).to.match(/notify must be a table/);
    expect(refused({ webhook: 'ftp://x/' })).to.match(/notify\.webhook must be an http or https URL/);
    expect(refused({ webhook: 'not a url' })).to.match(/notify\.webhook "not a url" is not a URL/);
    expect(refused({ webhook: 'http://x/', on: ['permission', 'lunch'] })).to.match(/notify\.on .*not "lunch"/);
    expect(refused({ webhook: 'http://x/', webhook_retries: 11 })).to.match(
      /webhook_retries must be an integer from 0 to 10/,
    );
    expect(refused({ webhook: 'http://x/', webhook_timeout: '10m' })).to.match(
      /webhook_timeout must be more than 0 and at most 120s/,
    );
    expect(refused({ webhook: 'http://x/', webhook_headers: { 'Bad Name': 'v' } })).to.match(/webhook_headers/);
    expect(refused({ webhook_retries: 1 })).to.match(/webhook_\* settings need notify\.webhook/);
    expect(refused({ allow_private_networks: true })).to.match(/allow_private_networks needs notify\.webhook/);
    expect(refused({ webhook: 'http://x/', allow_private_networks: 'yes' })).to.match(
      /notify\.allow_private_networks must be true or false/,
    );
    expect(refused({ command: [] })).to.match(/notify\.command must be/);
    expect(refused({ command: 'x', command_timeout: 5 })).to.match(/command_timeout: must be a duration/);
    expect(refused({ command: 'x', hook: 'y' })).to.match(/notify\.hook is not a setting/);
  });
});

describe('notices', () => {
  const base = 'http://127.0.0.1:8372';

  it('are made of a pending permission or question, a failed run and a quarantined session only', () => {
    const pending = noticeOf(
      'alpha',
      record('session.pending', {
        session_id: 'alp-3',
        request_id: 'r1',
        kind: 'tool-approval',
        prompt: 'Allow Bash?',
      }),
      base,
    );
    expect(pending).to.deep.include({
      kind: 'permission',
      city: 'alpha',
      title: 'alpha: alp-3 is waiting for you (a permission)',
      text: 'Allow Bash?',
      url: `${base}/ui/city/alpha/session/alp-3`,
    });
    expect(pending!.event).to.include({ city: 'alpha', seq: 7, type: 'session.pending' });
    // A question to the person is its own kind, so a person can choose it apart from tool approvals.
    const question = noticeOf(
      'alpha',
      record('session.pending', { session_id: 'alp-5', request_id: 'r2', kind: 'question', prompt: 'Which port?' }),
      base,
    );
    expect(question).to.deep.include({
      kind: 'question',
      title: 'alpha: alp-5 is waiting for you (a question)',
      text: 'Which port?',
      url: `${base}/ui/city/alpha/session/alp-5`,
    });
    const failed = noticeOf(
      'alpha',
      record('molecule.resolved', { run_id: 'alp-9', formula: 'release', outcome: 'fail' }),
      base,
    );
    expect(failed).to.deep.include({
      kind: 'run_failed',
      title: 'alpha: run alp-9 of release failed',
      url: `${base}/ui/city/alpha/runs/alp-9`,
    });
    const quarantined = noticeOf(
      'alpha',
      record('session.quarantined', { session_id: 'alp-4', template: 'crasher' }, { message: 'it failed 3 times' }),
      base,
    );
    expect(quarantined).to.deep.include({
      kind: 'quarantined',
      title: 'alpha: crasher is quarantined (session alp-4)',
      text: 'it failed 3 times',
    });
    expect(noticeOf('alpha', record('molecule.resolved', { run_id: 'alp-9', outcome: 'pass' }), base)).to.equal(
      undefined,
    );
    expect(noticeOf('alpha', record('session.crashed', { session_id: 'alp-4' }), base)).to.equal(undefined);
  });

  it('are the same kinds on the dashboard (its browser notifications) as in [notify]', () => {
    const events = [
      record('session.pending', { session_id: 'alp-3', request_id: 'r1', kind: 'tool-approval' }),
      record('session.pending', { session_id: 'alp-5', request_id: 'r2', kind: 'question', prompt: 'Which port?' }),
      record('molecule.resolved', { run_id: 'alp-9', outcome: 'fail' }),
      record('session.quarantined', { session_id: 'alp-4', template: 'crasher' }),
      record('review.requested', { bead: 'alp-7', state: 'pending', agent: 'web/coder', branch: 'b', base: 'main' }),
      record('review.conflicted', {
        bead: 'alp-7',
        state: 'conflicted',
        agent: 'web/coder',
        branch: 'b',
        base: 'main',
      }),
      record('review.commented', { bead: 'alp-7', state: 'pending', agent: 'web/coder', branch: 'b', base: 'main' }),
      record('molecule.resolved', { run_id: 'alp-9', outcome: 'pass' }),
    ];
    const kinds = (make: (r: EventRecord) => { kind: string } | undefined) => events.map((r) => make(r)?.kind);
    const page = kinds((r) =>
      pageNoticeOf({ ...r, seq: r.seq, city: 'alpha', payload: r.payload as Record<string, unknown> }),
    );
    expect(page).to.deep.equal(kinds((r) => noticeOf('alpha', r, base)));
    expect(page).to.deep.equal([
      'permission',
      'question',
      'run_failed',
      'quarantined',
      'review',
      'review',
      undefined,
      undefined,
    ]);
    // Both open the review's page.
    const reviewPage = pageNoticeOf({
      ...events[4],
      seq: 5,
      city: 'alpha',
      payload: events[4].payload as Record<string, unknown>,
    });
    expect(reviewPage?.path).to.equal('/ui/city/alpha/reviews/alp-7');
    expect(noticeOf('alpha', events[5], base)?.url).to.equal(`${base}/ui/city/alpha/reviews/alp-7`);
    // The kinds a person can turn on and off on the page are the kinds `[notify] on` takes.
    expect(PAGE_NOTICE_KINDS).to.deep.equal(NOTICE_KINDS);
  });

  it('go out only for the kinds chosen, and not for the supervisor’s own log', async () => {
    let subscriber: HubSubscriber | undefined;
    const hub = { subscribe: (s: HubSubscriber) => ((subscriber = s), () => undefined) } as unknown as EventHub;
    const appended: unknown[] = [];
    const supervisorLog = { append: async (e: unknown) => appended.push(e) } as unknown as EventLog;
    const seen: string[] = [];
    const receiver = await loopbackReceiver((body) => seen.push((JSON.parse(body) as { kind: string }).kind));
    const notifier = new Notifier(
      {
        kinds: ['run_failed', 'question'],
        webhook: { url: receiver.url, headers: {}, timeoutMs: 1000, retries: 0, allowPrivateNetworks: true },
      },
      { hub, supervisorLog, logger: pino({ level: 'silent' }), base: () => base },
    );
    try {
      notifier.start();
      subscriber!.records('alpha', [
        record('session.pending', { session_id: 'alp-3', kind: 'tool-approval' }),
        record('molecule.resolved', { run_id: 'alp-9', outcome: 'fail' }),
        record('session.pending', { session_id: 'alp-5', kind: 'question' }),
      ]);
      subscriber!.records('__supervisor__', [record('molecule.resolved', { run_id: 'x', outcome: 'fail' })]);
      await waitUntil('the run_failed and question notices', () => seen.length === 2);
      expect(seen.sort()).to.deep.equal(['question', 'run_failed']);
      expect(appended).to.deep.equal([]);
    } finally {
      notifier.close();
      receiver.close();
    }
  });

  it('a webhook on a private address (loopback included) is refused unless allow_private_networks', async () => {
    const bodies: string[] = [];
    const receiver = await loopbackReceiver((body) => bodies.push(body));
    const notice = {
      kind: 'question',
      city: 'alpha',
      title: 't',
      text: 'x',
      url: base,
      event: {},
    } as unknown as Notice;
    const webhook = { url: receiver.url, headers: {}, timeoutMs: 2000, retries: 2, allowPrivateNetworks: false };
    try {
      const err = await postWebhook(webhook, notice, new AbortController().signal).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(DeliveryFailure);
      expect((err as DeliveryFailure).message).to.equal(
        '127.0.0.1 is 127.0.0.1, loopback (this machine): notify webhooks (notify.allow_private_networks = true ' +
          'allows them) there are not allowed',
      );
      expect((err as DeliveryFailure).attempts, 'not retried').to.equal(1);
      const v6 = await postWebhook({ ...webhook, url: 'http://[::1]:9/' }, notice, new AbortController().signal).then(
        () => undefined,
        (e: unknown) => (e as Error).message,
      );
      expect(v6).to.match(/^\[::1\] is ::1, loopback/);
      expect(bodies, 'nothing reached it').to.deep.equal([]);
      expect(
        await postWebhook({ ...webhook, allowPrivateNetworks: true }, notice, new AbortController().signal),
      ).to.equal(1);
      expect(bodies).to.have.length(1);
    } finally {
      receiver.close();
    }
  });

  it('the packs’ address ranges, loopback private or not', () => {
    expect(forbiddenRange('127.0.0.1')).to.equal(undefined);
    expect(forbiddenRange('127.0.0.1', { loopbackPrivate: true })).to.equal('loopback (this machine)');
    expect(forbiddenRange('::1', { loopbackPrivate: true })).to.equal('loopback (this machine)');
    expect(forbiddenRange('10.1.2.3')).to.equal('in a private range');
    expect(forbiddenRange('::ffff:192.168.0.1')).to.equal('in a private range');
    expect(forbiddenRange('169.254.169.254')).to.match(/^link-local/);
    expect(forbiddenRange('fd00::1')).to.equal('unique-local');
    expect(forbiddenRange('93.184.216.34', { loopbackPrivate: true })).to.equal(undefined);
  });

  it('checks the address connected to as well (a name that resolves elsewhere by then is refused)', async () => {
    const connectTo = (allowPrivateNetworks: boolean) =>
      new Promise<string>((resolve) =>
        guardedLookup({ allowPrivateNetworks, loopbackPrivate: true }, 'notify webhooks')(
          'localhost',
          {},
          (err, address) => resolve(err ? err.message : typeof address === 'string' ? address : 'several'),
        ),
      );
    expect(await connectTo(false)).to.match(/^localhost is (127\.0\.0\.1|::1), loopback \(this machine\): notify/);
    expect(await connectTo(true)).to.match(/^(127\.0\.0\.1|::1)$/);
  });
});

/** A webhook receiver on a free loopback port: each body it is POSTed, answered 204. */
async function loopbackReceiver(got: (body: string) => void): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      got(body);
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}
