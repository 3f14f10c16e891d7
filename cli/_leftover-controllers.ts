import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'smol-toml';
import { isAlive, isControllerOf, signalGroup } from '../shared/leftover-controller.js';
import { homePaths } from '../shared/paths.js';

/** A controller records its stop and exits within 5 s of SIGTERM; after this long it is killed. */
const CONTROLLER_GRACE_MS = 7_000;

/**
 * The city directories of a home's `cities.toml`, registered or with a request in flight: every place a
 * controller of this home may run. Read leniently (only paths), as a supervisor that was killed left it.
 */
function cityRoots(registry: string): string[] {
  let doc: Record<string, unknown>;
  try {
    doc = parse(readFileSync(registry, 'utf8'));
  } catch {
    return [];
  }
  const roots = new Set<string>();
  for (const table of ['cities', 'pending_city_requests']) {
    const entries = doc[table];
    if (!Array.isArray(entries)) continue;
    for (const entry of entries as Record<string, unknown>[]) {
      if (typeof entry?.path === 'string') roots.add(entry.path);
    }
  }
  return [...roots];
}

/**
 * Every running `ctl controller run` for one of `roots`, by its command line, as the supervisor recognises a
 * controller to adopt. The process table, not the pid files: a controller the supervisor had only begun to
 * start has written none yet.
 */
function controllersOf(roots: string[]): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue; // gone
    }
    if (!cmdline.includes('\0controller\0run\0')) continue;
    if (roots.some((root) => isControllerOf(pid, root)) && isAlive(pid)) pids.push(pid);
  }
  return pids;
}

/** Waits up to `ms` for `pid` to be gone; true when it is. */
export async function exited(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
  return true;
}

/**
 * Stops the controllers still running for the cities of `home` — what a supervisor killed without its
 * shutdown leaves behind (each runs in its own process group, which goes with it): SIGTERM, then SIGKILL after
 * the grace. Resolves with how many there were.
 */
export async function stopLeftoverControllers(home: string): Promise<number> {
  const pids = controllersOf(cityRoots(homePaths(home).registry));
  await Promise.all(
    pids.map(async (pid) => {
      signalGroup(pid, 'SIGTERM');
      await exited(pid, CONTROLLER_GRACE_MS);
      // Whatever is left in its group (the controller, if it did not stop; what it started) goes now.
      signalGroup(pid, 'SIGKILL');
      await exited(pid, CONTROLLER_GRACE_MS);
    }),
  );
  return pids.length;
}
