import { readFileSync } from 'node:fs';
import { writeFileAtomic } from './atomic-write.js';

/**
 * Where the running supervisor of a `$CTL_HOME` listens, as it wrote it once listening (`supervisor.address`):
 * clients find a supervisor started with `--port`/`--host` without being told, and `ctl supervisor restart`
 * starts the next one where the last one was.
 */
export interface SupervisorAddress {
  pid: number;
  /** The base URL a client on this machine uses (a wildcard bind as loopback). */
  api: string;
  /** What it was told to bind and the port it got (`--port 0` means any). */
  bind: string;
  port: number;
}

export function writeSupervisorAddress(file: string, address: SupervisorAddress): void {
  writeFileAtomic(file, `${JSON.stringify(address)}\n`);
}

/**
 * The address in `file` when the process that wrote it is still alive; undefined for a missing, garbled or
 * stale file (a supervisor killed with -9 leaves one behind; the next overwrites it).
 */
export function readSupervisorAddress(file: string): SupervisorAddress | undefined {
  let parsed: Partial<SupervisorAddress>;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<SupervisorAddress>;
  } catch {
    return undefined;
  }
  const { pid, api, bind, port } = parsed;
  if (!Number.isInteger(pid) || (pid as number) <= 0 || typeof api !== 'string' || typeof bind !== 'string') {
    return undefined;
  }
  if (!Number.isInteger(port)) return undefined;
  if (!processAlive(pid as number)) return undefined;
  return { pid: pid as number, api, bind, port: port as number };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, only not ours to signal.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
