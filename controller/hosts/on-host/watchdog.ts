import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { liveGroups, recordGroup, forgetGroup, signalGroups, starttimeOf } from './process-groups.js';

/**
 * The host side of a controller's tether, run over its own channel of the controller's ssh connection:
 *
 * - `node watchdog.js watch <runDir> <deadlineMs> [tmuxSocket]`: hears a line from the controller at least every
 *   heartbeat (`+PID what` and `-PID` also tether and release a group a tool of ours started, such as a tmux
 *   pane; `?TOKEN` is answered `!TOKEN`); when the lines stop for `deadlineMs` (a partition: sshd's own keep-alives are off by default, and a
 *   silent session would live for hours) or end (the controller or its connection died), it ends every group of
 *   the run directory — SIGTERM, then SIGKILL after a grace — and this city's tmux server, and removes the run
 *   directory.
 * - `node watchdog.js reap <cityDir>`: ends the groups of every run directory whose watchdog is gone (killed with
 *   its host's sshd, say), printing their pids: what a new controller does before it starts anything there.
 */

const GRACE_MS = 2000;

function endRun(runDir: string, tmuxSocket: string | undefined): number[] {
  const groups = liveGroups(runDir);
  signalGroups(groups, 'SIGTERM');
  const deadline = Date.now() + GRACE_MS;
  // Synchronous on purpose: nothing else is left for this process to do, and a timer could be starved of nothing.
  while (Date.now() < deadline && groups.some((pid) => starttimeOf(pid) !== undefined)) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
  signalGroups(groups, 'SIGKILL');
  if (tmuxSocket && existsSync(tmuxSocket)) killTmux(tmuxSocket);
  rmSync(runDir, { recursive: true, force: true });
  return groups;
}

function killTmux(socket: string): void {
  // The city's tmux server there holds panes left by exit (remain-on-exit): it goes with its controller.
  spawnSync('tmux', ['-S', socket, 'kill-server'], { stdio: 'ignore', timeout: 3000 });
}

function watch(runDir: string, deadlineMs: number, tmuxSocket: string | undefined): void {
  mkdirSync(join(runDir, 'groups'), { recursive: true, mode: 0o700 });
  writeFileSync(join(runDir, 'watchdog'), `${process.pid} ${starttimeOf(process.pid) ?? ''}\n`);
  for (const signal of ['SIGHUP', 'SIGINT', 'SIGPIPE'] as const) process.on(signal, () => undefined);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    endRun(runDir, tmuxSocket);
    process.exit(0);
  };
  process.on('SIGTERM', end);
  let timer = setTimeout(end, deadlineMs);
  process.stdout.on('error', () => undefined);
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    clearTimeout(timer);
    timer = setTimeout(end, deadlineMs);
    const pid = Number(line.slice(1).split(' ')[0]);
    // `?TOKEN` is answered `!TOKEN`: the controller's measure of the round trip, and its proof the host is there.
    if (line.startsWith('?')) process.stdout.write(`!${line.slice(1)}\n`);
    else if (line.startsWith('+') && pid > 1) recordGroup(runDir, pid, line.slice(line.indexOf(' ') + 1));
    else if (line.startsWith('-') && pid > 1) forgetGroup(runDir, pid);
  });
  lines.on('close', end);
  process.stdout.write('watching\n');
}

function reap(cityDir: string): void {
  const runs = join(cityDir, 'run');
  let names: string[] = [];
  try {
    names = readdirSync(runs);
  } catch {
    // nothing ever ran here
  }
  const ended: number[] = [];
  for (const name of names) {
    const runDir = join(runs, name);
    let watcher: string[] = [];
    try {
      watcher = readFileSync(join(runDir, 'watchdog'), 'utf8').trim().split(' ');
    } catch {
      // a run whose watchdog never wrote: nothing holds it
    }
    const pid = Number(watcher[0]);
    if (pid > 1 && watcher[1] !== undefined && starttimeOf(pid) === watcher[1]) continue;
    ended.push(...endRun(runDir, undefined));
  }
  process.stdout.write(`${JSON.stringify(ended)}\n`);
}

const [mode, dir, deadline, tmuxSocket] = process.argv.slice(2);
if (mode === 'watch' && dir) watch(dir, Number(deadline) || 5000, tmuxSocket);
else if (mode === 'reap' && dir) reap(dir);
else {
  process.stderr.write('usage: watchdog.js watch <runDir> <deadlineMs> [tmuxSocket] | reap <cityDir>\n');
  process.exit(2);
}
