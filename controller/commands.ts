import type { ChildProcess } from 'node:child_process';
import { endProgram, programEnded, spawnProgram } from '../shared/program-scope.js';
import { releaseGroup, tetherGroup } from './process-tether.js';

/** What one command did. */
export interface CommandResult {
  /** null when it was killed (time-out) or could not start. */
  exitCode: number | null;
  signal: string | null;
  /** Its stdout and stderr interleaved as they came, the last `outputMax` bytes of it. */
  output: string;
  /** Its stdout alone, the first `outputMax` bytes of it (what a check prints as its answer). */
  stdout: string;
  durationMs: number;
  timedOut: boolean;
  /** Why it could not start. */
  error?: string;
}

/**
 * The shell commands a city runs for its formulas and orders (step checks, condition gates, order `exec` and
 * `check`), agents' `pre_start`, `session_setup` and checks, doctor checks: each under `/bin/sh -c` in its own
 * process group and scope (shared/program-scope.ts), killed — it and every descendant, those that left its group
 * too — at its time-out, and every one still running killed when the controller stops. The answer comes at the
 * time-out whatever still holds its pipes. Nothing waits on them but the caller's promise.
 */
export class CommandRunner {
  private readonly running = new Set<ChildProcess>();
  private isStopped = false;

  run(
    command: string,
    options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; outputMax?: number },
  ): Promise<CommandResult> {
    const started = Date.now();
    const outputMax = options.outputMax ?? 64 * 1024;
    if (this.isStopped) {
      return Promise.resolve({
        exitCode: null,
        signal: null,
        output: '',
        stdout: '',
        durationMs: 0,
        timedOut: false,
        error: 'the controller is stopping',
      });
    }
    return new Promise((resolve) => {
      let child: ChildProcess;
      try {
        child = spawnProgram('/bin/sh', ['-c', command], {
          cwd: options.cwd,
          env: options.env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch (err) {
        resolve({
          exitCode: null,
          signal: null,
          output: '',
          stdout: '',
          durationMs: 0,
          timedOut: false,
          error: (err as Error).message,
        });
        return;
      }
      this.running.add(child);
      if (child.pid !== undefined) tetherGroup(child.pid, `command ${command.slice(0, 80)}`);
      let output = '';
      let stdout = '';
      const take = (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.length > outputMax * 2) output = output.slice(-outputMax);
      };
      child.stdout!.on('data', (chunk: Buffer) => {
        take(chunk);
        if (stdout.length < outputMax) stdout += chunk.toString('utf8');
      });
      child.stderr!.on('data', take);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        endProgram(child);
      }, options.timeoutMs);
      let settled = false;
      const settle = (result: Omit<CommandResult, 'durationMs' | 'output' | 'stdout' | 'timedOut'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.running.delete(child);
        // Whatever it left behind goes with it.
        endProgram(child);
        if (child.pid !== undefined) releaseGroup(child.pid);
        resolve({
          ...result,
          output: output.slice(-outputMax),
          stdout: stdout.slice(0, outputMax),
          durationMs: Date.now() - started,
          timedOut,
        });
      };
      child.on('error', (err) => settle({ exitCode: null, signal: null, error: err.message }));
      // On its pipes' end, or shortly after its exit: a descendant holding them does not hold the answer.
      void programEnded(child).then(({ code, signal }) =>
        settle({ exitCode: timedOut ? null : code, signal: signal ?? null }),
      );
    });
  }

  /** Kills every command still running; later runs do not start. */
  stop(): void {
    this.isStopped = true;
    for (const child of this.running) endProgram(child);
    this.running.clear();
  }

  /** Whether `stop` was called: a command that ends now was ended by it. */
  get stopped(): boolean {
    return this.isStopped;
  }

  get size(): number {
    return this.running.size;
  }
}
