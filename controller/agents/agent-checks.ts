import { spawn, type ChildProcess } from 'node:child_process';

/** How much of a check's output is read. */
const OUTPUT_MAX = 64 * 1024;

/** The last answer of one agent's `scale_check` or `work_query` command. */
export interface CheckResult {
  /** Its output lines (trimmed, none empty). */
  lines: string[];
  /** Why it failed (non-zero exit, time-out, unreadable output); the lines are then the last good ones. */
  error?: string;
  at: number;
}

/**
 * An agent's `scale_check` and `work_query` commands, run off the tick: each in its own process group, under a
 * shell in the agent's working directory, stopped (the whole group) after its time-out. The tick reads the last
 * answer and never waits; an answer that differs from the one before calls `changed`, which asks for a tick.
 */
export class AgentChecks {
  private readonly results = new Map<string, CheckResult>();
  private readonly running = new Map<string, ChildProcess>();
  private stopped = false;

  constructor(private readonly changed: (key: string, result: CheckResult) => void) {}

  /** The last answer for `key` (`<agent>:scale_check`), if one came. */
  result(key: string): CheckResult | undefined {
    return this.results.get(key);
  }

  /** Starts `command` for `key` unless it runs already or answered less than `everyMs` ago. */
  run(
    key: string,
    command: string,
    options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; everyMs: number },
  ): void {
    if (this.stopped || this.running.has(key)) return;
    const last = this.results.get(key);
    if (last && Date.now() - last.at < options.everyMs) return;
    let child: ChildProcess;
    try {
      child = spawn('/bin/sh', ['-c', command], {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      this.settle(key, last, { error: (err as Error).message });
      return;
    }
    this.running.set(key, child);
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      if (out.length < OUTPUT_MAX) out += chunk.toString('utf8');
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString('utf8');
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, options.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      this.running.delete(key);
      this.settle(key, last, { error: e.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      this.running.delete(key);
      // Whatever it left behind in its group goes with it.
      killGroup(child);
      if (timedOut) {
        this.settle(key, last, { error: `timed out after ${options.timeoutMs} ms` });
      } else if (code !== 0) {
        const why = err.trim().split('\n').at(-1);
        this.settle(key, last, { error: `exited with ${signal ?? `code ${code}`}${why ? `: ${why}` : ''}` });
      } else {
        const lines = out
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean);
        this.settle(key, last, { lines });
      }
    });
  }

  /** Stops every command still running (the controller is stopping). */
  stop(): void {
    this.stopped = true;
    for (const child of this.running.values()) killGroup(child);
    this.running.clear();
  }

  private settle(key: string, last: CheckResult | undefined, outcome: { lines?: string[]; error?: string }): void {
    const result: CheckResult = {
      lines: outcome.lines ?? last?.lines ?? [],
      at: Date.now(),
      ...(outcome.error ? { error: outcome.error } : {}),
    };
    this.results.set(key, result);
    const same = last && last.error === result.error && last.lines.join('\n') === result.lines.join('\n');
    if (!same) this.changed(key, result);
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
