import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every descendant of a program ctl runs, found again to be ended — including one that left the program's process
 * group (`setsid`, a daemon's double fork), which a signal to the group never reaches:
 *
 * - where this process may make cgroups (cgroup v2, ours writable: root, or a delegated systemd scope), each
 *   program starts in a cgroup of its own, `<our cgroup>/ctl-<our pid>/<n>`, entered by a two-word shell before it
 *   runs anything (so nothing it forks can be quicker), and is ended with `cgroup.kill` — all of it at once, however
 *   it forked — then the cgroup is removed. The watchdog (controller/process-tether.ts) kills `ctl-<our pid>`
 *   whole when this process dies; the next ctl process of the same cgroup removes what a dead one left.
 * - elsewhere (a user without delegated cgroups), each program's environment carries `CTL_PROGRAM=<our pid>.<n>`,
 *   which its descendants inherit, and ending it also kills every process of ours whose environment has it
 *   (`/proc/<pid>/environ`), pass after pass until none is left; only a descendant that clears its environment
 *   escapes that.
 *
 * The program itself leads a process group of its own, signalled as before. `spawnProgram` is the one way a city
 * or the supervisor starts a program; `signalProgram` and `endProgram` what they call to stop it.
 */
export const PROGRAM_MARKER = 'CTL_PROGRAM';

interface Scope {
  id: string;
  /** Its cgroup directory, when programs get one. */
  cgroup?: string;
}

const scopes = new WeakMap<ChildProcess, Scope>();
let counter = 0;
/** The exit status of a program that could not enter its cgroup (and so never ran). */
const UNCONTAINED = 125;
let base: string | null | undefined;

/** `<our cgroup>/ctl-<our pid>` when this process can put programs in cgroups of their own, else null. */
export function programCgroupRoot(): string | null {
  if (base !== undefined) return base;
  base = null;
  if (process.env.CTL_NO_CGROUPS === '1') return base;
  const mount = cgroup2Mount();
  const own = /^0::(.*)$/m.exec(readOr('/proc/self/cgroup'))?.[1];
  if (!mount || own === undefined) return base;
  const parent = join(mount, own);
  const root = join(parent, `ctl-${process.pid}`);
  try {
    sweepDeadRoots(parent);
    mkdirSync(root, { recursive: true });
    // Making the directory is not enough: moving a process needs write access up to the common ancestor.
    const probe = join(root, 'probe');
    mkdirSync(probe, { recursive: true });
    const moved = spawnSync('/bin/sh', ['-c', 'echo 0 > "$0/cgroup.procs"', probe], { stdio: 'ignore' });
    rmdirOr(probe);
    if (moved.status !== 0) {
      rmdirOr(root);
      return base;
    }
    base = root;
    // What has emptied is removed as this process exits; what has not, the next ctl process of this cgroup removes.
    process.once('exit', () => {
      for (const entry of readdirSafe(root)) if (/^\d+$/.test(entry)) rmdirOr(join(root, entry));
      rmdirOr(root);
    });
  } catch {
    rmdirOr(root);
  }
  return base;
}

/**
 * Spawns `file` with `args` in a process group of its own and, where it can be, a cgroup of its own; its
 * environment marked (above). `options.env` is the environment it gets (the process's when absent).
 */
export function spawnProgram(file: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const id = `${process.pid}.${++counter}`;
  const env = { ...(options.env ?? process.env), [PROGRAM_MARKER]: id };
  const root = programCgroupRoot();
  let cgroup: string | undefined;
  if (root) {
    cgroup = join(root, String(counter));
    try {
      mkdirSync(cgroup);
    } catch {
      cgroup = undefined;
    }
  }
  const child = cgroup
    ? // The shell moves itself into the cgroup, then becomes the program (same pid, same group). It cannot fail to
      // move once the probe did, unless its cgroup was taken away meanwhile: then it does not run uncontained.
      spawn('/bin/sh', ['-c', `echo 0 > "$0/cgroup.procs" || exit ${UNCONTAINED}; exec "$@"`, cgroup, file, ...args], {
        ...options,
        env,
        detached: true,
      })
    : spawn(file, [...args], { ...options, env, detached: true });
  scopes.set(child, { id, ...(cgroup ? { cgroup } : {}) });
  return child;
}

/** Sends `signal` to the program and to every descendant of it still running. */
export function signalProgram(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined) kill(-child.pid, signal);
  const scope = scopes.get(child);
  if (!scope) return;
  if (scope.cgroup) {
    if (signal === 'SIGKILL' && existsSync(join(scope.cgroup, 'cgroup.kill'))) {
      try {
        writeFileSync(join(scope.cgroup, 'cgroup.kill'), '1');
        return;
      } catch {
        // the cgroup is gone: so is everything that was in it
      }
    }
    for (const pid of pidsOf(scope.cgroup)) kill(pid, signal);
    return;
  }
  for (let pass = 0; pass < 5; pass++) {
    const marked = markedPids(scope.id);
    if (marked.length === 0) break;
    for (const pid of marked) kill(pid, signal);
    if (signal !== 'SIGKILL') break;
  }
}

/**
 * Kills the program and every descendant of it, then (once the kernel has emptied it) removes its cgroup. Called
 * once it has ended or when it must: whatever it left running goes with it.
 */
export function endProgram(child: ChildProcess): void {
  signalProgram(child, 'SIGKILL');
  const scope = scopes.get(child);
  if (scope?.cgroup) removeWhenEmpty(scope.cgroup, 0);
}

/**
 * Kills what a dead ctl process's programs left running, found by their markers (`CTL_PROGRAM=<its pid>.<n>`,
 * its pid no longer alive): for when the watchdog died with it and no cgroup holds them. Run at a controller's
 * start, before it starts anything. A pid reused since is taken for alive, and its programs left: never the
 * other way round.
 */
export function reapOrphanedPrograms(): number[] {
  const killed: number[] = [];
  const pattern = new RegExp(`(?:^|\\0)${PROGRAM_MARKER}=(\\d+)\\.\\d+(?:\\0|$)`);
  for (const entry of readdirSafe('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const owner = pattern.exec(readOr(`/proc/${entry}/environ`))?.[1];
    if (owner === undefined || Number(owner) === process.pid || existsSync(`/proc/${owner}`)) continue;
    kill(Number(entry), 'SIGKILL');
    killed.push(Number(entry));
  }
  return killed;
}

/**
 * Resolves with how the program ended once its pipes have closed — or, when something it started still holds them
 * after it exited and was ended (`endProgram`), `drainMs` after its exit, with its pipes let go: a caller waits on
 * the program, never on whoever inherited its stdout.
 */
export function programEnded(
  child: ChildProcess,
  drainMs = 250,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let done = false;
    const finish = (how: { code: number | null; signal: NodeJS.Signals | null }) => {
      if (done) return;
      done = true;
      resolve(how);
    };
    child.once('close', (code, signal) => finish(exit ?? { code, signal }));
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      setTimeout(() => {
        if (done) return;
        for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
        finish(exit!);
      }, drainMs).unref();
    });
  });
}

function removeWhenEmpty(dir: string, attempt: number): void {
  if (!existsSync(dir)) return;
  if (!/populated 1/.test(readOr(join(dir, 'cgroup.events')))) {
    try {
      rmdirSync(dir);
      return;
    } catch {
      // not empty after all: once more below
    }
  }
  if (attempt >= 50) return;
  setTimeout(() => removeWhenEmpty(dir, attempt + 1), 20 * (attempt + 1)).unref();
}

/** Removes what a ctl process of the same cgroup left when it died: its programs killed, their cgroups removed. */
function sweepDeadRoots(parent: string): void {
  for (const entry of readdirSafe(parent)) {
    const pid = /^ctl-(\d+)$/.exec(entry)?.[1];
    if (!pid || Number(pid) === process.pid || existsSync(`/proc/${pid}`)) continue;
    const root = join(parent, entry);
    try {
      writeFileSync(join(root, 'cgroup.kill'), '1');
    } catch {
      for (const child of readdirSafe(root)) for (const p of pidsOf(join(root, child))) kill(p, 'SIGKILL');
    }
    for (const child of readdirSafe(root))
      if (existsSync(join(root, child, 'cgroup.procs'))) rmdirOr(join(root, child));
    rmdirOr(root);
  }
}

/** Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid machine). */
function cgroup2Mount(): string | undefined {
  for (const line of readOr('/proc/self/mountinfo').split('\n')) {
    // `<id> <parent> <dev> <root> <mount point> <options> [<optional>…] - <type> <source> <super options>`
    const [before, after] = line.split(' - ');
    if (after?.startsWith('cgroup2 ')) return before!.split(' ')[4];
  }
  return undefined;
}

/** The processes of ours whose environment carries the marker `id`. */
function markedPids(id: string): number[] {
  const needle = `\0${PROGRAM_MARKER}=${id}\0`;
  const found: number[] = [];
  for (const entry of readdirSafe('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = readOr(`/proc/${entry}/environ`);
    if (`\0${environ}`.includes(needle)) found.push(Number(entry));
  }
  return found;
}

function pidsOf(cgroup: string): number[] {
  return readOr(join(cgroup, 'cgroup.procs')).split('\n').filter(Boolean).map(Number);
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function rmdirOr(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // still in use, or gone
  }
}
