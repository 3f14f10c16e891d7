import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import { expectSuccess, lines } from './helpers/cli.js';
import { createSession, startSessionCity, terminalOf, type SessionCity } from './helpers/sessions.js';
import { freePort } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// Lists say what a person asked about, and things that are not well say so (issue 19, point 20): the real
// `ctl` against a real supervisor and city.

describe('lists without noise, states as they are (the real binary)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  const ctl = (...args: string[]) => city.sup.ctl(['--city', 'quiet', ...args]);

  before(async function () {
    city = await startSessionCity('quiet');
  });
  after(async () => city?.sup.cleanup());

  it('ctl bead list leaves out the beads that record sessions unless --sessions or --type session', async function () {
    const session = await createSession(city.api, { name: 'echo' });
    const bead = await city.api.create({ title: 'real work' });
    const ids = (out: string[]) => out.slice(1).map((l) => l.split(/\s+/)[0]);
    const plain = ids(expectSuccess(await ctl('bead', 'list')));
    expect(plain).to.include(bead.id);
    expect(plain).to.not.include(session);
    const json = JSON.parse(expectSuccess(await ctl('bead', 'list', '--json'))[0]) as { items: { id: string }[] };
    expect(json.items.map((b) => b.id)).to.not.include(session);
    expect(ids(expectSuccess(await ctl('bead', 'list', '--sessions')))).to.include.members([bead.id, session]);
    expect(ids(expectSuccess(await ctl('bead', 'list', '--type', 'session')))).to.deep.equal([session]);
  });

  it('ctl session list leaves out a session that failed to start unless --all, and says so', async function () {
    const reply = await city.api.post<{ request_id: string; session_id: string }>('/sessions', { name: 'dies' });
    expect((await terminalOf(city.api, reply.body.request_id)).type).to.equal('request.failed');
    const failed = reply.body.session_id;
    const listed = await ctl('session', 'list');
    expect(listed.code).to.equal(0);
    expect(lines(listed.stdout).map((l) => l.split(/\s+/)[0])).to.not.include(failed);
    const all = expectSuccess(await ctl('session', 'list', '--all'));
    expect(all.find((l) => l.startsWith(`${failed} `))).to.match(/failed-create/);
    const json = JSON.parse(expectSuccess(await ctl('session', 'list', '--json'))[0]) as { items: { id: string }[] };
    expect(json.items.map((s) => s.id)).to.not.include(failed);
    expect(expectSuccess(await ctl('session', 'list', '--state', 'failed-create')).join('\n')).to.include(failed);
  });

  it('ctl extmsg adapters shows whether each adapter takes deliveries: a dead one is unreachable, with why', async function () {
    // An adapter that takes deliveries, and one whose callback nobody listens on any more.
    const live: Server = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end('{}')));
    await new Promise<void>((resolve) => live.listen(0, '127.0.0.1', resolve));
    const livePort = (live.address() as { port: number }).port;
    try {
      const deadUrl = `http://127.0.0.1:${await freePort()}/outbound`;
      for (const [account, url] of [
        ['alive', `http://127.0.0.1:${livePort}/outbound`],
        ['dead', deadUrl],
        ['idle', `http://127.0.0.1:${livePort}/outbound`],
      ]) {
        const reply = await city.api.post('/extmsg/adapters', {
          provider: 'chat',
          account_id: account,
          callback_url: url,
        });
        expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
      }
      const session = await createSession(city.api, { name: 'echo', title: 'chatty' });
      for (const account of ['alive', 'dead']) {
        const conversation = {
          scope_id: 's',
          provider: 'chat',
          account_id: account,
          conversation_id: '#x',
          kind: 'room',
        };
        await city.api.post('/extmsg/outbound', { session_id: session, conversation, text: 'hello' });
      }
      const rows = await waitUntil('both deliveries tried', async () => {
        const out = expectSuccess(await ctl('extmsg', 'adapters'));
        const byAccount = (a: string) => out.find((l) => l.split(/\s+/)[2] === a);
        return byAccount('dead')?.includes('unreachable') && byAccount('alive')?.includes('reachable')
          ? { out, byAccount }
          : undefined;
      });
      expect(rows.out[0]).to.match(/^NAME\s+PROVIDER\s+ACCOUNT\s+STATE\s+PENDING\s+CALLBACK\s+LAST ERROR$/);
      expect(rows.byAccount('alive')!.split(/\s+/)[3]).to.equal('reachable');
      expect(rows.byAccount('dead')!.split(/\s+/)[3]).to.equal('unreachable');
      expect(rows.byAccount('idle')!.split(/\s+/)[3]).to.equal('unknown');
      const json = JSON.parse(expectSuccess(await ctl('extmsg', 'adapters', '--json'))[0]) as {
        items: { account_id: string; state: string; last_error?: string }[];
      };
      const dead = json.items.find((a) => a.account_id === 'dead')!;
      expect(dead.state).to.equal('unreachable');
      expect(dead.last_error).to.be.a('string').and.not.equal('');
    } finally {
      await new Promise((resolve) => live.close(resolve));
    }
  });

  it('ctl cities and ctl status show a suspended city as suspended, not running', async function () {
    const row = async () => expectSuccess(await city.sup.ctl(['cities'])).find((l) => l.startsWith('quiet '));
    expect((await row())?.split(/\s+/)[1]).to.equal('running');
    expectSuccess(await city.sup.ctl(['city', 'suspend', 'quiet']));
    try {
      await waitUntil('ctl cities to show it suspended', async () => (await row())?.split(/\s+/)[1] === 'suspended');
      expect(expectSuccess(await ctl('status'))[0]).to.match(/^City quiet is suspended/);
    } finally {
      expectSuccess(await city.sup.ctl(['city', 'resume', 'quiet']));
    }
  });
});
