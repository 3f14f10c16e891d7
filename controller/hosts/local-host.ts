import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { releaseGroup, tetherGroup } from '../process-tether.js';
import {
  LOCAL_HOST,
  type Host,
  type HostCommandResult,
  type HostProcess,
  type HostRunOptions,
  type HostSpawnSpec,
} from './host.js';

/** Output a short command may leave before it is cut off: a host command is a probe, not a transfer. */
const RUN_OUTPUT_LIMIT = 4 * 1024 * 1024;

/**
 * This machine: programs are the controller's own children, each leading a process group of its own and
 * tethered to the controller (process-tether.ts), and a session's files are already where they were written.
 */
export class LocalHost implements Host {
  readonly name = LOCAL_HOST;
  readonly remote = false;
  readonly fenceMs = 0;

  lost(): undefined {
    return undefined;
  }

  prepare(): Promise<void> {
    return Promise.resolve();
  }

  spawn(spec: HostSpawnSpec): Promise<HostProcess> {
    return new Promise((resolveStart, reject) => {
      const [file, ...args] = spec.argv;
      if (file === undefined) return reject(new Error('cannot start an empty command'));
      const child = spawn(file, args, { cwd: spec.cwd, env: spec.env, detached: true, stdio: 'pipe' });
      child.once('error', (err: NodeJS.ErrnoException) => {
        const why = err.code === 'ENOENT' ? `${file} not found (is it installed and on PATH?)` : err.message;
        reject(new Error(`cannot start ${spec.argv.join(' ')}: ${why}`));
      });
      child.once('spawn', () => {
        const pid = child.pid!;
        // Ends with the controller, however it ends (the one mechanism for every program a city runs).
        tetherGroup(pid, spec.what);
        let running = true;
        const signalGroup = (signal: NodeJS.Signals) => _killGroup(pid, signal);
        // A program that stops reading makes our writes fail: the exit says what happened, not the write.
        child.stdin.on('error', () => undefined);
        child.once('exit', () => {
          running = false;
          // What it started goes with it (and lets go of the pipes it inherited, so 'close' can follow).
          signalGroup('SIGKILL');
        });
        const exited = new Promise<{ code: number | null; signal: string | null }>((done) => {
          child.once('close', (code, signal) => {
            releaseGroup(pid);
            done({ code, signal });
          });
        });
        resolveStart({
          pid,
          stdin: child.stdin,
          stdout: child.stdout,
          stderr: child.stderr,
          exited,
          signal: (signal) => {
            if (running) signalGroup(signal);
            // After the exit only the group's stragglers are left, and they get no mercy.
            else if (signal === 'SIGKILL') signalGroup(signal);
          },
        });
      });
    });
  }

  stage(fromDir: string, files: string[], toDir: string): Promise<void> {
    if (resolve(fromDir) === resolve(toDir)) return Promise.resolve();
    mkdirSync(toDir, { recursive: true, mode: 0o700 });
    for (const file of files) {
      const to = join(toDir, file);
      mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
      copyFileSync(join(fromDir, file), to);
      chmodSync(to, statSync(join(fromDir, file)).mode & 0o777);
    }
    return Promise.resolve();
  }

  async run(argv: string[], options: HostRunOptions): Promise<HostCommandResult> {
    const { execa } = await import('execa');
    const [file, ...args] = argv;
    const result = await execa(file!, args, {
      reject: false,
      cwd: options.cwd,
      env: options.env,
      input: options.input,
      stdin: options.input === undefined ? 'ignore' : undefined,
      timeout: options.timeoutMs,
      maxBuffer: RUN_OUTPUT_LIMIT,
      // Its own group, so a timeout ends what it started too.
      detached: true,
      forceKillAfterDelay: 1000,
    });
    return {
      code: result.timedOut || result.exitCode === undefined ? null : result.exitCode,
      stdout: String(result.stdout ?? ''),
      stderr: String(result.stderr ?? result.message ?? ''),
      timedOut: result.timedOut,
    };
  }

  tether(pid: number, what: string): Promise<void> {
    tetherGroup(pid, what);
    return Promise.resolve();
  }

  release(pid: number): void {
    releaseGroup(pid);
  }

  signalGroup(pid: number, signal: NodeJS.Signals): Promise<void> {
    _killGroup(pid, signal);
    return Promise.resolve();
  }

  /** A zombie (ended, not yet reaped by whoever inherited it) is not alive: it runs nothing. */
  isAlive(pid: number): Promise<boolean> {
    try {
      process.kill(pid, 0);
    } catch {
      return Promise.resolve(false);
    }
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Promise.resolve(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z');
    } catch {
      return Promise.resolve(false);
    }
  }

  /** The process tether reaps this machine's leftovers as the controller starts (process-tether.ts). */
  reap(): Promise<number[]> {
    return Promise.resolve([]);
  }

  terminal(argv: string[]): string[] {
    return argv;
  }

  sessionDir(_sessionId: string, localDir: string): string {
    return localDir;
  }

  apiSocket(): undefined {
    return undefined;
  }

  ctlBin(localBin: string): string {
    return localBin;
  }

  tmuxSocket(localSocket: string): string {
    return localSocket;
  }

  gitRepository(): undefined {
    return undefined;
  }
}

/** Sends `signal` to the process group `pid` leads; nothing when nothing is left in it. */
function _killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // nothing left in its group
  }
}

/** The one local host of a controller process. */
export const localHost = new LocalHost();
