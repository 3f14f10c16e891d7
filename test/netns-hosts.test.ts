import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { hostsUnavailable, makeHosts, type TestHosts } from './helpers/netns-hosts.js';
import { waitUntil } from './helpers/wait.js';

const run = promisify(execFile);

async function ssh(
  host: TestHosts['hosts'][number],
  command: string,
  extra: string[] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // ssh keeps the first value it is given for an option: the test's own go first.
    const { stdout, stderr } = await run('ssh', [...extra, ...host.sshOptions(), `root@${host.ip}`, command]);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

async function ours(): Promise<string> {
  const { stdout } = await run('ip', ['netns', 'list']);
  return stdout;
}

describe('remote test hosts (network namespaces with their own sshd)', function () {
  let made: TestHosts | undefined;

  before(function () {
    // Skipped, saying why, where hosts cannot be made (not root, or no sshd/nft: `.ci/run` installs them).
    const why = hostsUnavailable();
    if (why) {
      console.log(`      skipped: ${why}`);
      this.skip();
    }
  });

  afterEach(async function () {
    await made?.cleanup();
    made = undefined;
  });

  it('answers over ssh as hosts of their own: own hostname, own process table, the checkout hidden', async function () {
    made = await makeHosts(2);
    const [a, b] = made.hosts;
    const answers = await Promise.all(
      [a, b].map((h) => ssh(h, `hostname; test -d ${packageRoot} && echo seen || echo hidden; echo $$`)),
    );
    expect(answers.map((r) => r.code)).to.deep.equal([0, 0]);
    expect(answers.map((r) => r.stdout.split('\n').slice(0, 2))).to.deep.equal([
      ['h0', 'hidden'],
      ['h1', 'hidden'],
    ]);
    const table = await a.processes();
    expect(table.find((p) => p.pid === 1)?.args).to.match(/sshd/);
  });

  it('refuses a host key that does not match', async function () {
    made = await makeHosts(2);
    const [a, b] = made.hosts;
    const wrong = await ssh(a, 'true', ['-o', `UserKnownHostsFile=${b.knownHostsFile}`]);
    expect(wrong.code).to.equal(255);
    expect(wrong.stderr).to.match(/Host key verification failed|REMOTE HOST IDENTIFICATION/);
  });

  it('partitions and heals; a crash ends everything on the host', async function () {
    made = await makeHosts(1);
    const [h] = made.hosts;
    await h.partition();
    const cut = await ssh(h, 'true', ['-o', 'ConnectTimeout=2']);
    expect(cut.code).to.equal(255);
    await h.heal();
    expect((await ssh(h, 'true')).code).to.equal(0);
    await ssh(h, 'setsid sleep 300 >/dev/null 2>&1 < /dev/null &');
    await waitUntil('the sleep to run on the host', async () =>
      (await h.processes()).some((p) => p.args === 'sleep 300'),
    );
    await h.crash();
    expect((await h.exec('true')).code).to.equal(255);
  });

  it('keeps every address inside the blackholed range, and leaves nothing once cleaned up', async function () {
    made = await makeHosts(1);
    const [h] = made.hosts;
    const out = await h.exec('ip route get 192.0.2.1 2>&1 || true');
    expect(out.stdout).to.match(/unreachable|No route/);
    const { stdout } = await run('ip', ['route', 'show', '10.200.0.0/16']);
    expect(stdout).to.match(/^blackhole 10\.200\.0\.0\/16/);
    const namespace = h.namespace;
    expect((await ours()).split('\n').some((line) => line.startsWith(`${namespace} `))).to.equal(true);
    await made.cleanup();
    made = undefined;
    // Only this test's own: a parallel worker's hosts may be there meanwhile.
    expect((await ours()).split('\n').some((line) => line.startsWith(`${namespace} `))).to.equal(false);
    const links = (await run('ip', ['-br', 'link'])).stdout;
    expect(links).to.not.match(new RegExp(`^ctlv${namespace.slice(4)}\\b`, 'm'));
  });
});
