import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The process groups a controller runs on a host, one file each in its run directory's `groups/` (named by the
 * group's leader pid, holding the leader's start time): what the host's watchdog ends when the controller's
 * connection goes, and what a later controller's reap ends when the watchdog went too. Runs on the host.
 */

/** The process's start time (clock ticks since boot, /proc/<pid>/stat field 22): a reused pid has another. */
export function starttimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function recordGroup(runDir: string, pid: number, what: string): void {
  writeFileSync(join(runDir, 'groups', String(pid)), `${starttimeOf(pid) ?? ''} ${what}\n`);
}

export function forgetGroup(runDir: string, pid: number): void {
  rmSync(join(runDir, 'groups', String(pid)), { force: true });
}

/** The groups recorded in `runDir` whose leader is still the process that was recorded. */
export function liveGroups(runDir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(join(runDir, 'groups'));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 1) return [];
    let recorded: string;
    try {
      recorded = readFileSync(join(runDir, 'groups', name), 'utf8').split(' ')[0] ?? '';
    } catch {
      return [];
    }
    const now = starttimeOf(pid);
    return now !== undefined && (recorded === '' || recorded === now) ? [pid] : [];
  });
}

export function signalGroups(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(-pid, signal);
    } catch {
      // its group is gone
    }
  }
}
