import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { packageRoot } from '../../shared/paths.js';
import { tempDir } from './temp-dir.js';
import { waitUntil } from './wait.js';

// Remote hosts for tests, on this machine: each a network namespace with a veth pair and addresses only inside
// 10.200.0.0/16 (blackholed as a whole, so nothing can leave by the default route), its own sshd with generated
// keys, and its own pid, mount and uts namespaces, with the checkout's parent and /srv hidden under tmpfs — so a
// runtime that assumes shared paths, local pids or local signals fails there. Modelled on
// ../shared/reference/ssh-netns-host.sh.

const run = promisify(execFile);
const RANGE = '10.200.0.0/16';
const PORT = 2222;
/** Subnet leases across mocha's parallel workers: one file per /24 third octet, holding its owner's pid. */
const LEASES = join(tmpdir(), 'ctl-netns-leases');

/** Why remote test hosts cannot be made here, or undefined when they can. */
export function hostsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'remote test hosts need root (network namespaces)';
  for (const tool of ['/usr/sbin/sshd', '/usr/bin/ssh', '/usr/sbin/nft', '/usr/bin/unshare', '/usr/bin/nsenter']) {
    if (!existsSync(tool)) return `remote test hosts need ${tool} (openssh-server, openssh-client, nftables)`;
  }
  return undefined;
}

export interface TestHost {
  name: string;
  /** Its network namespace (`ip netns`). */
  namespace: string;
  ip: string;
  port: number;
  /** `ssh://root@ip:port`. */
  address: string;
  identityFile: string;
  knownHostsFile: string;
  /** Inside the host's own tmpfs. */
  workRoot: string;
  /** `ssh` options that reach it (keys checked, no prompts). */
  sshOptions(): string[];
  /** A shell command run inside the host's namespaces (not over ssh: it works while partitioned). */
  exec(command: string): Promise<{ code: number; stdout: string; stderr: string }>;
  /** The host's process table. */
  processes(): Promise<{ pid: number; pgid: number; args: string }[]>;
  partition(): Promise<void>;
  heal(): Promise<void>;
  /** SIGKILL of its pid 1: everything on it dies. */
  crash(): Promise<void>;
}

interface HostState extends TestHost {
  ns: string;
  veth: string;
  lease: string;
  init: ChildProcess | undefined;
}

export interface TestHosts {
  hosts: TestHost[];
  cleanup(): Promise<void>;
}

/** Makes `count` hosts; `cleanup` removes every namespace, process and file they made. */
export async function makeHosts(count: number): Promise<TestHosts> {
  const dir = tempDir('ctl-netns-');
  const made: HostState[] = [];
  try {
    await run('ip', ['route', 'replace', 'blackhole', RANGE, 'metric', '4000']);
    for (let i = 0; i < count; i++) made.push(await makeHost(dir, i));
  } catch (err) {
    await removeAll(made, dir);
    throw err;
  }
  return { hosts: made, cleanup: () => removeAll(made, dir) };
}

async function makeHost(dir: string, index: number): Promise<HostState> {
  const { octet, lease } = takeLease();
  const ns = `ctlt${octet}`;
  const veth = `ctlv${octet}`;
  const ip = `10.200.${octet}.2`;
  const home = join(dir, `h${index}`);
  mkdirSync(home, { recursive: true });
  await run('ip', ['netns', 'add', ns]);
  await run('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', `${veth}p`]);
  await run('ip', ['link', 'set', `${veth}p`, 'netns', ns]);
  await run('ip', ['addr', 'add', `10.200.${octet}.1/30`, 'dev', veth]);
  await run('ip', ['link', 'set', veth, 'up']);
  await run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
  await run('ip', ['netns', 'exec', ns, 'ip', 'addr', 'add', `${ip}/30`, 'dev', `${veth}p`]);
  await run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', `${veth}p`, 'up']);
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(home, 'host_key')]);
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(home, 'id')]);
  writeFileSync(join(home, 'authorized_keys'), readFileSync(join(home, 'id.pub')));
  const hostKey = readFileSync(join(home, 'host_key.pub'), 'utf8').split(' ').slice(0, 2).join(' ');
  writeFileSync(join(home, 'known_hosts'), `[${ip}]:${PORT} ${hostKey}\n`);
  writeFileSync(
    join(home, 'sshd_config'),
    [
      `Port ${PORT}`,
      `ListenAddress ${ip}`,
      `HostKey ${join(home, 'host_key')}`,
      'PidFile none',
      `AuthorizedKeysFile ${join(home, 'authorized_keys')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      'AllowTcpForwarding yes',
      'AllowStreamLocalForwarding yes',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true });
  const state: HostState = {
    name: `h${index}`,
    namespace: ns,
    ip,
    port: PORT,
    address: `ssh://root@${ip}:${PORT}`,
    identityFile: join(home, 'id'),
    knownHostsFile: join(home, 'known_hosts'),
    workRoot: '/srv/ctl-work',
    ns,
    veth,
    lease,
    init: undefined,
    sshOptions: () => [
      '-F',
      '/dev/null',
      '-i',
      join(home, 'id'),
      '-o',
      `UserKnownHostsFile=${join(home, 'known_hosts')}`,
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      'ConnectTimeout=5',
      '-o',
      'LogLevel=ERROR',
      '-p',
      String(PORT),
    ],
    exec: (command) => inHost(state, command),
    processes: async () => {
      const { stdout } = await inHost(state, 'ps -eo pid=,pgid=,args=');
      return stdout
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => {
          const [pid, pgid, ...args] = line.trim().split(/\s+/);
          return { pid: Number(pid), pgid: Number(pgid), args: args.join(' ') };
        });
    },
    partition: async () => {
      const rules = join(home, 'partition.nft');
      writeFileSync(
        rules,
        [
          'table inet ctl_partition {',
          '  chain in { type filter hook input priority 0; policy drop; iif lo accept; }',
          '  chain out { type filter hook output priority 0; policy drop; oif lo accept; }',
          '}',
          '',
        ].join('\n'),
      );
      await run('ip', ['netns', 'exec', ns, 'nft', '-f', rules]);
    },
    heal: async () => {
      await run('ip', ['netns', 'exec', ns, 'nft', 'delete', 'table', 'inet', 'ctl_partition']);
    },
    crash: async () => {
      const init = state.init;
      if (!init || init.exitCode !== null || init.signalCode !== null) return;
      const gone = new Promise((resolve) => init.once('exit', resolve));
      const child = childOf(init.pid!);
      if (child !== undefined) process.kill(child, 'SIGKILL');
      await gone;
    },
  };
  await startSshd(state, home);
  return state;
}

/** Starts the host's pid 1 (sshd, under unshare) and waits until it listens. */
async function startSshd(state: HostState, home: string): Promise<void> {
  const hide = dirname(packageRoot);
  const script = `hostname ${state.name} && mount -t tmpfs tmpfs ${hide} && mount -t tmpfs tmpfs /srv && exec /usr/sbin/sshd -D -e -f ${join(home, 'sshd_config')}`;
  state.init = spawn(
    'ip',
    ['netns', 'exec', state.ns, 'unshare', '--pid', '--fork', '--mount', '--mount-proc', '--uts', 'sh', '-c', script],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  state.init.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await waitUntil(`the sshd of ${state.name} to listen (${stderr})`, async () => {
    if (state.init!.exitCode !== null) throw new Error(`sshd exited: ${stderr}`);
    const { stdout } = await run('ip', ['netns', 'exec', state.ns, 'ss', '-Hltn', `sport = :${PORT}`]);
    return stdout.includes('LISTEN');
  });
}

/** The host's pid 1 as this machine sees it: `ip netns exec` execs unshare, whose forked child it is. */
function childOf(pid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    return children[0] ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

async function inHost(state: HostState, command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const init = childOf(state.init?.pid ?? -1);
  if (init === undefined) return { code: 255, stdout: '', stderr: `${state.name} is not running` };
  try {
    const { stdout, stderr } = await run('nsenter', ['-t', String(init), '-n', '-p', '-m', '-u', 'sh', '-c', command]);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

function takeLease(): { octet: number; lease: string } {
  mkdirSync(LEASES, { recursive: true });
  for (let octet = 1; octet < 250; octet++) {
    const lease = join(LEASES, String(octet));
    try {
      const owner = Number(readFileSync(lease, 'utf8'));
      if (owner > 0 && owner !== process.pid && isRunning(owner)) continue;
      if (owner === process.pid) continue;
      // Its owner died without cleaning up: what it left is reclaimed.
      rmSync(lease, { force: true });
      void removeLeftovers(octet);
    } catch {
      // no lease yet
    }
    try {
      const fd = openSync(lease, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return { octet, lease };
    } catch {
      // another worker took it first
    }
  }
  throw new Error('no free test subnet in 10.200.0.0/16');
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs a clean-up step whose failure means there was nothing to clean (deleting what is not there). */
async function removing(args: string[]): Promise<void> {
  try {
    await run('ip', args);
  } catch {
    // not there: nothing to remove
  }
}

async function removeLeftovers(octet: number): Promise<void> {
  await removing(['netns', 'del', `ctlt${octet}`]);
  await removing(['link', 'del', `ctlv${octet}`]);
}

async function removeAll(made: HostState[], dir: string): Promise<void> {
  for (const state of made) {
    const init = state.init;
    if (init && init.exitCode === null && init.signalCode === null) {
      const gone = new Promise((resolve) => init.once('exit', resolve));
      const child = childOf(init.pid!);
      if (child !== undefined) process.kill(child, 'SIGKILL');
      else init.kill('SIGKILL');
      await gone;
    }
    await removeLeftovers(Number(state.ns.slice(4)));
    rmSync(state.lease, { force: true });
  }
  made.length = 0;
  // The blackhole stays while another worker's hosts use the range.
  if (!existsSync(LEASES) || readdirSync(LEASES).length === 0) {
    await removing(['route', 'del', 'blackhole', RANGE]);
  }
  rmSync(dir, { recursive: true, force: true });
}
