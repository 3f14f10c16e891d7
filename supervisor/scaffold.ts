import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { newCityConfigText } from '../shared/config/city-config.js';
import { bounded } from '../shared/fs/bounded.js';
import { cityPaths } from '../shared/paths.js';

async function exists(path: string): Promise<boolean> {
  try {
    await bounded(`stat ${path}`, stat(path));
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw err;
  }
}

/** True when `root` already holds a city (its `city.toml` or its runtime directory with an event log). */
export async function isCityDirectory(root: string): Promise<boolean> {
  const paths = cityPaths(root);
  return (await exists(paths.config)) || (await exists(paths.events));
}

/** Gives an existing city directory the runtime layout the controller needs (`.ctl/`, an event log). */
export async function ensureRuntimeLayout(root: string): Promise<void> {
  const paths = cityPaths(root);
  await bounded(`mkdir ${paths.runtimeDir}`, mkdir(paths.runtimeDir, { recursive: true, mode: 0o700 }));
  await bounded(`create ${paths.events}`, writeFile(paths.events, '', { flag: 'a' }));
}

/**
 * Creates a city on disk: the directories still `missing` (one level at a time, never a recursive mkdir, whose
 * walk does not return on some kernel filesystems), `city.toml`, `.ctl/` and an empty `.ctl/events.jsonl`. Every
 * call is bounded in time. On failure, removes whatever it created, so a failed create leaves the disk as it
 * found it; the returned function does the same for a create that fails later.
 */
export async function scaffoldCity(
  root: string,
  missing: string[],
  options: { provider?: string; startCommand?: string; bootstrapProfile?: 'k8s-cell' | 'single-host-compat' },
): Promise<() => Promise<void>> {
  const paths = cityPaths(root);
  const created: string[] = [];
  const undo = async () => {
    for (const path of created.reverse()) {
      await bounded(`remove ${path}`, rm(path, { recursive: true, force: true })).catch(() => undefined);
    }
  };
  try {
    for (const dir of missing) {
      await bounded(`mkdir ${dir}`, mkdir(dir));
      created.push(dir);
    }
    await bounded(`create ${paths.config}`, writeFile(paths.config, newCityConfigText(options), { flag: 'wx' }));
    created.push(paths.config);
    if (!(await exists(paths.runtimeDir))) {
      await bounded(`mkdir ${paths.runtimeDir}`, mkdir(paths.runtimeDir, { mode: 0o700 }));
      created.push(paths.runtimeDir);
    }
    await bounded(`create ${paths.events}`, writeFile(paths.events, '', { flag: 'wx' }));
    created.push(paths.events);
  } catch (err) {
    await undo();
    throw err;
  }
  return undo;
}
