import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem, type Envelope } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import { leaseSubnet, releaseSubnet, UNASSIGNED_TEST_ADDRESS, type SubnetLease } from './helpers/netns-subnets.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { freePort, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

interface Host {
  name: string;
  address: string;
  state: 'up' | 'down' | 'unknown';
  slots: number | null;
  used: number;
  labels: string[];
  work_root?: string;
  source?: string;
  rtt_ms?: number;
  node_version?: string;
  ctl_version?: string;
  git?: boolean;
  tmux?: boolean;
  last_error?: string;
  checked_at?: string;
}

interface Agent {
  name: string;
  unplaceable_reason?: string;
  wait_reason?: string;
  session_count: number;
}

// The hosts a city has, as a person sees them: [[host]] tables read and checked (bad ones named by validate),
// each host's state over HTTP and the CLI, the events of its changes, agents that cannot be placed saying why, and
// every session's host. Hosts here are unreachable (a closed port, an address the test range blackholes) or, where
// this machine can make them, network-namespace hosts with their own sshd (one that answers and takes a session; a
// host key that does not match; a partition).
describe('hosts (a real supervisor and city, [[host]] tables)', function () {
  this.timeout(120_000);
  let city: SessionCity;
  let closedPort: number;
  /** Holds the test range's blackhole route (root only): what is sent to an unassigned address there is refused. */
  let lease: SubnetLease | undefined;

  before(async function () {
    closedPort = await freePort();
    if (process.getuid?.() === 0) lease = leaseSubnet();
    const dark = lease
      ? `[[host]]\nname = "dark"\naddress = "ssh://root@${UNASSIGNED_TEST_ADDRESS}"\nslots = 3\nlabels = ["far"]\n`
      : '';
    city = await startSessionCity(
      'hosted',
      `
[[host]]
name = "refused"
address = "ssh://nobody@127.0.0.1:${closedPort}"
slots = 2
labels = ["far"]
work_root = "/srv/ctl"
${dark}
[[host]]
name = "broken"
address = "build.example"

[[host]]
name = "nokey"
address = "ssh://me@127.0.0.1:${closedPort}"
identity_file = "keys/missing"

[[agent]]
name = "here"

[[agent]]
name = "away"
hosts = ["refused"]

[[agent]]
name = "nowhere"
hosts = ["gpu"]
min_active_sessions = 0
`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    if (lease) releaseSubnet(lease);
  });

  const host = async (name: string) => (await city.api.get<Host>(`/hosts/${name}`)).body;
  const agent = async (name: string) => (await city.api.get<Agent>(`/agent/${name}`)).body;

  it('lists local, then each good [[host]]; a bad one is named by validate and left out', async function () {
    const list = await city.api.get<{ items: Host[]; total: number }>('/hosts');
    expect(list.status).to.equal(200);
    expect(list.body.items.map((h) => h.name)).to.deep.equal(['local', 'refused', ...(lease ? ['dark'] : [])]);
    expect(list.body.total).to.equal(lease ? 3 : 2);
    expect(list.body.items[0]).to.deep.include({ name: 'local', address: 'local', state: 'up', slots: null });
    expect(list.body.items[1]).to.deep.include({
      name: 'refused',
      address: `ssh://nobody@127.0.0.1:${closedPort}`,
      slots: 2,
      used: 0,
      labels: ['far'],
      work_root: '/srv/ctl',
      source: 'city.toml',
    });
    const page = await city.api.get<{ items: Host[]; next_cursor?: string }>('/hosts?limit=1');
    expect(page.body.items.map((h) => h.name)).to.deep.equal(['local']);
    const rest = await city.api.get<{ items: Host[] }>(`/hosts?cursor=${page.body.next_cursor}`);
    expect(rest.body.items[0]?.name).to.equal('refused');

    const validate = await city.api.get<{ valid: boolean; errors: { file: string; key?: string; message: string }[] }>(
      '/config/validate',
    );
    expect(validate.body.valid).to.equal(false);
    const messages = validate.body.errors.map((e) => e.message);
    expect(messages).to.include(
      `city.toml: host[${lease ? 2 : 1}].address must be ssh://user@host[:port] (got "build.example")`,
    );
    expect(messages.find((m) => m.includes('identity_file'))).to.equal(
      `city.toml: host[${lease ? 3 : 2}].identity_file ${join(city.dir, 'keys/missing')} does not exist`,
    );
    expect(messages).to.include(
      `agent nowhere: hosts names gpu, which no [[host]] is named or labelled (the city has local, refused, ${lease ? 'dark, ' : ''}far)`,
    );
    const cli = await city.sup.ctl(['--city', 'hosted', 'config', 'validate']);
    expect(cli.code).to.equal(1);
    expect(cli.stdout + cli.stderr).to.include('host[');
  });

  it('a host nobody answers at is down with ssh’s reason, recorded once as host.down; a check never hangs', async function () {
    const refused = await waitUntil('refused checked', async () => {
      const h = await host('refused');
      return h.state !== 'unknown' ? h : undefined;
    });
    expect(refused.state).to.equal('down');
    expect(refused.last_error).to.equal(`ssh: connect to host 127.0.0.1 port ${closedPort}: Connection refused`);
    expect(refused.checked_at).to.be.a('string');
    const checked = await city.api.post<Host>('/hosts/refused/check');
    expect(checked.status).to.equal(200);
    expect(checked.body).to.include({ state: 'down', last_error: refused.last_error });
    expect(Date.parse(checked.body.checked_at!)).to.be.at.least(Date.parse(refused.checked_at!));
    if (lease) {
      const dark = await city.api.post<Host>('/hosts/dark/check');
      expect(dark.body).to.include({ state: 'down' });
      expect(dark.body.last_error).to.match(
        new RegExp(`^ssh: connect to host ${UNASSIGNED_TEST_ADDRESS.replaceAll('.', '\\.')} port 22: `),
      );
    }
    const events = await city.api.get<{ items: Envelope[] }>('/events?limit=1000');
    const downs = events.body.items.filter((e) => e.type === 'host.down' && e.subject === 'refused');
    expect(downs.map((e) => e.payload)).to.deep.equal([
      { host: 'refused', address: `ssh://nobody@127.0.0.1:${closedPort}`, reason: refused.last_error },
    ]);
    expect(downs[0].message).to.equal(`host refused is down: ${refused.last_error}`);
  });

  it('an agent whose hosts cannot take a session says why; one without hosts runs here, its session’s host local', async function () {
    const away = await waitUntil('away unplaceable for refused being down', async () => {
      const a = await agent('away');
      return a.unplaceable_reason?.includes('is down') ? a : undefined;
    });
    expect(away.unplaceable_reason).to.equal(
      `no host in its hosts = [refused] can take a session: refused is down (ssh: connect to host 127.0.0.1 port ${closedPort}: Connection refused)`,
    );
    expect(away.session_count).to.equal(0);
    // A person asking for one is told the same, and no session is made.
    const asked = expectProblem(
      await city.api.post('/sessions', { kind: 'agent', name: 'away' }),
      409,
      'conflict-wrong-state',
    );
    expect(asked.detail).to.equal(`conflict: agent away cannot be placed: ${away.unplaceable_reason}`);
    expect((await agent('away')).session_count).to.equal(0);
    const sessions = await waitUntil('here’s session', async () => {
      const s = await city.api.get<{ items: { template: string; host: string; id: string }[] }>('/sessions');
      return s.body.items.some((x) => x.template === 'here') ? s.body.items : undefined;
    });
    expect(sessions.map((s) => [s.template, s.host])).to.deep.equal([['here', 'local']]);
    const one = await city.api.get<{ host: string }>(`/session/${sessions[0].id}`);
    expect(one.body.host).to.equal('local');
    await waitUntil('local counts it', async () => ((await host('local')).used === 1 ? true : undefined));

    const listed = expectSuccess(await city.sup.ctl(['--city', 'hosted', 'session', 'list']));
    expect(listed[0]).to.match(/^ID\s+NAME\s+TEMPLATE\s+STATE\s+HOST\s+ACTIVITY\s+PID\s+TITLE$/);
    expect(listed[1]).to.match(/\shere\s+\S+\s+local\s/);
    const agents = expectSuccess(await city.sup.ctl(['--city', 'hosted', 'agent', 'show', 'away', '--json']));
    expect(JSON.parse(agents.join('\n'))).to.include({ unplaceable_reason: away.unplaceable_reason });
  });

  it('ctl host list, show and check over the real API; an unknown host is a 404 and one stderr line', async function () {
    const list = expectSuccess(await city.sup.ctl(['--city', 'hosted', 'host', 'list']));
    // No host has answered a check: the round-trip column, empty, is left out.
    expect(list[0]).to.match(/^NAME\s+STATE\s+USED\s+LABELS\s+ADDRESS\s+LAST ERROR$/);
    expect(list[1]).to.match(/^local\s+up\s+1 \(no limit\)\s+-\s+local\s+-$/);
    expect(list[2]).to.match(
      new RegExp(
        `^refused\\s+down\\s+0 of 2\\s+far\\s+ssh://nobody@127\\.0\\.0\\.1:${closedPort}\\s+ssh: connect to host`,
      ),
    );
    const show = expectSuccess(await city.sup.ctl(['--city', 'hosted', 'host', 'show', 'refused'])).map((l) =>
      l.replace(/:\s+/, ': '),
    );
    expect(show.slice(0, 6)).to.deep.equal([
      'Name: refused',
      `Address: ssh://nobody@127.0.0.1:${closedPort}`,
      'State: down',
      'Slots used: 0 of 2',
      'Labels: far',
      'Work root: /srv/ctl',
    ]);
    // It never answered: nothing is said of its git or tmux.
    expect(show.filter((l) => /^(git|tmux):/.test(l))).to.deep.equal([]);
    expect(show.find((l) => l.startsWith('Last error:'))).to.match(/Connection refused$/);
    const check = JSON.parse(
      expectSuccess(await city.sup.ctl(['--city', 'hosted', 'host', 'check', 'refused', '--json'])).join('\n'),
    ) as Host;
    expect(check).to.include({ name: 'refused', state: 'down' });
    expectProblem(await city.api.get('/hosts/nope'), 404, 'host-not-found');
    expectProblem(await city.api.post('/hosts/nope/check'), 404, 'host-not-found');
    expectFailure(
      await city.sup.ctl(['--city', 'hosted', 'host', 'show', 'nope']),
      'host show',
      /host not found: nope/,
    );
    expectFailure(
      await city.sup.ctl(['--city', 'hosted', 'host', 'check', 'nope']),
      'host check',
      /host not found: nope/,
    );
  });

  it('follows city.toml: a host removed leaves the list, an agent naming it is then named by validate', async function () {
    const file = join(city.dir, 'city.toml');
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace(/\[\[host\]\]\nname = "refused"[^[]*/, ''));
    await waitUntil('refused gone', async () => {
      const list = await city.api.get<{ items: Host[] }>('/hosts');
      return list.body.items.some((h) => h.name === 'refused') ? undefined : true;
    });
    expectProblem(await city.api.get('/hosts/refused'), 404, 'host-not-found');
    const validate = await city.api.get<{ errors: { message: string }[] }>('/config/validate');
    expect(validate.body.errors.map((e) => e.message).find((m) => m.startsWith('agent away:'))).to.match(
      /hosts names refused, which no \[\[host\]\] is named or labelled/,
    );
    const away = await waitUntil('away unplaceable for refused being gone', async () => {
      const a = await agent('away');
      return a.unplaceable_reason?.includes('names no host') ? a : undefined;
    });
    expect(away.unplaceable_reason).to.equal(
      "no host in its hosts = [refused] can take a session: refused names no host and no host's label",
    );
  });
});

const unavailable = hostsAvailable();
describe(`hosts reached over OpenSSH (network-namespace hosts${unavailable ? `; skipped: ${unavailable}` : ''})`, function () {
  this.timeout(120_000);
  let made: TestHosts;
  let target: TestHost;
  let city: SessionCity;
  let wrongKeys: string;

  before(async function () {
    if (unavailable) this.skip(); // the reason is in the describe's title
    made = await makeHosts(1, { slots: 2, labels: ['box'] });
    target = made.hosts[0]!;
    // Another host's key for the same address: what a host replaced (or a man in the middle) shows.
    const other = tempDir('ctl-hostkey-');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(other, 'key')]);
    wrongKeys = join(other, 'known_hosts');
    const otherKey = readFileSync(join(other, 'key.pub'), 'utf8').split(' ').slice(0, 2).join(' ');
    writeFileSync(wrongKeys, `[${target.ip}]:${target.port} ${otherKey}\n`);
    const impostor = target
      .tomlTable()
      .replace(`name = ${JSON.stringify(target.name)}`, 'name = "impostor"')
      .replace(JSON.stringify(target.knownHostsFile), JSON.stringify(wrongKeys))
      .replace('labels = ["box"]', 'labels = []');
    city = await startSessionCity(
      'remote',
      `\n${target.tomlTable()}\n${impostor}\n[[agent]]\nname = "boxed"\nhosts = ["box"]\n`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    await made?.cleanup();
  });

  it('a host key that does not match is down, saying so, and nothing ran there', async function () {
    const impostor = await waitUntil('impostor checked', async () => {
      const h = (await city.api.get<Host>('/hosts/impostor')).body;
      return h.state !== 'unknown' ? h : undefined;
    });
    expect(impostor.state).to.equal('down');
    expect(impostor.last_error).to.match(/^the host's key does not match its known_hosts .*: nothing was run$/);
    expect(impostor, 'nothing was run there: nothing is said of its git').not.to.have.property('git');
  });

  it('a host that answers is up, with its round trip, versions, git and tmux, and takes its agent’s session', async function () {
    const up = await waitUntil('the host up', async () => {
      const h = (await city.api.get<Host>(`/hosts/${target.name}`)).body;
      return h.state === 'up' ? h : undefined;
    });
    expect(up).to.include({ git: true, tmux: true, slots: 2 });
    expect(up).not.to.have.property('last_error');
    expect(up.rtt_ms).to.be.a('number');
    expect(up.node_version).to.equal(process.version);
    expect(up.ctl_version).to.be.a('string');
    const checked = (await city.api.post<Host>(`/hosts/${target.name}/check`)).body;
    expect(checked.state).to.equal('up');
    const events = await city.api.get<{ items: Envelope[] }>('/events?limit=1000');
    expect(events.body.items.filter((e) => e.type === 'host.up').map((e) => e.subject)).to.deep.equal([target.name]);
    // The agent's hosts name the label: its session is placed on the host that has it.
    const placed = await waitUntil('boxed’s session placed', async () => {
      const list = await city.api.get<{ items: { template: string; host: string }[] }>('/sessions?state=all');
      return list.body.items.find((x) => x.template === 'boxed');
    });
    expect(placed.host).to.equal(target.name);
  });

  it('a host partitioned away is down once its check gives up, never a hang; ctl host check waits for it', async function () {
    // Bounded by the host's own limits and the registry's (30 s): a hang fails this test's time-out.
    this.timeout(45_000);
    await target.partition();
    try {
      // Through the CLI, whose usual answer time-out (10 s) is shorter than such a check may take.
      const out = await city.sup.ctl(['--city', 'remote', 'host', 'check', target.name, '--json']);
      const checked = JSON.parse(expectSuccess(out).join('\n')) as Host;
      expect(checked.state).to.equal('down');
      // The watchdog's ping unanswered, or the connection's keep-alive ending it first: either said so.
      expect(checked.last_error).to.match(/no answer from the host's watchdog|connection/);
    } finally {
      await target.heal();
    }
  });
});
