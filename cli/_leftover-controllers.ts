import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'smol-toml';
import { findLeftoverController, isAlive, signalGroup } from '../shared/leftover-controller.js';
import { homePaths } from '../shared/paths.js';

/** A controller records its stop and exits within 5 s of SIGTERM; after this long it is killed. */
const CONTROLLER_GRACE_MS = 7_000;

/**
 * The cities of a home's `cities.toml`, registered or with a request in flight: every place a controller
 * of this home may run. Read leniently (only names and paths), as a supervisor that was killed left it.
 */
function citiesOf(registry: string): { name: string; path: string }[] {
  let doc: Record<string, unknown>;
  try {
    doc = parse(readFileSync(registry, 'utf8'));
  } catch {
    return [];
  }
  const cities: { name: string; path: string }[] = [];
  for (const table of ['cities', 'pending_city_requests']) {
    const entries = doc[table];
    if (!Array.isArray(entries)) continue;
    for (const entry of entries as Record<string, unknown>[]) {
      if (typeof entry?.path === 'string' && !cities.some((c) => c.path === entry.path)) {
        cities.push({ name: typeof entry.name === 'string' ? entry.name : '', path: entry.path });
      }
    }
  }
  return cities;
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
  const found = citiesOf(homePaths(home).registry)
    .map((city) => findLeftoverController(city.path, city.name))
    .filter((c) => c !== undefined);
  await Promise.all(
    found.map(async ({ pid }) => {
      signalGroup(pid, 'SIGTERM');
      await exited(pid, CONTROLLER_GRACE_MS);
      // Whatever is left in its group (the controller, if it did not stop; what it started) goes now.
      signalGroup(pid, 'SIGKILL');
      await exited(pid, CONTROLLER_GRACE_MS);
    }),
  );
  return found.length;
}
