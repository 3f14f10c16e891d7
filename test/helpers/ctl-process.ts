import { createInterface } from 'node:readline';
import { execa, type ResultPromise } from 'execa';
import { ctlEntryPath } from '../../shared/paths.js';
import { isAlive } from './processes.js';
import { WAIT_MS, waitUntil } from './wait.js';

/**
 * A `ctl` run in the background (the real built binary), for commands that keep running (`ctl events --follow`)
 * or that must be started before something happens (`ctl events --watch`): its stdout is collected line by line
 * as it arrives, its stderr as text.
 */
export class CtlProcess {
  readonly lines: string[] = [];
  stderr = '';
  exitCode: number | undefined;
  private readonly child: ResultPromise;
  private readonly done: Promise<void>;

  constructor(args: string[], options: { env: NodeJS.ProcessEnv; cwd?: string }) {
    this.child = execa(process.execPath, [ctlEntryPath(), ...args], {
      env: options.env,
      cwd: options.cwd,
      reject: false,
      stdin: 'ignore',
      buffer: false,
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.lines.push(line));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.done = this.child.then((result) => {
      this.exitCode = result.exitCode ?? -1;
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.exitCode === undefined && isAlive(this.pid);
  }

  /** Waits until `check(lines)` holds; fails (showing what was printed) after `timeoutMs`. */
  async waitFor(what: string, check: (lines: string[]) => boolean, timeoutMs = WAIT_MS): Promise<void> {
    try {
      await waitUntil(what, () => check(this.lines), timeoutMs);
    } catch (err) {
      throw new Error(
        `${(err as Error).message}\nstdout (${this.lines.length} lines): ${this.lines.slice(-5).join('\n')}\nstderr: ${this.stderr}`,
        { cause: err },
      );
    }
  }

  /** Waits for the process to exit by itself; resolves with its exit code. */
  async exited(timeoutMs = WAIT_MS): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`ctl did not exit within ${timeoutMs} ms; stderr: ${this.stderr}`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([this.done, timeout]);
    } finally {
      clearTimeout(timer);
    }
    // Let readline deliver the last lines, which may trail the exit event.
    await new Promise((resolve) => setImmediate(resolve));
    return this.exitCode!;
  }

  /** Ends the process (SIGTERM, then SIGKILL) and waits for it. */
  async stop(): Promise<void> {
    if (this.exitCode !== undefined) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (isAlive(this.pid)) this.child.kill('SIGKILL');
    }, 3000);
    try {
      await this.done;
    } finally {
      clearTimeout(timer);
    }
  }
}
