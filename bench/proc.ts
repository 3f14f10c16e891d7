import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Resident set size of a process in KiB (`VmRSS` of /proc/<pid>/status); NaN when it is gone. */
export function rssKiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
    return match ? Number(match[1]) : NaN;
  } catch {
    return NaN;
  }
}

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU time (user + system) a process has used so far, in ms (clock-tick resolution); NaN when it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5) (utime, stime); we dropped the first two (pid, comm).
    return ((Number(fields[11]) + Number(fields[12])) / clockTicks()) * 1000;
  } catch {
    return NaN;
  }
}

export interface MemoryKiB {
  /** Resident set size: every page mapped and resident, shared ones (the node binary, libraries) included. */
  rss: number;
  /** Proportional set size: shared pages divided among the processes sharing them; sums without double counting. */
  pss: number;
  /** Unique set size: pages only this process maps (Private_Clean + Private_Dirty). */
  uss: number;
}

/** RSS, PSS and USS of a process in KiB (/proc/<pid>/smaps_rollup); NaN fields when unavailable. */
export function memoryKiB(pid: number): MemoryKiB {
  const rss = rssKiB(pid);
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (name: string) => {
      const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm').exec(rollup);
      return match ? Number(match[1]) : NaN;
    };
    return { rss, pss: field('Pss'), uss: field('Private_Clean') + field('Private_Dirty') };
  } catch {
    return { rss, pss: NaN, uss: NaN };
  }
}
