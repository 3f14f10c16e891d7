import { readFileSync, readlinkSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { ControllerPidFile } from './controller-ipc.js';
import { cityPaths } from './paths.js';

// Finding a city's controller by its files and the process table, and signalling it: the supervisor adopts
// or stops what it finds; `ctl supervisor stop --force` stops what a killed supervisor left running.

export interface LeftoverController {
  pid: number;
  name: string;
  /** Where it listens: what its pid file says, else the default socket. */
  listen: string;
}

/**
 * A controller still running for this city that we did not start (a previous supervisor did, or it is
 * starting right now). Found by its pid file, else by who holds its city lock (`/proc/locks`), and accepted
 * only when that process's command line is `ctl controller run --city <root>`.
 */
export function findLeftoverController(root: string, name: string): LeftoverController | undefined {
  const paths = cityPaths(root);
  let pidFile: Partial<ControllerPidFile> = {};
  try {
    pidFile = JSON.parse(readFileSync(paths.controllerPid, 'utf8')) as ControllerPidFile;
  } catch {
    // none, or torn: fall back to the lock
  }
  const candidates = [pidFile.pid, flockHolder(paths.controllerLock)];
  for (const pid of candidates) {
    if (pid === undefined || !isAlive(pid) || !isControllerOf(pid, root)) continue;
    const fromFile = pid === pidFile.pid;
    return {
      pid,
      name: fromFile && pidFile.name ? pidFile.name : name,
      listen: fromFile && pidFile.socket ? pidFile.socket : paths.socket,
    };
  }
  return undefined;
}

/** The pid holding an flock on `path`, from /proc/locks (`1: FLOCK ADVISORY WRITE <pid> <maj>:<min>:<inode> 0 EOF`). */
export function flockHolder(path: string): number | undefined {
  let inode: number;
  let locks: string;
  try {
    inode = statSync(path).ino;
    locks = readFileSync('/proc/locks', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of locks.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== 'FLOCK' || fields[2] === '->') continue;
    const device = fields[5]?.split(':');
    if (device && Number(device[2]) === inode) return Number(fields[4]);
  }
  return undefined;
}

/** True while `pid` runs: it exists (ours to signal or not) and is not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no /proc to ask: it exists
  }
}

/**
 * True when `/proc/<pid>/cmdline` is a `ctl controller run` for this city directory (a relative `--city`,
 * as a person may type it, resolved against that process's working directory).
 */
export function isControllerOf(pid: number, root: string): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const flag = args.findIndex((a) => a === '--city' || a.startsWith('--city='));
    if (!args.includes('controller') || !args.includes('run') || flag < 0) return false;
    const city = args[flag]!.startsWith('--city=') ? args[flag]!.slice('--city='.length) : args[flag + 1];
    if (city === undefined) return false;
    const absolute = isAbsolute(city) ? resolve(city) : resolve(readlinkSync(`/proc/${pid}/cwd`), city);
    return absolute === root;
  } catch {
    return false;
  }
}

/**
 * Signals a controller's process group (it and what it started). A controller run by hand from a shell
 * without job control leads no group of its own; then the process alone.
 */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
    return;
  } catch {
    // ESRCH: no such group (gone, or never a group leader)
  }
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: gone
  }
}
