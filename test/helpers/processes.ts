import { readdirSync, readFileSync } from 'node:fs';

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
