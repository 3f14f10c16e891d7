import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The pid of the controller running the city at `cityDir`, as its pid file (`.ctl/controller.pid`) says. */
export function controllerPid(cityDir: string): number {
  return (JSON.parse(readFileSync(join(cityDir, '.ctl', 'controller.pid'), 'utf8')) as { pid: number }).pid;
}
