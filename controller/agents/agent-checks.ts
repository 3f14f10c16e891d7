import { CommandRunner } from '../commands.js';

/** The last answer of one agent's `scale_check` or `work_query` command. */
export interface CheckResult {
  /** Its output lines (trimmed, none empty). */
  lines: string[];
  /** Why it failed (non-zero exit, time-out, unreadable output); the lines are then the last good ones. */
  error?: string;
  at: number;
}

/**
 * An agent's `scale_check` and `work_query` commands, run off the tick (by a CommandRunner: each in its own
 * process group, under a shell in the agent's working directory, the whole group stopped after its time-out).
 * The tick reads the last answer and never waits; an answer that differs from the one before calls `changed`,
 * which asks for a tick.
 */
export class AgentChecks {
  private readonly results = new Map<string, CheckResult>();
  private readonly running = new Set<string>();
  private readonly commands = new CommandRunner();

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
    if (this.running.has(key)) return;
    const last = this.results.get(key);
    if (last && Date.now() - last.at < options.everyMs) return;
    this.running.add(key);
    void this.commands.run(command, options).then((result) => {
      this.running.delete(key);
      if (result.error === 'the controller is stopping') return;
      if (result.timedOut) {
        this.settle(key, last, { error: `timed out after ${options.timeoutMs} ms` });
      } else if (result.error) {
        this.settle(key, last, { error: result.error });
      } else if (result.exitCode !== 0) {
        const why = result.output.trim().split('\n').at(-1);
        this.settle(key, last, {
          error: `exited with ${result.signal ?? `code ${result.exitCode}`}${why ? `: ${why}` : ''}`,
        });
      } else {
        const lines = result.stdout
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean);
        this.settle(key, last, { lines });
      }
    });
  }

  /** Stops every command still running (the controller is stopping). */
  stop(): void {
    this.commands.stop();
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
