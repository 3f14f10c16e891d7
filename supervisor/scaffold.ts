import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { newCityConfigText } from '../shared/config/city-config.js';
import { cityPaths } from '../shared/paths.js';

/** True when `root` already holds a city (its `city.toml` or its runtime directory with an event log). */
export function isCityDirectory(root: string): boolean {
  const paths = cityPaths(root);
  return existsSync(paths.config) || existsSync(paths.events);
}

/** Gives an existing city directory the runtime layout the controller needs (`.ctl/`, an event log). */
export function ensureRuntimeLayout(root: string): void {
  const paths = cityPaths(root);
  mkdirSync(paths.runtimeDir, { recursive: true });
  writeFileSync(paths.events, '', { flag: 'a' });
}

/**
 * Creates a city on disk: the directory (if needed), `city.toml`, `.ctl/` and an empty `.ctl/events.jsonl`.
 * On failure, removes whatever it created, so a failed create leaves the directory as it found it; the
 * returned function does the same for a create that fails later.
 */
export function scaffoldCity(
  root: string,
  options: { provider?: string; startCommand?: string; bootstrapProfile?: 'k8s-cell' | 'single-host-compat' },
): () => void {
  const paths = cityPaths(root);
  const created: string[] = [];
  const undo = () => {
    for (const path of created.reverse()) rmSync(path, { recursive: true, force: true });
  };
  try {
    if (!existsSync(root)) {
      mkdirSync(root, { recursive: true });
      created.push(root);
    } else if (!statSync(root).isDirectory()) {
      throw Object.assign(new Error(`${root} exists and is not a directory`), { code: 'ENOTDIR' });
    }
    writeFileSync(paths.config, newCityConfigText(options), { flag: 'wx' });
    created.push(paths.config);
    if (!existsSync(paths.runtimeDir)) {
      mkdirSync(paths.runtimeDir);
      created.push(paths.runtimeDir);
    }
    writeFileSync(paths.events, '', { flag: 'wx' });
    created.push(paths.events);
  } catch (err) {
    undo();
    throw err;
  }
  return undo;
}
