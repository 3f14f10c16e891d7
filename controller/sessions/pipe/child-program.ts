import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { releaseGroup, tetherGroup } from '../../process-tether.js';
import type { ProgramExit } from '../runtime.js';

/** A stdout line longer than this is handed on in pieces: a program cannot make us hold unbounded text. */
const MAX_LINE_BYTES = 1024 * 1024;
/** How much of stderr we keep (its end), for crash reports. */
const STDERR_KEEP = 8 * 1024;

/** Characters a shell gives meaning to: a command with any of them runs through `/bin/sh -c`. */
const SHELL_SYNTAX = /[|&;<>()$`\\"'*?[\]{}~#\n=]/;

/** argv for a command and its arguments: split on spaces, or through a shell when the command needs one. */
export function commandArgv(command: string, args: string[]): string[] {
  if (SHELL_SYNTAX.test(command)) {
    // The shell gets the command; further arguments become its positional parameters, after a name for $0.
    return ['/bin/sh', '-c', args.length ? `${command} "$@"` : command, 'sh', ...args];
  }
  return [...command.trim().split(/\s+/), ...args];
}

export interface ChildSpec {
  argv: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The session's state directory. */
  stateDir: string;
}

/**
 * A program run with our own pipes, in a process group of its own (so stopping it stops whatever it started),
 * its stdout read as lines, the end of its stderr kept, its exit reported once. No shell unless its command
 * needs one.
 */
export class ChildProgram {
  readonly pid: number;
  /** Resolves when it has exited, with how. */
  readonly exited: Promise<ProgramExit>;
  private readonly child: ChildProcessWithoutNullStreams;
  private stopRequested = false;
  private partial = '';
  private stderr = '';
  private running = true;

  private constructor(child: ChildProcessWithoutNullStreams, pid: number, onLines: (lines: string[]) => void) {
    this.child = child;
    this.pid = pid;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => onLines(this.lines(chunk)));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_KEEP);
    });
    // A program that stops reading makes our writes fail: the exit says what happened, not the write.
    child.stdin.on('error', () => undefined);
    child.once('exit', () => {
      this.running = false;
      // What it started goes with it (and lets go of the pipes it inherited, so 'close' can follow).
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // nothing else in its group
      }
    });
    this.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        this.running = false;
        if (this.partial) onLines([this.partial]);
        this.partial = '';
        releaseGroup(pid);
        resolve({ code, signal, requested: this.stopRequested, stderrTail: this.stderr.trim().slice(-2000) });
      });
    });
  }

  /** Starts `spec`; resolves once it runs, rejects (with a reason for a person) when it cannot be started. */
  static start(spec: ChildSpec, onLines: (lines: string[]) => void): Promise<ChildProgram> {
    return new Promise((resolve, reject) => {
      const [file, ...args] = spec.argv;
      if (file === undefined) return reject(new Error('cannot start an empty command'));
      const child = spawn(file, args, {
        cwd: spec.cwd,
        env: spec.env,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        const why = err.code === 'ENOENT' ? `${file} not found (is it installed and on PATH?)` : err.message;
        reject(new Error(`cannot start ${spec.argv.join(' ')}: ${why}`));
      });
      child.once('spawn', () => {
        const pid = child.pid!;
        // Ends with the controller, however it ends (the one mechanism for every program a city runs).
        tetherGroup(pid, `session program ${file}`);
        resolve(new ChildProgram(child, pid, onLines));
      });
    });
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Stops reading its stdout until `until` settles: it blocks on a full pipe meanwhile. */
  holdOutput(until: Promise<void>): void {
    this.child.stdout.pause();
    void until.finally(() => this.child.stdout.resume());
  }

  /** Writes to its stdin; resolves once the bytes are handed to the pipe. */
  write(text: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.running || this.child.stdin.destroyed) {
        reject(new Error('the program is not running'));
        return;
      }
      this.child.stdin.write(text, (err) => (err ? reject(err) : resolve()));
    });
  }

  /** Closes its stdin: a program that reads input to its end (`codex exec`) goes on without waiting for more. */
  closeInput(): void {
    this.child.stdin.end();
  }

  /** Signals its whole group (what it started too). */
  signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    try {
      process.kill(-this.pid, signal);
    } catch {
      // gone already
    }
  }

  /**
   * Ends it: stdin closed and SIGTERM to its group, then SIGKILL after `graceMs`; the group is killed either way
   * once it exits, so nothing it started outlives it. Resolves once it has exited.
   */
  async stop(graceMs: number): Promise<ProgramExit> {
    this.stopRequested = true;
    if (this.running) {
      this.child.stdin.end();
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // the group is empty
    }
    return this.exited;
  }

  /** Complete lines of a chunk; a partial line waits for the rest (at most MAX_LINE_BYTES of it). */
  private lines(chunk: string): string[] {
    const text = this.partial + chunk;
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    if (this.partial.length > MAX_LINE_BYTES) {
      parts.push(this.partial);
      this.partial = '';
    }
    return parts.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  }
}
