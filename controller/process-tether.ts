import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { PROGRAM_MARKER, programCgroupRoot, reapOrphanedPrograms } from '../shared/program-scope.js';

/**
 * The watchdog: reads `+PGID` / `-PGID` lines from the controller on its stdin, keeping the set of process groups
 * the city runs; when its stdin ends — the controller exited, however it died, SIGKILL included, since the kernel
 * closes a dead process's pipes — it kills every program's cgroup at once and every process carrying one of the
 * controller's program markers (what left its group: shared/program-scope.ts), then sends SIGTERM to every group
 * left, then SIGKILL after a grace, and exits.
 * A POSIX shell script (no subprocess per line): one small process per city, not one per program.
 */
const WATCHDOG = `
trap '' INT HUP TERM
groups=" $1 "
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups\${line#+} " ;;
    -*) g=\${line#-}; case "$groups" in *" $g "*) groups="\${groups%% $g *} \${groups#* $g }" ;; esac ;;
  esac
done
[ -n "$CTL_WATCHDOG_CGROUP" ] && echo 1 > "$CTL_WATCHDOG_CGROUP/cgroup.kill" 2>/dev/null
marked() { grep -lzs "^${PROGRAM_MARKER}=$CTL_WATCHDOG_PID\\." /proc/[0-9]*/environ | sed 's|^/proc/\\([0-9]*\\)/environ$|\\1|'; }
for p in $(marked); do kill -KILL "$p" 2>/dev/null; done
case "$groups" in *[0-9]*) ;; *) exit 0 ;; esac
for g in $groups; do kill -TERM "-$g" 2>/dev/null; done
sleep 2
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
`;

/** The process's start time (clock ticks since boot, /proc/<pid>/stat field 22): a reused pid has another. */
export function starttimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

interface GroupRecord {
  pid: number;
  starttime: string;
  /** What it is, for the log: `service web`, `session ct-12`, `order nightly`. */
  what: string;
}

/**
 * Every program a city runs — services, sessions, order commands, checks — is started in a process group of its
 * own and tethered to its controller here, so that it ends when the controller does, by any signal:
 *
 * - immediately, by the watchdog above, which holds a pipe from the controller and kills every group still
 *   recorded when that pipe closes (Node has no PR_SET_PDEATHSIG);
 * - certainly, by a record per group in `.ctl/groups/` (pid and start time), which the next controller of the
 *   city reaps before it starts anything — for when the watchdog itself was killed too.
 *
 * One per controller process (`installTether`); `tetherGroup` / `releaseGroup` are what every spawn site calls.
 * Without an installed tether (a unit test) they do nothing.
 */
export class ProcessTether {
  private watchdog: ChildProcess | undefined;
  private readonly live = new Map<number, string>();
  private stopped = false;

  constructor(
    private readonly dir: string,
    private readonly logger?: Logger,
  ) {}

  /** Reaps what a previous controller of this city left running, then starts the watchdog. */
  start(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.reapLeftovers();
    const orphans = reapOrphanedPrograms();
    if (orphans.length)
      this.logger?.warn({ pids: orphans }, 'ended programs a dead controller left outside its groups');
    this.spawnWatchdog();
  }

  track(pid: number, what: string): void {
    if (this.stopped) return;
    const record: GroupRecord = { pid, starttime: starttimeOf(pid) ?? '', what };
    writeFileSync(join(this.dir, `${pid}.json`), JSON.stringify(record) + '\n');
    this.live.set(pid, what);
    this.tell(`+${pid}`);
  }

  /** Whether this controller runs the group `pid` leads. */
  tracks(pid: number): boolean {
    return this.live.has(pid);
  }

  release(pid: number): void {
    if (!this.live.delete(pid)) return;
    rmSync(join(this.dir, `${pid}.json`), { force: true });
    this.tell(`-${pid}`);
  }

  /** The controller is stopping: it has ended its programs; the watchdog ends what is left, then exits. */
  stop(): void {
    this.stopped = true;
    this.watchdog?.stdin?.end();
  }

  /** Kills the groups whose records a previous controller left, when their leader is still the recorded process. */
  private reapLeftovers(): void {
    let files: string[];
    try {
      files = readdirSync(this.dir).filter((f) => f.endsWith('.json'));
    } catch {
      return;
    }
    for (const file of files) {
      const path = join(this.dir, file);
      let record: GroupRecord | undefined;
      try {
        record = JSON.parse(readFileSync(path, 'utf8')) as GroupRecord;
      } catch {
        record = undefined;
      }
      rmSync(path, { force: true });
      if (!record || !Number.isInteger(record.pid) || record.pid <= 1) continue;
      // The leader gone does not mean the group is: what it started may still run. Only a reused pid (another
      // start time) is someone else's.
      const now = starttimeOf(record.pid);
      if (now !== undefined && now !== record.starttime) continue;
      try {
        process.kill(-record.pid, 'SIGKILL');
        this.logger?.warn({ pid: record.pid, what: record.what }, 'ended a program the last controller left running');
      } catch {
        // the group is empty
      }
    }
  }

  private spawnWatchdog(): void {
    const started = Date.now();
    // A controller that leads its own process group (as the supervisor starts it) has its plain children there —
    // git for a pack fetch or a rig clone, tmux's client: the watchdog ends that group too.
    const own = ownGroup();
    const cgroup = programCgroupRoot();
    const child = spawn('/bin/sh', ['-c', WATCHDOG, 'ctl-watchdog', ...(own ? [String(own)] : [])], {
      env: { ...process.env, CTL_WATCHDOG_PID: String(process.pid), CTL_WATCHDOG_CGROUP: cgroup ?? '' },
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    this.watchdog = child;
    child.stdin.on('error', (err) => this.logger?.warn({ err }, 'the process watchdog pipe failed'));
    child.once('error', (err) => this.logger?.error({ err }, 'cannot start the process watchdog'));
    child.once('exit', (code, signal) => {
      if (this.stopped) return;
      // Someone ended it: a new one, told of every group still running (the records cover the gap); not in a
      // tight loop when it cannot run at all.
      this.logger?.warn({ code, signal }, 'the process watchdog exited; starting another');
      const again = setTimeout(() => this.spawnWatchdog(), Date.now() - started < 1000 ? 1000 : 0);
      again.unref();
    });
    child.unref();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    for (const pid of this.live.keys()) this.tell(`+${pid}`);
  }

  private tell(line: string): void {
    const stdin = this.watchdog?.stdin;
    if (stdin && !stdin.destroyed) stdin.write(`${line}\n`);
  }
}

/** This process's group when it leads it, else undefined (a controller run from a shell shares the shell's job). */
function ownGroup(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    return pgrp === process.pid ? pgrp : undefined;
  } catch {
    return undefined;
  }
}

let installed: ProcessTether | undefined;

/** Makes `tether` the one every program of this process is tethered to. */
export function installTether(tether: ProcessTether | undefined): void {
  installed = tether;
}

/** Tethers the process group led by `pid` (a child spawned with `detached: true`) to this controller. */
export function tetherGroup(pid: number, what: string): void {
  installed?.track(pid, what);
}

/** The group has ended (or was killed by us): no longer tethered. */
export function releaseGroup(pid: number): void {
  installed?.release(pid);
}

/** Whether this controller runs the group `pid` leads; undefined without a tether (a unit test). */
export function isTethered(pid: number): boolean | undefined {
  return installed?.tracks(pid);
}
