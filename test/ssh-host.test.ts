import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { HostConfig } from '../controller/hosts/host-config.js';
import type { HostProcess } from '../controller/hosts/host.js';
import { SshHost } from '../controller/hosts/ssh-host.js';
import { TmuxServer } from '../controller/sessions/tmux/tmux.js';
import { VERSION } from '../shared/version.js';
import { hostConfigOf } from './helpers/host-config-of.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import { UNASSIGNED_TEST_ADDRESS } from './helpers/netns-subnets.js';
import { tempDir } from './helpers/temp-dir.js';
import { waitUntil } from './helpers/wait.js';

// What only a host over OpenSSH has to get right, against network-namespace hosts (test/helpers/netns-hosts.ts):
// ctl shipped once per version, programs ended on the host when the controller's side goes (killed, partitioned),
// what a dead controller left reaped by the next, a crash seen at once, and a clear reason for every host that
// cannot be used — never a hang.
describe('a host over OpenSSH (SshHost)', function () {
  this.timeout(120_000);
  let hosts: TestHosts;
  let made: TestHost;
  let other: TestHost;
  let cityDir: string;
  const open: SshHost[] = [];
  const lost: string[] = [];

  const sshHost = (config: HostConfig = hostConfigOf(made), deadlineMs?: number): SshHost => {
    const host = new SshHost(config, {
      cityName: 'remote',
      cityRoot: cityDir,
      runtimeDir: join(cityDir, '.ctl'),
      onLost: (why) => lost.push(why),
      ...(deadlineMs ? { watchdogDeadlineMs: deadlineMs } : {}),
    });
    open.push(host);
    return host;
  };
  const onHost = (pattern: string) => made.processes().filter((p) => p.args.includes(pattern));
  const sleeper = async (host: SshHost, seconds: string): Promise<HostProcess> =>
    host.spawn({ argv: ['sleep', seconds], cwd: '/', env: {}, what: 'test sleeper' });

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    hosts = await makeHosts(2);
    [made, other] = hosts.hosts as [TestHost, TestHost];
  });

  beforeEach(function () {
    cityDir = tempDir('ctl-ssh-city-');
    lost.length = 0;
  });

  afterEach(async function () {
    await Promise.all(open.splice(0).map((host) => host.close()));
    rmSync(cityDir, { recursive: true, force: true });
    if (made && !made.alive()) await made.restart();
  });

  after(async function () {
    await hosts?.cleanup();
  });

  it('ships its Node and tools once per version, and says the versions and the round trip', async function () {
    const first = sshHost();
    const probe = await first.check();
    expect(probe).to.include({ ok: true, git: true, tmux: true, node_version: process.version });
    expect(probe.rtt_ms).to.be.a('number').above(0);
    // An agent's shell there has this build's ctl, with no node_modules and nothing of this machine's.
    expect(await first.run([first.ctl, '--version'], { timeoutMs: 20_000 })).to.include({ code: 0, stdout: VERSION });
    const listing = async () => (await made.exec('ls /srv/ctl-work/node /srv/ctl-work/ctl')).stdout;
    const shipped = await listing();
    await first.close();
    // Another controller of the city (or a restart) finds it there.
    const second = sshHost();
    expect((await second.check()).ok).to.equal(true);
    expect(await listing()).to.equal(shipped);
    expect(shipped.match(/^v\d+/gm)).to.have.length(1);
  });

  it("ends a program on the host when this side's connection is killed, as with a controller's kill -9", async function () {
    const host = sshHost();
    const p = await sleeper(host, '301');
    expect(onHost('sleep 301')).to.have.length(1);
    // Every ssh of this city's connection, as the kernel would end them with the controller.
    execFileSync('pkill', ['-KILL', '-f', join(cityDir, '.ctl')]);
    await waitUntil('the program gone from the host', () => onHost('sleep 301').length === 0);
    expect((await p.exited).signal).to.equal('SIGHUP');
    await waitUntil('the host said lost', () => lost.length > 0);
  });

  it('ends a program on the host when its link is partitioned, by the watchdog’s deadline; used again once healed', async function () {
    const host = sshHost(hostConfigOf(made), 3000);
    await sleeper(host, '302');
    await made.partition();
    try {
      await waitUntil('the program ended by the deadline', () => onHost('sleep 302').length === 0, 30_000);
      await waitUntil('the host said lost', () => lost.length > 0, 30_000);
    } finally {
      await made.heal();
    }
    expect((await host.check()).ok).to.equal(true);
    const again = await sleeper(host, '303');
    expect(onHost('sleep 303')).to.have.length(1);
    again.signal('SIGKILL');
  });

  it('reaps, as it prepares, what a controller whose watchdog died too left on the host', async function () {
    const host = sshHost();
    await sleeper(host, '304');
    // The watchdog killed on the host (say with its sshd): nothing there ends the program any more.
    await made.exec("pkill -KILL -f 'watchdog.js watch'");
    await waitUntil('the host said lost', () => lost.length > 0);
    expect(onHost('sleep 304')).to.have.length(1);
    await host.close();
    const next = sshHost();
    expect(await next.reap()).to.deep.equal([]);
    expect(onHost('sleep 304')).to.have.length(0);
  });

  it('sees a crash of the host at once, and the programs there end with it', async function () {
    const host = sshHost();
    const p = await sleeper(host, '305');
    await made.crash();
    expect((await p.exited).code).to.equal(null);
    await waitUntil('the host said lost', () => lost.length > 0);
    expect((await host.check()).ok).to.equal(false);
  });

  it("gives a person's terminal to the host through the same connection", async function () {
    const host = sshHost();
    await host.prepare();
    const [file, ...args] = host.terminal(['tty']);
    expect(file).to.equal('ssh');
    expect(args).to.include('-tt');
    const output = await new Promise<string>((resolve) => {
      const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      child.on('close', () => resolve(text));
      child.stdin.end();
    });
    // A terminal of its own there, as tmux attach needs.
    expect(output).to.match(/^\/dev\/pts\/\d+/);
  });

  it('runs tmux there over one control channel: a session made, typed into, read and ended', async function () {
    const host = sshHost();
    await host.prepare();
    const tmux = new TmuxServer(host.tmuxSocket(), host);
    await tmux.run([
      'new-session',
      '-d',
      '-s',
      'ctl-t1',
      '-x',
      '80',
      '-y',
      '24',
      '--',
      'cat',
      ';',
      'set-option',
      '-t',
      'ctl-t1',
      'remain-on-exit',
      'on',
    ]);
    await tmux.type('ctl-t1', "it's typed");
    await tmux.sendKeys('ctl-t1', ['Enter']);
    await waitUntil('the screen to show it', async () => (await tmux.capture('ctl-t1')).includes("it's typed"));
    // One client for every command: the screen reads made no ssh command each.
    // (The tmux server forked from the first client keeps its command line, and its parent is the host's init.)
    expect(onHost('-C new-session').filter((p) => p.ppid !== 1)).to.have.length(1);
    let refused: Error | undefined;
    await tmux.capture('ctl-nosuch').catch((err: Error) => (refused = err));
    expect(refused?.message).to.match(/can't find pane: ctl-nosuch/);
    await tmux.run(['kill-session', '-t', 'ctl-t1']);
    expect(await tmux.run(['list-sessions', '-F', '#{session_name}'])).to.equal('ctl-control');
  });

  it('says a host without git cannot be used, and one without tmux that it has none', async function () {
    // Hidden inside the host's own mounts: what a host without them is like.
    await made.exec('mount --bind /dev/null /usr/bin/git && mount --bind /dev/null /usr/bin/tmux');
    try {
      const probe = await sshHost().check();
      expect(probe).to.include({ ok: false, git: false, tmux: false });
      expect(probe.error).to.equal('git is not installed on the host (ctl needs it there)');
    } finally {
      await made.exec('umount /usr/bin/git; umount /usr/bin/tmux');
    }
  });

  it('says why a host cannot be used: a wrong host key, no answer, a key that is not there — never a hang', async function () {
    // The other host's key under this host's address: what a host that was replaced (or an impostor) shows.
    const impostor = join(cityDir, 'impostor-known-hosts');
    writeFileSync(impostor, readFileSync(other.knownHostsFile, 'utf8').replaceAll(other.ip, made.ip));
    const wrongKey = await sshHost(hostConfigOf(made, { known_hosts: impostor })).check();
    expect(wrongKey).to.include({ ok: false });
    expect(wrongKey.error).to.match(/host's key does not match its known_hosts/);
    expect(onHost('watchdog')).to.have.length(0);

    const nobody = await sshHost(hostConfigOf(made, { hostname: UNASSIGNED_TEST_ADDRESS })).check();
    expect(nobody.ok).to.equal(false);
    expect(nobody.error).to.match(/connect to host 10.200.250.1 port 2222|timed out/);

    const noKeyFile = join(cityDir, 'no-such-key');
    const noKey = await sshHost(hostConfigOf(made, { identity_file: noKeyFile })).check();
    expect(noKey.ok).to.equal(false);
    expect(noKey.error).to.match(/Permission denied|not accessible/);

    writeFileSync(join(cityDir, 'empty-known-hosts'), '');
    const unknown = await sshHost(hostConfigOf(made, { known_hosts: join(cityDir, 'empty-known-hosts') })).check();
    expect(unknown.ok).to.equal(false);
    expect(unknown.error).to.match(/host's key is not in its known_hosts \(No ED25519 host key is known for/);
  });
});
