import { existsSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The cursor key of the supervisor's own event log in composite cursors and tagged events. */
export const SUPERVISOR_SCOPE = '__supervisor__';

/** Where the supervisor keeps its registry, config, event log, logs and lock: `$CTL_HOME`, default `~/.ctl`. */
export function ctlHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.CTL_HOME?.trim();
  return resolve(fromEnv ? fromEnv : join(homedir(), '.ctl'));
}

export interface HomePaths {
  home: string;
  registry: string;
  config: string;
  events: string;
  eventsLock: string;
  log: string;
  lock: string;
  pid: string;
  tokens: string;
  /** Where the running supervisor listens (shared/supervisor-address.ts). */
  address: string;
}

export function homePaths(home: string): HomePaths {
  return {
    home,
    registry: join(home, 'cities.toml'),
    config: join(home, 'supervisor.toml'),
    events: join(home, 'events.jsonl'),
    eventsLock: join(home, 'events.lock'),
    log: join(home, 'supervisor.log'),
    lock: join(home, 'supervisor.lock'),
    pid: join(home, 'supervisor.pid'),
    tokens: join(home, 'tokens.json'),
    address: join(home, 'supervisor.address'),
  };
}

export interface CityPaths {
  root: string;
  config: string;
  runtimeDir: string;
  events: string;
  eventsLock: string;
  controllerLock: string;
  controllerPid: string;
  controllerLog: string;
  socket: string;
}

// sun_path is 108 bytes on Linux; leave room for the terminating NUL.
const MAX_SOCKET_PATH = 100;

export function cityPaths(root: string): CityPaths {
  const runtimeDir = join(root, '.ctl');
  let socket = join(runtimeDir, 'controller.sock');
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    // A deep city directory cannot hold a Unix socket; use a short, stable per-city path instead.
    // node:crypto loaded only here: every `ctl` command loads this module, and crypto costs ~15 ms to load.
    const { createHash } = process.getBuiltinModule('node:crypto');
    const digest = createHash('sha256').update(root).digest('hex').slice(0, 16);
    socket = join(tmpdir(), `ctl-${process.getuid?.() ?? 0}`, `${digest}.sock`);
  }
  return {
    root,
    config: join(root, 'city.toml'),
    runtimeDir,
    events: join(runtimeDir, 'events.jsonl'),
    eventsLock: join(runtimeDir, 'events.lock'),
    controllerLock: join(runtimeDir, 'controller.lock'),
    controllerPid: join(runtimeDir, 'controller.pid'),
    controllerLog: join(runtimeDir, 'controller.log'),
    socket,
  };
}

/**
 * The project root (the directory holding package.json), from source (`shared/`) or from a bundle in `dist/`
 * (`dist/cli/`, or a chunk in `dist/chunks/`): the nearest directory up from this code that has a package.json.
 */
export const packageRoot: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return dir;
})();

/** The `ctl` entry script that the supervisor runs for `ctl controller run` and `ctl supervisor start` runs. */
export function ctlEntryPath(): string {
  return join(packageRoot, 'dist', 'cli', 'main.js');
}
