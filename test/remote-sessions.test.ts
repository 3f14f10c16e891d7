import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { controllerPid } from './helpers/controller-pid.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import { deliver, send, session, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

const ECHO_AGENT = join(packageRoot, 'examples', 'agents', 'echo.sh');
/** Where the echo agent is installed on the host, as a person would install their agent's program there. */
const ON_HOST = '/srv/agents/echo.sh';

interface Listed {
  id: string;
  template: string;
  host: string;
  state: string;
  running: boolean;
  reason?: string;
}

// A session on a host over OpenSSH, as a person uses one: placed there by its agent's `hosts`, its program running
// on the host (seen in the host's own process table) and answering through the controller, its `ctl` reaching its
// city as its agent and nothing more, its files staged there and none of this machine's environment, and nothing
// left running on the host when the city stops or its controller is killed.
describe('sessions on a host over OpenSSH (a real supervisor, a network-namespace host)', function () {
  this.timeout(180_000);
  let hosts: TestHosts;
  let host: TestHost;
  let city: SessionCity;

  const onHost = (pattern: string) => host.processes().filter((p) => p.args.includes(pattern));
  const worker = async (): Promise<Listed> =>
    waitUntil('the worker session to run', async () => {
      const reply = await city.api.get<{ items: Listed[] }>('/sessions');
      const found = reply.body.items.find((s) => s.template === 'worker' && s.state === 'active');
      return found;
    });

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    hosts = await makeHosts(1, { slots: 2 });
    [host] = hosts.hosts as [TestHost];
    host.put(ECHO_AGENT, ON_HOST);
    city = await startSessionCity(
      'remote',
      `
${host.tomlTable()}
[providers.remote-echo]
command = "${ON_HOST}"
ready_prompt_prefix = "ready>"
env = { ECHO_READY = "ready>" }

[[agent]]
name = "worker"
provider = "remote-echo"
hosts = ["${host.name}"]
min_active_sessions = 1
`,
      { CTL_TEST_SECRET: 'not-for-hosts' },
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    await hosts?.cleanup();
  });

  it('runs the session on the host, placed by its agent, and answers through the controller', async function () {
    const listed = await worker();
    expect(listed.host).to.equal(host.name);
    await waitUntil('its program in the host’s process table', () => onHost(ON_HOST).length === 1);
    await deliver(city.api, listed.id, 'hello there');
    await waitForTurn(city.api, listed.id, 'assistant', 'echo: hello there');
    const listing = await city.sup.ctl(['--city', 'remote', 'session', 'list']);
    expect(listing.stdout).to.match(new RegExp(`worker.*${host.name}`));
  });

  it('gives its shell there ctl, reaching its city as its agent, and only named variables', async function () {
    const { id } = await worker();
    await deliver(city.api, id, 'run ctl whoami');
    await waitForTurn(city.api, id, 'assistant', /^run: worker \(session worker-\S+, city remote\)$/);
    await deliver(city.api, id, 'run env | sort');
    const env = await waitForTurn(city.api, id, 'assistant', /CTL_SESSION_ID=/);
    expect(env.text).to.include(`CTL_SESSION_ID=${id}`);
    expect(env.text).to.include('CTL_AGENT=worker');
    expect(env.text).to.not.include('CTL_TEST_SECRET');
    expect(env.text).to.not.include(city.dir);
    // Its city is not on the host: anything else it asks of the supervisor is refused.
    await deliver(city.api, id, 'run ctl token create sneaky 2>&1; echo "exit $?"');
    await waitForTurn(city.api, id, 'assistant', /^run: [\s\S]*forbidden[\s\S]*exit 1$/);
  });

  it('tells its shells there the bead it is handed while it runs', async function () {
    const { id } = await worker();
    const job = await city.api.create({ title: 'a job for the host' });
    expect((await city.api.post('/sling', { target: 'worker', bead: job.id })).status).to.equal(200);
    await waitForTurn(city.api, id, 'user', new RegExp(`^Work on bead ${job.id}`));
    await deliver(city.api, id, 'run echo "bead=$CTL_BEAD"');
    await waitForTurn(city.api, id, 'assistant', `run: bead=${job.id}`);
  });

  it('leaves nothing running on the host once the city stops', async function () {
    await worker();
    const stopped = await city.sup.ctl(['city', 'stop', 'remote']);
    expect(stopped.code, stopped.stderr).to.equal(0);
    await waitUntil('nothing of the city on the host', () => onHost('/srv/ctl-work').length === 0);
    expect(onHost(ON_HOST)).to.have.length(0);
    const started = await city.sup.ctl(['city', 'start', 'remote']);
    expect(started.code, started.stderr).to.equal(0);
  });

  it('leaves nothing running on the host when its controller is killed with SIGKILL', async function () {
    await worker();
    await waitUntil('its program on the host', () => onHost(ON_HOST).length === 1);
    const [before] = onHost(ON_HOST);
    const [watchdog] = onHost('watchdog.js watch');
    process.kill(controllerPid(city.dir), 'SIGKILL');
    // Its watchdog there ends it as the connection goes, whatever the next controller does.
    const alive = (pid: number) => host.processes().some((p) => p.pid === pid);
    await waitUntil(
      'the old program and watchdog gone from the host',
      () => !alive(before.pid) && !alive(watchdog.pid),
    );
    // The supervisor starts a new controller, which starts the session there again: one program, never two.
    const again = await worker();
    expect(again.host).to.equal(host.name);
    await waitUntil('one new program on the host', () => onHost(ON_HOST).length === 1);
    expect(onHost('watchdog.js watch')).to.have.length(1);
    expect((await session(city.api, again.id)).running).to.equal(true);
  });

  it('leaves nothing running on the host when the supervisor stops (the last test: it stops the supervisor)', async function () {
    await worker();
    await waitUntil('its program on the host', () => onHost(ON_HOST).length === 1);
    const stopped = await city.sup.ctl(['supervisor', 'stop']);
    expect(stopped.code, stopped.stderr).to.equal(0);
    await waitUntil(
      'nothing of ctl on the host',
      () => onHost('/srv/ctl-work').length === 0 && onHost(ON_HOST).length === 0,
    );
  });
});

interface BeadView {
  id: string;
  status: string;
  assignee?: string;
  metadata?: Record<string, string>;
}

// A host that dies mid-turn loses nothing (decisions.md: lost, fenced, never resurrected behind anyone's back): its
// session goes lost, the bead it held stays held until the host's fence has passed — its program there is certainly
// gone by then — and then goes back to the pool; once the host is back, a new session there takes the bead.
describe('a host that dies mid-turn (a real supervisor, a network-namespace host)', function () {
  this.timeout(180_000);
  let hosts: TestHosts;
  let host: TestHost;
  let city: SessionCity;

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    hosts = await makeHosts(1);
    [host] = hosts.hosts as [TestHost];
    host.put(ECHO_AGENT, ON_HOST);
    city = await startSessionCity(
      'fenced',
      `
${host.tomlTable()}
[providers.remote-echo]
command = "${ON_HOST}"
ready_prompt_prefix = "ready>"
env = { ECHO_READY = "ready>" }

[[agent]]
name = "worker"
provider = "remote-echo"
hosts = ["${host.name}"]
min_active_sessions = 1
max_active_sessions = 1
`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    await hosts?.cleanup();
  });

  it('goes lost, holds its bead until the fence, gives it back to the pool, and the host is used again', async function () {
    const sessions = async () => (await city.api.get<{ items: Listed[] }>('/sessions')).body.items;
    const first = await waitUntil('the worker running on the host', async () =>
      (await sessions()).find((s) => s.template === 'worker' && s.state === 'active'),
    );
    const job = await city.api.create({ title: 'remote job' });
    expect((await city.api.post('/sling', { target: 'worker', bead: job.id })).status).to.equal(200);
    const bead = async () => (await city.api.get<BeadView>(`/bead/${job.id}`)).body;
    await waitUntil('the bead held by the session', async () => (await bead()).status === 'in_progress');
    // Mid-turn: its program is busy when the host dies.
    await send(city.api, first.id, 'sleep 120');
    await waitUntil('the turn under way', async () => (await session(city.api, first.id)).activity === 'in-turn');
    await host.crash();

    const [lost] = await waitUntil('session.lost', async () => {
      const events = await city.api.events('session.lost');
      return events.length ? events : undefined;
    });
    const fenceUntil = Date.parse((lost.payload as { fence_until: string }).fence_until);
    expect((lost.payload as { host: string }).host).to.equal(host.name);
    expect((await session(city.api, first.id)).state).to.equal('lost');
    // Until the fence, the bead is the lost session's still: another start could run it twice.
    if (Date.now() < fenceUntil - 1000) expect((await bead()).status).to.equal('in_progress');
    await waitUntil(
      'the host down',
      async () => (await city.api.get<{ state: string }>(`/hosts/${host.name}`)).body.state === 'down',
    );
    const reopened = await waitUntil(
      'the bead back in the pool',
      async () => {
        const now = await bead();
        return now.status === 'open' ? now : undefined;
      },
      60_000,
    );
    expect(Date.now()).to.be.at.least(fenceUntil);
    expect(reopened.status).to.equal('open');
    // Nothing of the host's connection is left here either.
    expect(sshProcessesTo(host.ip)).to.deep.equal([]);

    await host.restart();
    host.put(ECHO_AGENT, ON_HOST);
    const checked = await city.api.post<{ state: string }>(`/hosts/${host.name}/check`, {});
    expect(checked.body.state).to.equal('up');
    const taken = await waitUntil(
      'a new session there holding the bead',
      async () => {
        const now = await bead();
        return now.status === 'in_progress' && now.metadata?.['ctl.assigned_session'] !== first.id ? now : undefined;
      },
      60_000,
    );
    expect(taken.metadata?.['ctl.assigned_session']).to.not.equal(first.id);
    // The lost one was not started again behind anyone's back.
    expect((await session(city.api, first.id)).state).to.equal('lost');
  });

  it('a partition: the session lost, its program ended on the host by the watchdog, nothing left, used again once healed', async function () {
    const sessions = async () => (await city.api.get<{ items: Listed[] }>('/sessions')).body.items;
    const running = await waitUntil('a worker running on the host', async () =>
      (await sessions()).find((s) => s.template === 'worker' && s.state === 'active'),
    );
    const programs = () => host.processes().filter((p) => p.args.includes(ON_HOST));
    await waitUntil('its program there', () => programs().length === 1);
    await host.partition();
    try {
      await waitUntil('the session lost', async () => (await session(city.api, running.id)).state === 'lost', 60_000);
      // Nothing answers the host's watchdog now: its deadline ends what ran there.
      await waitUntil('its program ended on the host', () => programs().length === 0, 60_000);
      // And then the watchdog itself: nothing of ctl's is left there.
      await waitUntil('nothing of ctl left on the host', () =>
        host.processes().every((p) => !p.args.includes('/srv/ctl-work')),
      );
    } finally {
      await host.heal();
    }
    expect((await city.api.post<{ state: string }>(`/hosts/${host.name}/check`, {})).body.state).to.equal('up');
    await waitUntil(
      'a new worker running there',
      async () =>
        (await sessions()).some((s) => s.template === 'worker' && s.state === 'active' && s.id !== running.id),
      60_000,
    );
    expect((await session(city.api, running.id)).state).to.equal('lost');
  });
});

/** This machine's ssh processes to `ip`, by their command lines. */
function sshProcessesTo(ip: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args[0] === 'ssh' && args.includes(ip)) found.push(args.join(' '));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}
