import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { controllerPid } from './helpers/controller-pid.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import { deliver, session, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
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
});
