import { readFileSync, statSync } from 'node:fs';
import type { ControllerPidFile } from '../shared/controller-ipc.js';
import { cityPaths } from '../shared/paths.js';
import { isAlive, isControllerOf } from './controller-process.js';

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
