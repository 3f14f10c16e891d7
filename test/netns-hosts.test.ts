import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import { holdsLease, UNASSIGNED_TEST_ADDRESS } from './helpers/netns-subnets.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import { waitUntil } from './helpers/wait.js';

// The fake remote hosts the OpenSSH runtime's tests run on (helpers/netns-hosts.ts): that each is a host of its own
// reached only over its address, that its faults are what they claim, and that nothing of them outlives cleanup.

const CHECKOUT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Why these tests cannot run here (not root, sshd, nft or unshare missing), shown in their titles. */
const unavailable = hostsAvailable();
const skipped = unavailable ? ` (skipped: ${unavailable})` : '';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function runProgram(program: string, args: string[]): Promise<Result> {
  return new Promise((resolvePromise) => {
    execFile(program, args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      resolvePromise({
        code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
        stdout,
        stderr,
      });
    });
  });
}

/** The real ssh client, as the product will run it: no config, the host's key checked, no prompt. */
function ssh(host: TestHost, command: string, options: { connectTimeout?: number; knownHosts?: string } = {}) {
  const args = host.sshOptions(options.connectTimeout);
  if (options.knownHosts) {
    const at = args.indexOf(`UserKnownHostsFile=${host.knownHostsFile}`);
    expect(at).to.be.above(0);
    args[at] = `UserKnownHostsFile=${options.knownHosts}`;
  }
  return runProgram('ssh', [...args, command]);
}

describe(`test hosts in network namespaces${skipped}`, function () {
  let made: TestHosts;
  let one: TestHost;
  let two: TestHost;

  before(async function () {
    if (unavailable) this.skip(); // the reason is in the describe's title
    made = await makeHosts(2, [{ slots: 2, labels: ['gpu'] }, {}]);
    [one, two] = made.hosts;
  });

  after(async function () {
    await made?.cleanup();
  });

  it('answers ssh on each host with that host’s own hostname and process table', async function () {
    const [first, second] = await Promise.all([ssh(one, 'hostname; echo $$'), ssh(two, 'hostname')]);
    expect(first.code, first.stderr).to.equal(0);
    expect(second.code, second.stderr).to.equal(0);
    const [firstName, shellPid] = first.stdout.trim().split('\n');
    expect(firstName).to.equal(one.name);
    expect(second.stdout.trim()).to.equal(two.name);
    expect(one.name).to.not.equal(two.name);
    // Its own pid namespace: sshd is pid 1 there, and the shell's pid is one of the host's, not this machine's.
    expect(one.processes().find((entry) => entry.pid === 1)?.comm).to.equal('sshd');
    expect(Number(shellPid)).to.be.below(1000);
    expect(one.address).to.equal(`ssh://root@${one.ip}:2222`);
  });

  it('hides the checkout, this machine’s /tmp and root’s home from the host', async function () {
    expect(existsSync(join(CHECKOUT, 'package.json'))).to.equal(true);
    const probe = `for p in ${join(CHECKOUT, 'package.json')} ${one.dir} /root/.ssh; do test -e "$p" && echo "seen $p"; done; echo probed`;
    const overSsh = await ssh(one, probe);
    expect(overSsh.code, overSsh.stderr).to.equal(0);
    expect(overSsh.stdout.trim()).to.equal('probed');
    const inside = await one.exec(`${probe}; test -d ${one.workRoot} && echo work-root`);
    expect(inside.stdout.trim().split('\n')).to.deep.equal(['probed', 'work-root']);
  });

  it('refuses a host whose key is not the known one', async function () {
    // Host two's key under host one's address: what a man in the middle would show.
    const wrong = join(made.dir, 'wrong_known_hosts');
    writeFileSync(wrong, readFileSync(two.knownHostsFile, 'utf8').replace(`[${two.ip}]`, `[${one.ip}]`));
    const refused = await ssh(one, 'true', { knownHosts: wrong });
    expect(refused.code).to.equal(255);
    expect(refused.stderr).to.match(/host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/i);
  });

  it('a partition makes ssh time out, and healing it lets ssh through again', async function () {
    await one.partition();
    try {
      const cut = await ssh(one, 'true', { connectTimeout: 2 });
      expect(cut.code).to.equal(255);
      expect(cut.stderr).to.match(/timed out/i);
      // The host itself runs on and is reachable from this side, not over the network.
      expect((await one.exec('hostname')).stdout.trim()).to.equal(one.name);
      // The other host is not partitioned.
      expect((await ssh(two, 'hostname')).stdout.trim()).to.equal(two.name);
    } finally {
      await one.heal();
    }
    const healed = await ssh(one, 'hostname');
    expect(healed.code, healed.stderr).to.equal(0);
    expect(healed.stdout.trim()).to.equal(one.name);
  });

  it('reaches nothing outside the test range, and the range leaves by no route', async function () {
    const outside = await one.exec('ip route get 1.1.1.1');
    expect(outside.code).to.not.equal(0);
    expect(outside.stderr).to.match(/unreachable/i);
    const routes = await runProgram('ip', ['route', 'show', '10.200.0.0/16']);
    expect(routes.stdout).to.match(/^blackhole 10\.200\.0\.0\/16/m);
    const lookup = await runProgram('ip', ['route', 'get', UNASSIGNED_TEST_ADDRESS]);
    expect(lookup.code).to.not.equal(0);
    // A connection to an address no host has fails at once with the blackhole's EINVAL, not after a timeout.
    const failure = await new Promise<NodeJS.ErrnoException>((resolvePromise, reject) => {
      const socket = connect(2222, UNASSIGNED_TEST_ADDRESS);
      socket.once('connect', () => reject(new Error(`connected to ${UNASSIGNED_TEST_ADDRESS}`)));
      socket.once('error', resolvePromise);
    });
    expect(failure.code).to.equal('EINVAL');
  });

  it('gives a [[host]] table for city.toml', function () {
    expect(one.tomlTable()).to.equal(
      [
        '[[host]]',
        `name = "${one.name}"`,
        `address = "ssh://root@${one.ip}:2222"`,
        `identity_file = "${one.identityFile}"`,
        `known_hosts = "${one.knownHostsFile}"`,
        'slots = 2',
        'labels = ["gpu"]',
        'work_root = "/srv/ctl-work"',
        '',
      ].join('\n'),
    );
    expect(two.tomlTable()).to.contain('slots = 1\nlabels = []\n');
  });
});

describe(`a test host crashed and restarted${skipped}`, function () {
  let made: TestHosts;

  before(function () {
    if (unavailable) this.skip(); // the reason is in the describe's title
  });

  afterEach(async function () {
    await made?.cleanup();
  });

  it('ends every process on the host when it crashes, and answers again once restarted', async function () {
    made = await makeHosts(1);
    const [host] = made.hosts;
    const started = await ssh(host, 'nohup sleep 300 >/dev/null 2>&1 & echo $!');
    expect(started.code, started.stderr).to.equal(0);
    // The background job is a shell for a moment, then nohup, then sleep.
    const sleeper = await waitUntil('the sleep started over ssh in the host’s process table', () =>
      host.processes().find((entry) => entry.pid === Number(started.stdout.trim()) && entry.comm === 'sleep'),
    );
    const pid1 = host.processes().find((entry) => entry.pid === 1)!.rootPid;

    await host.crash();
    expect(host.alive()).to.equal(false);
    expect(host.processes()).to.deep.equal([]);
    expect(isAlive(pid1)).to.equal(false);
    expect(isAlive(sleeper.rootPid)).to.equal(false);
    const down = await ssh(host, 'true', { connectTimeout: 2 });
    expect(down.code).to.equal(255);
    let refused: unknown;
    try {
      await host.exec('true');
    } catch (err) {
      refused = err;
    }
    expect(String(refused)).to.match(/not running/);

    await host.restart();
    expect(host.alive()).to.equal(true);
    const back = await ssh(
      host,
      `hostname; test -e ${host.workRoot} && echo work-root; pgrep -x sleep || echo no-sleep`,
    );
    expect(back.code, back.stderr).to.equal(0);
    expect(back.stdout.trim().split('\n')).to.deep.equal([host.name, 'work-root', 'no-sleep']);
  });

  it('leaves no namespace, veth, sshd, subnet or file behind after cleanup, crashed or not, called twice', async function () {
    made = await makeHosts(2);
    const [crashed, running] = made.hosts;
    await crashed.crash();
    const ran = running.processes().map((entry) => entry.rootPid);
    expect(ran).to.not.deep.equal([]);
    await made.cleanup();
    await made.cleanup();

    const namespaces = (await runProgram('ip', ['netns', 'list'])).stdout;
    const links = (await runProgram('ip', ['-o', 'link', 'show'])).stdout;
    for (const host of made.hosts) {
      expect(namespaces).to.not.match(new RegExp(`^${host.name}\\b`, 'm'));
      expect(links).to.not.match(new RegExp(`: ${host.lease.veth}@`));
      expect(holdsLease(host.lease.index)).to.equal(false);
      expect(host.alive()).to.equal(false);
    }
    expect(ran.filter((pid) => isAlive(pid))).to.deep.equal([]);
    expect(processesMentioning(made.dir)).to.deep.equal([]);
    expect(existsSync(made.dir)).to.equal(false);
  });
});
