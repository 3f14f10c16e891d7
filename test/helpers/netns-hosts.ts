import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './temp-dir.js';
import { waitUntil } from './wait.js';
import { ipCommand, leaseSubnet, releaseSubnet, removeHostRemains, type SubnetLease } from './netns-subnets.js';

// Fake remote hosts on this machine for the runtimes that run sessions over OpenSSH. Each host is a network namespace
// reached only through a veth pair of its own (no default route: it reaches nothing else), running its own sshd as
// pid 1 of a pid namespace (its own process table: the controller's pids and signals mean nothing there), in a mount
// namespace where the checkout's parent, /tmp, /root and /srv are empty tmpfs (a runtime that assumes the controller's
// paths fails), with a hostname of its own. Faults are injected from outside: a partition drops every packet but
// loopback's inside the namespace, a crash SIGKILLs the host's pid 1 so that everything on it dies at once.

const SSHD = '/usr/sbin/sshd';
const SSH_PORT = 2222;
/** The host's own work area: inside its private /srv, so nothing there survives a crash or is seen from here. */
const WORK_ROOT = '/srv/ctl-work';
const PARTITION_TABLE = 'ctl_partition';
/** The environment of a command run on a host, as an ssh session would have it: none of the test's variables. */
const HOST_ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/root',
  USER: 'root',
  LOGNAME: 'root',
  SHELL: '/bin/sh',
  LANG: 'C.UTF-8',
};
const CHECKOUT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface HostOptions {
  /** The `[[host]]` table's `slots` (default 1). */
  slots?: number;
  labels?: string[];
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** One process of a host's own table: its pids as the host numbers them, `rootPid` as this machine does. */
export interface HostProcess {
  pid: number;
  ppid: number;
  pgid: number;
  comm: string;
  args: string;
  rootPid: number;
}

/** Why these hosts cannot be made on this machine, or undefined if they can (a test skips, saying this). */
export function hostsAvailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'test hosts need root (network namespaces, veth pairs, mounts)';
  if (!existsSync(SSHD)) return `test hosts need ${SSHD} (Debian package openssh-server)`;
  for (const [program, pkg] of [
    ['ssh', 'openssh-client'],
    ['ssh-keygen', 'openssh-client'],
    ['nft', 'nftables'],
    ['unshare', 'util-linux'],
    ['nsenter', 'util-linux'],
    ['ip', 'iproute2'],
  ]) {
    try {
      execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    } catch {
      return `test hosts need ${program} (Debian package ${pkg})`;
    }
  }
  return undefined;
}

function quote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

function run(program: string, args: string[], input?: string): Promise<ExecResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(program, args, {
      cwd: '/',
      env: HOST_ENV,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolvePromise({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
    // A program that exits without reading all its input says why in its status; this says what it missed.
    child.stdin.on('error', (err) => (stderr += `(its input could not be written: ${err.message})\n`));
    if (input === undefined) child.stdin.end();
    else child.stdin.end(input);
  });
}

async function runChecked(program: string, args: string[], input?: string): Promise<string> {
  const result = await run(program, args, input);
  if (result.code !== 0) throw new Error(`${program} ${args.join(' ')} exited ${result.code}: ${result.stderr.trim()}`);
  return result.stdout;
}

/** Whether `pid` is a live (not zombie) process. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** What a host hides by a tmpfs: the checkout (its parent, so siblings go too), the test's files, root's home. */
function hiddenPaths(): string[] {
  const checkoutParent = dirname(CHECKOUT);
  return [...new Set([checkoutParent === '/' ? CHECKOUT : checkoutParent, '/tmp', '/root', '/srv'])];
}

export class TestHost {
  readonly name: string;
  readonly ip: string;
  readonly port = SSH_PORT;
  readonly address: string;
  /** The client key this machine logs in with. */
  readonly identityFile: string;
  /** One line: the host's key for `[ip]:2222`. */
  readonly knownHostsFile: string;
  readonly workRoot = WORK_ROOT;
  /** This machine's address as the host reaches it (the veth pair's other end). */
  readonly rootIp: string;
  readonly slots: number;
  readonly labels: string[];
  /** The host's private files here: keys, sshd_config, sshd's log. */
  readonly dir: string;
  readonly lease: SubnetLease;
  /** `unshare`, on this side of the pid namespace; it ends when the host's pid 1 does. */
  private starter: ChildProcess | undefined;
  private starterExited: Promise<void> = Promise.resolve();
  private pid1 = 0;
  private pidNamespace = '';

  constructor(lease: SubnetLease, dir: string, options: HostOptions) {
    this.lease = lease;
    this.name = lease.namespace;
    this.ip = lease.hostIp;
    this.rootIp = lease.rootIp;
    this.address = `ssh://root@${this.ip}:${SSH_PORT}`;
    this.dir = dir;
    this.identityFile = join(dir, 'id_ed25519');
    this.knownHostsFile = join(dir, 'known_hosts');
    this.slots = options.slots ?? 1;
    this.labels = options.labels ?? [];
  }

  /** Namespace, veth pair, addresses, keys and sshd's config: everything but the running sshd. */
  async create(): Promise<void> {
    const { namespace, veth } = this.lease;
    await runChecked('ip', ['netns', 'add', namespace]);
    await runChecked(
      'ip',
      ['-batch', '-'],
      [
        `link add ${veth} type veth peer name eth0 netns ${namespace}`,
        `addr add ${this.rootIp}/30 dev ${veth}`,
        `link set ${veth} up`,
      ].join('\n'),
    );
    await runChecked(
      'ip',
      ['-n', namespace, '-batch', '-'],
      ['link set lo up', `addr add ${this.ip}/30 dev eth0`, 'link set eth0 up'].join('\n'),
    );
    const hostKey = join(this.dir, 'ssh_host_ed25519_key');
    await Promise.all([
      runChecked('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `host ${this.name}`, '-f', hostKey]),
      runChecked('ssh-keygen', [
        '-q',
        '-t',
        'ed25519',
        '-N',
        '',
        '-C',
        `client of ${this.name}`,
        '-f',
        this.identityFile,
      ]),
    ]);
    const hostPublic = readFileSync(`${hostKey}.pub`, 'utf8').split(' ').slice(0, 2).join(' ');
    writeFileSync(this.knownHostsFile, `[${this.ip}]:${SSH_PORT} ${hostPublic}\n`);
    writeFileSync(join(this.dir, 'authorized_keys'), readFileSync(`${this.identityFile}.pub`));
    // No ClientAliveInterval: Debian's default (0), under which a silent session lives for hours — what the product
    // must cope with by its own heartbeat.
    writeFileSync(
      join(this.dir, 'sshd_config'),
      [
        `Port ${SSH_PORT}`,
        `ListenAddress ${this.ip}`,
        'HostKey /etc/ssh/ssh_host_ed25519_key',
        'PidFile none',
        'AuthorizedKeysFile /etc/ssh/authorized_keys',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'UsePAM no',
        'PermitRootLogin prohibit-password',
        'StrictModes no',
        'AllowTcpForwarding yes',
        'AllowStreamLocalForwarding yes',
        'Subsystem sftp internal-sftp',
        'LogLevel INFO',
        '',
      ].join('\n'),
    );
    await this.start();
  }

  /** A fresh pid, mount and uts namespace in the host's network namespace, its sshd as pid 1, listening. */
  private async start(): Promise<void> {
    // sshd's files are copied into the host's own /etc/ssh before /tmp (where this machine keeps them) is hidden.
    const script = [
      'set -e',
      `hostname ${this.name}`,
      'mount -t tmpfs -o mode=0755 tmpfs /etc/ssh',
      `cp ${['sshd_config', 'ssh_host_ed25519_key', 'authorized_keys'].map((file) => quote(join(this.dir, file))).join(' ')} /etc/ssh/`,
      ...hiddenPaths().map(
        (path) =>
          `mount -t tmpfs -o mode=${path === '/tmp' ? '1777' : path === '/root' ? '0700' : '0755'} tmpfs ${quote(path)}`,
      ),
      `mkdir -p /run/sshd ${WORK_ROOT}`,
      `exec ${SSHD} -D -e -f /etc/ssh/sshd_config`,
    ].join('\n');
    const log = openSync(join(this.dir, 'sshd.log'), 'a');
    const starter = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.lease.namespace,
        'unshare',
        '--pid',
        '--fork',
        '--mount',
        '--mount-proc',
        '--uts',
        'sh',
        '-c',
        script,
      ],
      { cwd: '/', env: HOST_ENV, stdio: ['ignore', log, log] },
    );
    closeSync(log);
    // Nothing here keeps a test's process alive: cleanup ends the host, the exit safety net if cleanup never came.
    starter.unref();
    this.starter = starter;
    this.starterExited = new Promise((resolveExit) => {
      if (starter.exitCode !== null || starter.signalCode !== null) resolveExit();
      else starter.once('exit', () => resolveExit());
    });
    const starterPid = starter.pid;
    if (starterPid === undefined) throw new Error(`host ${this.name}: could not start ip netns exec unshare`);
    const state = await waitUntil(`host ${this.name}'s sshd listening on ${this.ip}:${SSH_PORT}`, () => {
      if (starter.exitCode !== null || starter.signalCode !== null) return 'ended';
      const pid1 = Number(readFileSync(`/proc/${starterPid}/task/${starterPid}/children`, 'utf8').trim().split(' ')[0]);
      if (!pid1 || readFileSync(`/proc/${pid1}/comm`, 'utf8').trim() !== 'sshd') return false;
      this.pid1 = pid1;
      return this.listening() && 'listening';
    });
    if (state === 'ended') {
      throw new Error(
        `host ${this.name}: sshd ended before listening: ${readFileSync(join(this.dir, 'sshd.log'), 'utf8').trim()}`,
      );
    }
    this.pidNamespace = readlinkSync(`/proc/${this.pid1}/ns/pid`);
  }

  /** Whether the host's network namespace has a socket listening on the ssh port (its /proc/net/tcp, read from here). */
  private listening(): boolean {
    const port = `:${SSH_PORT.toString(16).toUpperCase().padStart(4, '0')}`;
    return readFileSync(`/proc/${this.pid1}/net/tcp`, 'utf8')
      .split('\n')
      .slice(1)
      .some((line) => {
        const fields = line.trim().split(/\s+/);
        return fields[1]?.endsWith(port) === true && fields[3] === '0A';
      });
  }

  /** Whether the host runs: its pid 1 is alive and still the one started. */
  alive(): boolean {
    if (!this.pid1 || !running(this.pid1)) return false;
    try {
      return readlinkSync(`/proc/${this.pid1}/ns/pid`) === this.pidNamespace;
    } catch {
      return false;
    }
  }

  private requireAlive(what: string): void {
    if (!this.alive()) throw new Error(`host ${this.name} is not running (crashed or cleaned up): cannot ${what}`);
  }

  /** Runs `command` (sh) in the host's namespaces from this side, not over ssh: it works while partitioned. */
  async exec(command: string): Promise<ExecResult> {
    this.requireAlive(`exec ${command}`);
    return run('nsenter', ['-t', String(this.pid1), '-n', '-p', '-m', '-u', '--', 'sh', '-c', command]);
  }

  /**
   * Copies `localPath` (a file or directory here) to `hostPath` on the host, through the host's own root as
   * /proc shows it: what a person would have installed there (an agent's program), not shipped by ctl.
   */
  put(localPath: string, hostPath: string): void {
    this.requireAlive(`put ${hostPath}`);
    const into = `/proc/${this.pid1}/root${hostPath}`;
    mkdirSync(dirname(into), { recursive: true });
    cpSync(localPath, into, { recursive: true });
  }

  /** The host's process table, read from this machine's /proc: no process of the reading's own appears in it. */
  processes(): HostProcess[] {
    if (!this.pidNamespace) return [];
    const seen: {
      rootPid: number;
      pid: number;
      rootPpid: number;
      rootPgid: number;
      comm: string;
      args: string;
    }[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readlinkSync(`/proc/${entry}/ns/pid`) !== this.pidNamespace) continue;
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (fields[0] === 'Z') continue;
        const nsPids = /^NSpid:\s+(.*)$/m
          .exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
          ?.trim()
          .split(/\s+/);
        seen.push({
          rootPid: Number(entry),
          pid: Number(nsPids?.at(-1)),
          rootPpid: Number(fields[1]),
          rootPgid: Number(fields[2]),
          comm: readFileSync(`/proc/${entry}/comm`, 'utf8').trim(),
          args: readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim(),
        });
      } catch {
        // ended meanwhile
      }
    }
    // A parent or group outside the host (pid 1's parent, unshare) is 0, as the host itself sees it.
    const inside = new Map(seen.map((process) => [process.rootPid, process.pid]));
    return seen.map(({ rootPid, pid, rootPpid, rootPgid, comm, args }) => ({
      pid,
      ppid: inside.get(rootPpid) ?? 0,
      pgid: inside.get(rootPgid) ?? 0,
      comm,
      args,
      rootPid,
    }));
  }

  /** Drops every packet but loopback's inside the host's network namespace; established connections stall. */
  async partition(): Promise<void> {
    await runChecked(
      'ip',
      ['netns', 'exec', this.lease.namespace, 'nft', '-f', '-'],
      [
        `table inet ${PARTITION_TABLE} {`,
        '  chain in { type filter hook input priority 0; policy drop; iif lo accept; }',
        '  chain out { type filter hook output priority 0; policy drop; oif lo accept; }',
        '}',
        '',
      ].join('\n'),
    );
  }

  /** Ends a partition. */
  async heal(): Promise<void> {
    await runChecked('ip', ['netns', 'exec', this.lease.namespace, 'nft', 'delete', 'table', 'inet', PARTITION_TABLE]);
  }

  /** SIGKILLs the host's pid 1: every process on it dies with it. Resolves once none is left. */
  async crash(): Promise<void> {
    this.requireAlive('crash');
    process.kill(this.pid1, 'SIGKILL');
    await this.untilStarterExits();
    await waitUntil(`every process of host ${this.name} gone`, () => this.processes().length === 0);
  }

  /** Brings a crashed host back: the same namespace, keys and address, a fresh sshd with empty private mounts. */
  async restart(): Promise<void> {
    if (this.alive()) throw new Error(`host ${this.name} is running: crash it before restarting it`);
    await this.untilStarterExits();
    await this.start();
  }

  /** ssh's options for this host (no config file, its key, its known_hosts, host key checked, no prompt). */
  sshOptions(connectTimeoutSeconds = 5): string[] {
    return [
      '-F',
      '/dev/null',
      '-i',
      this.identityFile,
      '-o',
      `UserKnownHostsFile=${this.knownHostsFile}`,
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      `ConnectTimeout=${connectTimeoutSeconds}`,
      '-o',
      'LogLevel=ERROR',
      '-p',
      String(SSH_PORT),
      `root@${this.ip}`,
    ];
  }

  /** The host as a `[[host]]` table of city.toml. */
  tomlTable(): string {
    return [
      '[[host]]',
      `name = ${JSON.stringify(this.name)}`,
      `address = ${JSON.stringify(this.address)}`,
      `identity_file = ${JSON.stringify(this.identityFile)}`,
      `known_hosts = ${JSON.stringify(this.knownHostsFile)}`,
      `slots = ${this.slots}`,
      `labels = [${this.labels.map((label) => JSON.stringify(label)).join(', ')}]`,
      `work_root = ${JSON.stringify(this.workRoot)}`,
      '',
    ].join('\n');
  }

  /** Ends the host's processes (SIGKILL) and waits for them; then removes its network. */
  async stop(): Promise<void> {
    this.killProcesses();
    await this.untilStarterExits();
    if (this.pidNamespace)
      await waitUntil(`every process of host ${this.name} gone`, () => this.processes().length === 0);
    this.removeNetwork();
  }

  /** Held while awaited: an unref'd child's exit alone would not keep the process waiting for it. */
  private async untilStarterExits(): Promise<void> {
    this.starter?.ref();
    await this.starterExited;
  }

  private killProcesses(): void {
    for (const pid of [this.pid1, this.starter?.pid]) {
      if (!pid || !running(pid)) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended meanwhile
      }
    }
  }

  /** Without waiting: the exit safety net's way (a process on its way out cannot wait). */
  stopNow(): void {
    this.killProcesses();
    removeHostRemains(this.lease);
  }

  private removeNetwork(): void {
    ipCommand(['link', 'del', this.lease.veth], [/Cannot find device/]);
    ipCommand(['netns', 'del', this.lease.namespace], [/No such file or directory/]);
  }
}

export class TestHosts {
  readonly hosts: TestHost[];
  readonly dir: string;
  private cleaning: Promise<void> | undefined;
  private cleaned = false;

  constructor(hosts: TestHost[], dir: string) {
    this.hosts = hosts;
    this.dir = dir;
  }

  /** Every host's processes ended, its namespace and veth gone, its subnet given back, the files removed. */
  cleanup(): Promise<void> {
    this.cleaning ??= (async () => {
      await Promise.all(this.hosts.map((host) => host.stop()));
      this.finish();
    })();
    return this.cleaning;
  }

  /** The exit safety net: everything cleanup does, without waiting for the processes to be reaped. */
  cleanupNow(): void {
    if (this.cleaned) return;
    for (const host of this.hosts) host.stopNow();
    this.finish();
  }

  private finish(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    for (const host of this.hosts) releaseSubnet(host.lease);
    rmSync(this.dir, { recursive: true, force: true });
    live.delete(this);
  }
}

const live = new Set<TestHosts>();
let safetyNetSet = false;

/** A test that fails before its cleanup, or a worker that exits, never leaves namespaces or sshds behind. */
function setSafetyNet(): void {
  if (safetyNetSet) return;
  safetyNetSet = true;
  const cleanupAll = (): void => {
    for (const hosts of [...live]) {
      try {
        hosts.cleanupNow();
      } catch (err) {
        // Exiting, nothing can be thrown to; what remains is swept by the next process that leases a subnet.
        process.stderr.write(`test hosts in ${hosts.dir} not cleaned up: ${String(err)}\n`);
      }
    }
  };
  process.on('exit', cleanupAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      cleanupAll();
      // Dying of the signal stays the default unless someone else (mocha) handles it.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

/**
 * `count` hosts, each with its own subnet, namespaces, keys and sshd, all listening. `options` is for every host or,
 * as a list, one per host. Call `cleanup()` (in an `after`); a process exit cleans up what was left.
 */
export async function makeHosts(count: number, options: HostOptions | HostOptions[] = {}): Promise<TestHosts> {
  const why = hostsAvailable();
  if (why) throw new Error(why);
  setSafetyNet();
  const dir = tempDir('ctl-netns-');
  const hosts: TestHost[] = [];
  const made = new TestHosts(hosts, dir);
  live.add(made);
  try {
    for (let i = 0; i < count; i++) {
      const hostDir = join(dir, `host${i}`);
      mkdirSync(hostDir, { mode: 0o700 });
      const hostOptions = Array.isArray(options) ? (options[i] ?? {}) : options;
      hosts.push(new TestHost(leaseSubnet(), hostDir, hostOptions));
    }
    await Promise.all(hosts.map((host) => host.create()));
  } catch (err) {
    await made.cleanup();
    throw err;
  }
  return made;
}
