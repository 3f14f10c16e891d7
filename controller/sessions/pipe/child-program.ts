import type { Host, HostProcess } from '../../hosts/host.js';
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
  /** Where it runs, on its host. */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** What it is, for the tether's log. */
  what?: string;
}

/**
 * A program run with our own pipes on its host, in a process group of its own there (so stopping it stops
 * whatever it started), its stdout read as lines, the end of its stderr kept, its exit reported once. No shell
 * unless its command needs one.
 */
export class ChildProgram {
  readonly pid: number;
  /** Resolves when it has exited, with how. */
  readonly exited: Promise<ProgramExit>;
  private readonly hostProcess: HostProcess;
  private stopRequested = false;
  private partial = '';
  private stderr = '';
  private running = true;

  private constructor(hostProcess: HostProcess, onLines: (lines: string[]) => void) {
    this.hostProcess = hostProcess;
    this.pid = hostProcess.pid;
    hostProcess.stdout.setEncoding('utf8');
    hostProcess.stdout.on('data', (chunk: string) => onLines(this.lines(chunk)));
    hostProcess.stderr.setEncoding('utf8');
    hostProcess.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_KEEP);
    });
    this.exited = hostProcess.exited.then(({ code, signal, lost }) => {
      this.running = false;
      if (this.partial) onLines([this.partial]);
      this.partial = '';
      const stderrTail = this.stderr.trim().slice(-2000);
      return { code, signal, requested: this.stopRequested, stderrTail, ...(lost ? { hostLost: lost } : {}) };
    });
  }

  /** Starts `spec` on `host`; resolves once it runs, rejects (with a reason for a person) when it cannot start. */
  static async start(host: Host, spec: ChildSpec, onLines: (lines: string[]) => void): Promise<ChildProgram> {
    const what = spec.what ?? `session program ${spec.argv[0] ?? ''}`;
    const started = await host.spawn({ argv: spec.argv, cwd: spec.cwd, env: spec.env, what });
    return new ChildProgram(started, onLines);
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Stops reading its stdout until `until` settles: it blocks on a full pipe meanwhile. */
  holdOutput(until: Promise<void>): void {
    this.hostProcess.stdout.pause();
    void until.finally(() => this.hostProcess.stdout.resume());
  }

  /** Writes to its stdin; resolves once the bytes are handed to the pipe. */
  write(text: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.running || this.hostProcess.stdin.destroyed) {
        reject(new Error('the program is not running'));
        return;
      }
      this.hostProcess.stdin.write(text, (err) => (err ? reject(err) : resolve()));
    });
  }

  /** Closes its stdin: a program that reads input to its end (`codex exec`) goes on without waiting for more. */
  closeInput(): void {
    this.hostProcess.stdin.end();
  }

  /** Signals its whole group (what it started too). */
  signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    this.hostProcess.signal(signal);
  }

  /**
   * Ends it: stdin closed and SIGTERM to its group, then SIGKILL after `graceMs`; the group is killed either way
   * once it exits, so nothing it started outlives it. Resolves once it has exited.
   */
  async stop(graceMs: number): Promise<ProgramExit> {
    this.stopRequested = true;
    if (this.running) {
      this.hostProcess.stdin.end();
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    this.hostProcess.signal('SIGKILL');
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
