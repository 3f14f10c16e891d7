import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { shellQuote } from './session-environment.js';

/**
 * Writes `<dir>/ctl`, a launcher of this controller's own `ctl` — the same build (`entry`, its dist/cli/main.js)
 * on the same Node (`node`) — and returns `dir`, to go first on the PATH of every program a session runs. An
 * agent's shell then reaches its city whether or not the person installed `ctl` anywhere, and never reaches an
 * older `ctl` of theirs. Rewritten by every controller as it starts (a rebuilt or moved install is followed).
 */
export function writeCtlLauncher(dir: string, node: string, entry: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const script = [
    '#!/bin/sh',
    "# ctl for this city's sessions, written by its controller: the controller's own build on its own Node.",
    `exec ${shellQuote(node)} ${shellQuote(entry)} "$@"`,
    '',
  ].join('\n');
  writeFileAtomic(join(dir, 'ctl'), script, { mode: 0o755 });
  return dir;
}
