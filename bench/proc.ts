import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

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

/**
 * When a process started, in ms of the wall clock (clock-tick resolution): its start in ticks since boot (stat(5)
 * field 22) set against the time since boot now (/proc/uptime); NaN when it is gone.
 */
export function startedAtMs(pid: number): number {
  try {
    const now = Date.now();
    const uptimeMs = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return now - uptimeMs + (Number(fields[19]) / clockTicks()) * 1000;
  } catch {
    return NaN;
  }
}

/** The children of a process, as /proc/<pid>/task/<tid>/children lists them for each of its threads. */
export function childPids(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return [];
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

/**
 * CPU time the whole machine has spent so far (every core, from the first line of /proc/stat), in ms: `busy`
 * (everything but idle and iowait) and `total`. On a shared machine, busy minus what our processes used is the
 * load someone else put on it.
 */
export function machineCpuMs(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    const idle = ticks[3] + ticks[4];
    const toMs = (t: number) => (t / clockTicks()) * 1000;
    return { busy: toMs(total - idle), total: toMs(total) };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

export interface SchedStat {
  /** Time on a CPU, ms. */
  runMs: number;
  /** Time runnable but waiting for a CPU (on a run queue), ms. */
  waitMs: number;
  /** Times it was scheduled in. */
  slices: number;
}

/**
 * Scheduler statistics of a process's main thread (/proc/<pid>/schedstat; the thread that runs Node's event
 * loop): how long it waited, runnable, for a CPU — the latency a busy machine adds to every wake-up.
 */
export function schedStat(pid: number | 'self'): SchedStat {
  try {
    const [run, wait, slices] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
    return { runMs: run / 1e6, waitMs: wait / 1e6, slices };
  } catch {
    return { runMs: NaN, waitMs: NaN, slices: NaN };
  }
}
