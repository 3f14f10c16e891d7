import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Pids of live processes whose command line mentions `fragment` (e.g. a test's temp directory). */
export function processesMentioning(fragment: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (state !== 'Z' && cmdline.includes(fragment)) pids.push(pid);
    } catch {
      // gone already
    }
  }
  return pids;
}

/**
 * Pids of live processes whose environment holds `name=value` (e.g. the HOME of a test's own agent CLI): every
 * process a provider started, and whatever those started in turn, whatever their command lines say.
 */
export function processesWithEnvironment(name: string, value: string): number[] {
  const wanted = `${name}=${value}`;
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (environ.includes(wanted) && isAlive(pid)) pids.push(pid);
    } catch {
      // gone already, or not ours to read
    }
  }
  return pids;
}

/** Zombie children of `parent`: processes it has not reaped. */
export function zombieChildrenOf(parent: number): number[] {
  const zombies: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' && Number(fields[1]) === parent) zombies.push(Number(entry));
    } catch {
      // gone
    }
  }
  return zombies;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** SIGKILL everything mentioning `fragment`; the last line of cleanup for a test's processes. */
export function killAllMentioning(fragment: string): void {
  for (const pid of processesMentioning(fragment)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/**
 * The sockets process `pid` holds open (`socket:[<inode>]`, as /proc/<pid>/fd links them); empty once it has
 * exited. A server that hangs up on a client closes the socket it accepted for it, so the socket leaves this set.
 */
export function socketsOf(pid: number): Set<string> {
  const sockets = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return sockets;
  }
  for (const fd of fds) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith('socket:')) sockets.add(target);
    } catch {
      // closed meanwhile
    }
  }
  return sockets;
}

/** The live processes below `root` (children, their children, …), each with its command line (NULs as spaces). */
export function descendantsOf(root: number): { pid: number; cmdline: string }[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') parents.set(Number(entry), Number(fields[1]));
    } catch {
      // gone
    }
  }
  const found: { pid: number; cmdline: string }[] = [];
  const below = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, parent] of parents) {
      if (below.has(parent) && !below.has(pid)) {
        below.add(pid);
        grew = true;
        try {
          found.push({ pid, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim() });
        } catch {
          // gone meanwhile
        }
      }
    }
  }
  return found;
}
