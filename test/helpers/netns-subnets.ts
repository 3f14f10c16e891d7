import { execFileSync } from 'node:child_process';
import { mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { WAIT_MS } from './wait.js';

// The test hosts' addresses, shared by every process on this machine that makes them: mocha's parallel workers and
// two people's runs at once. Each host takes one /30 of 10.200.0.0/16 by a lease file of its own (its owner's pid
// and start time), so no two hosts alive ever share a subnet or the names derived from it; a lease whose owner has
// died is swept, with the namespace, veth and processes it left, by the next process to lease one. A `blackhole` route for the whole
// range is kept while any live lease holds, so nothing addressed into it can leave by the default route; the last
// one to give its lease back removes it. Leasing and giving back run under one lock file, so that check and the
// route change cannot interleave with another process's.

const LEASES = '/tmp/ctl-netns-leases';
const LOCK = join(LEASES, '.lock');
export const TEST_RANGE = '10.200.0.0/16';
/** Metric of the range's blackhole route: above any route a machine would have for it, so that one still wins. */
const BLACKHOLE_METRIC = '4000';
/** /30s of 10.200.0.0–10.200.249.255; 10.200.250.0 and above are never assigned. */
const SUBNETS = 250 * 64;
/** An address in the test range that no host has: what is sent there meets the blackhole route. */
export const UNASSIGNED_TEST_ADDRESS = '10.200.250.1';

export interface SubnetLease {
  index: number;
  /** This machine's end of the veth pair. */
  rootIp: string;
  /** The host's end. */
  hostIp: string;
  /** The network namespace's name, also the host's hostname. */
  namespace: string;
  /** The root side of the veth pair (the host's side is `eth0`). */
  veth: string;
}

function leaseOf(index: number): SubnetLease {
  const third = Math.floor(index / 64);
  const fourth = (index % 64) * 4;
  return {
    index,
    rootIp: `10.200.${third}.${fourth + 1}`,
    hostIp: `10.200.${third}.${fourth + 2}`,
    namespace: `ctlt${index}`,
    veth: `ctlv${index}`,
  };
}

/** A process's start time (clock ticks since boot): with its pid, it names that process and no later one. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

const ME = `${process.pid} ${startTimeOf(process.pid)}\n`;

/** Whether the process a lock or lease file names still runs (an unreadable or torn file counts as dead). */
function ownerAlive(path: string): boolean {
  let owner: string;
  try {
    owner = readFileSync(path, 'utf8');
  } catch {
    return false;
  }
  const [pid, started] = owner.trim().split(' ');
  if (!/^\d+$/.test(pid ?? '')) return false;
  return started !== undefined && startTimeOf(Number(pid)) === started;
}

/** Creates `path` holding this process's identity; false if it exists. */
function createExclusive(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  writeSync(fd, ME);
  closeSync(fd);
  return true;
}

const pause = new Int32Array(new SharedArrayBuffer(4));

function underLock<T>(work: () => T): T {
  mkdirSync(LEASES, { recursive: true, mode: 0o755 });
  const deadline = Date.now() + WAIT_MS;
  while (!createExclusive(LOCK)) {
    // A holder that died (SIGKILL between create and unlink) leaves the lock behind: nothing waits on a dead owner.
    if (!ownerAlive(LOCK)) {
      // Only a lock still unowned after a pause is taken: a holder may be between create and write.
      Atomics.wait(pause, 0, 0, 20);
      if (!ownerAlive(LOCK)) unlinkIfThere(LOCK);
      continue;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${WAIT_MS} ms waiting for ${LOCK}`);
    Atomics.wait(pause, 0, 0, 5);
  }
  try {
    return work();
  } finally {
    unlinkIfThere(LOCK);
  }
}

function unlinkIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** Runs `ip …`; false if it failed with one of `tolerated` in its message (a thing already gone). */
export function ipCommand(args: string[], tolerated: RegExp[] = []): boolean {
  try {
    execFileSync('ip', args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    return true;
  } catch (err) {
    const output = (err as { stderr?: unknown }).stderr;
    const stderr = typeof output === 'string' ? output : '';
    if (tolerated.some((pattern) => pattern.test(stderr))) return false;
    throw new Error(`ip ${args.join(' ')}: ${stderr.trim() || (err as Error).message}`, { cause: err });
  }
}

const GONE = [/Cannot find device/, /No such file or directory/, /Cannot open network namespace/, /does not exist/];

/** What a dead owner left of a host: its processes (sshd, the unshare that started it), its veth, its namespace. */
export function removeHostRemains(lease: SubnetLease): void {
  let pids: string[] = [];
  try {
    pids = execFileSync('ip', ['netns', 'pids', lease.namespace], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .split('\n')
      .filter((line) => /^\d+$/.test(line));
  } catch {
    // no such namespace: nothing runs in it
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // ended meanwhile
    }
  }
  // The veth first: removed by name it is gone at once, where a namespace's own devices go only when the kernel frees
  // the namespace, after its last process has been reaped.
  ipCommand(['link', 'del', lease.veth], GONE);
  ipCommand(['netns', 'del', lease.namespace], GONE);
}

let nextStart = (process.pid * 7919) % SUBNETS;

/** Removes what every lease whose owner died left behind (a worker SIGKILLed before its exit handler ran). */
function sweepDeadLeases(): void {
  for (const entry of readdirSync(LEASES)) {
    const match = /^subnet-(\d+)$/.exec(entry);
    if (!match || ownerAlive(join(LEASES, entry))) continue;
    removeHostRemains(leaseOf(Number(match[1])));
    unlinkIfThere(join(LEASES, entry));
  }
}

/** Takes a free /30 and makes sure the range's blackhole route is there; what dead owners left is cleared first. */
export function leaseSubnet(): SubnetLease {
  return underLock(() => {
    sweepDeadLeases();
    // Each process starts its search elsewhere, so that parallel workers rarely probe the same files.
    const start = nextStart;
    for (let step = 0; step < SUBNETS; step++) {
      const index = (start + step) % SUBNETS;
      if (!createExclusive(join(LEASES, `subnet-${index}`))) continue;
      nextStart = (index + 1) % SUBNETS;
      ipCommand(['route', 'replace', 'blackhole', TEST_RANGE, 'metric', BLACKHOLE_METRIC]);
      return leaseOf(index);
    }
    throw new Error(`every /30 of ${TEST_RANGE} is leased (${LEASES})`);
  });
}

/** Gives a lease back; the last live lease on this machine takes the blackhole route with it. */
export function releaseSubnet(lease: SubnetLease): void {
  underLock(() => {
    unlinkIfThere(join(LEASES, `subnet-${lease.index}`));
    const stillLeased = readdirSync(LEASES).some(
      (entry) => entry.startsWith('subnet-') && ownerAlive(join(LEASES, entry)),
    );
    if (!stillLeased) {
      ipCommand(['route', 'del', 'blackhole', TEST_RANGE, 'metric', BLACKHOLE_METRIC], [/No such process/]);
    }
  });
}

/** Whether this process holds the lease of `index` (a test's check that cleanup gave it back). */
export function holdsLease(index: number): boolean {
  try {
    return readFileSync(join(LEASES, `subnet-${index}`), 'utf8') === ME;
  } catch {
    return false;
  }
}
