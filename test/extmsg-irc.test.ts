import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import IRC from 'irc-framework';
import { packageRoot } from '../shared/paths.js';
import { isAlive } from './helpers/processes.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { freePort, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

const ADAPTER = join(packageRoot, 'examples', 'adapters', 'irc-adapter.mjs');
const NGIRCD = ['/usr/sbin/ngircd', '/usr/bin/ngircd'].find((p) => existsSync(p));

interface Said {
  nick: string;
  target: string;
  message: string;
}

/** A person on IRC: a second, independent connection to the same server. */
async function person(
  port: number,
  nick: string,
  channel: string,
): Promise<{ client: InstanceType<typeof IRC.Client>; heard: Said[]; joined: string[] }> {
  const client = new IRC.Client();
  const heard: Said[] = [];
  const joined: string[] = [];
  client.on('privmsg', (e: Said) => heard.push({ nick: e.nick, target: e.target, message: e.message }));
  client.on('join', (e: { nick: string }) => joined.push(e.nick));
  await new Promise<void>((resolve, reject) => {
    client.once('registered', () => resolve());
    client.once('socket close', () => reject(new Error('the IRC server closed the connection')));
    client.connect({ host: '127.0.0.1', port, nick, username: nick, gecos: nick, auto_reconnect: false });
  });
  client.join(channel);
  await waitUntil(`${nick} to join ${channel}`, async () => joined.includes(nick));
  return { client, heard, joined };
}

describe('the IRC adapter (ngircd, the shipped adapter, a real IRC client, the echo agent)', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let server: ChildProcess | undefined;
  let adapter: ChildProcess | undefined;
  let port: number;
  const adapters: ChildProcess[] = [];

  const startAdapter = () => {
    const child = spawn(
      process.execPath,
      [
        ADAPTER,
        '--city',
        'ircy',
        '--server',
        `127.0.0.1:${port}`,
        '--nick',
        'ctl-bot',
        '--channels',
        '#ops',
        '--bind',
        '#ops=worker',
        '--api',
        city.sup.base,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr.on('data', () => undefined);
    adapters.push(child);
    return child;
  };

  before(async function () {
    // ngircd is a Debian package CI installs (.ci/run); without it there is no IRC server to test against.
    if (!NGIRCD) this.skip();
    port = await freePort();
    const dir = tempDir('ctl-irc-');
    writeFileSync(
      join(dir, 'ngircd.conf'),
      `[Global]\nName = irc.test\nInfo = ctl tests\nListen = 127.0.0.1\nPorts = ${port}\nMotdPhrase = "ctl tests"\n\n[Limits]\nMaxNickLength = 30\n\n[Options]\nPAM = no\nIdent = no\nDNS = no\n`,
    );
    server = spawn(NGIRCD, ['-n', '-f', join(dir, 'ngircd.conf')], { stdio: 'ignore' });
    city = await startSessionCity('ircy', '\n[[agent]]\nname = "worker"\nprovider = "echo"\n');
    await waitUntil('ngircd to listen', async () => {
      try {
        const c = await person(port, 'probe', '#probe');
        c.client.quit();
        return true;
      } catch {
        return false;
      }
    });
  });

  after(async () => {
    for (const child of adapters) child.kill('SIGKILL');
    server?.kill();
    await city?.sup.cleanup();
    for (const child of adapters) if (child.pid) expect(isAlive(child.pid)).to.equal(false);
  });

  it('a person says something in the channel; the agent’s answer comes back into it; a restarted adapter delivers nothing twice', async function () {
    adapter = startAdapter();
    const ada = await person(port, 'ada', '#ops');
    await waitUntil('the adapter to join #ops', async () => ada.joined.includes('ctl-bot'));
    await waitUntil('#ops to be bound to the worker', async () => {
      const b = await city.api.get<{ items: { AgentName: string; Conversation: { conversation_id: string } }[] }>(
        '/extmsg/bindings',
      );
      return b.body.items.some((x) => x.AgentName === 'worker' && x.Conversation.conversation_id === '#ops');
    });
    ada.client.say('#ops', 'hello city');
    const answer = await waitUntil('the answer in #ops', async () =>
      ada.heard.find((h) => h.nick === 'ctl-bot' && h.message === 'echo: hello city'),
    );
    expect(answer.target).to.equal('#ops');
    // The adapter says a message before it answers the city's POST: until the city has that answer the message is
    // not delivered, and an adapter that died before answering gets it again (at least once). So the kill waits
    // for the city's word that the answer was delivered.
    await waitUntil('the city to record the answer delivered', async () => {
      const events = await city.api.get<{ items: { payload: { status?: string } }[] }>(
        '/events?type=extmsg.outbound&limit=1000',
      );
      return events.body.items.some((e) => e.payload.status === 'delivered');
    });

    // The adapter dies and comes back: it registers again and carries on, and nothing arrives twice.
    adapter.kill('SIGKILL');
    await waitUntil('the adapter to be gone', async () => !isAlive(adapter!.pid!));
    const joinsBefore = ada.joined.filter((n) => n === 'ctl-bot').length;
    adapter = startAdapter();
    await waitUntil(
      'the adapter to join #ops again',
      async () => ada.joined.filter((n) => n === 'ctl-bot').length > joinsBefore,
    );
    ada.client.say('#ops', 'are you back');
    await waitUntil('the second answer', async () =>
      ada.heard.some((h) => h.nick === 'ctl-bot' && h.message === 'echo: are you back'),
    );

    const transcript = await city.api.get<{ items: { Kind: string; Text: string; Actor: { display_name: string } }[] }>(
      `/extmsg/transcript?provider=irc&account_id=ctl-bot&conversation_id=%23ops`,
    );
    expect(transcript.body.items.map((r) => [r.Kind, r.Text])).to.deep.equal([
      ['inbound', 'hello city'],
      ['outbound', 'echo: hello city'],
      ['inbound', 'are you back'],
      ['outbound', 'echo: are you back'],
    ]);
    expect(transcript.body.items[0].Actor.display_name).to.equal('ada');
    expect(ada.heard.filter((h) => h.message === 'echo: hello city')).to.have.length(1);
    ada.client.quit();
  });
});
