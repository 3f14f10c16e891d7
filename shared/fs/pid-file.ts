import { readFileSync } from 'node:fs';

/** The pid a pid file holds: a positive integer, or undefined for a missing, empty or garbled file. */
export function readPid(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
