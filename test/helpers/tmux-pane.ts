import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dir.js';
import { WAIT_MS, waitUntil } from './wait.js';

/** A shell word: `word`, single-quoted. */
function quoted(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * A program on a real terminal of a fixed size: a detached pane of a tmux server of its own (its own socket, so
 * no other tmux is touched), read with `capture-pane` as a person would see it, typed into with `send-keys`.
 * When the program exits, the pane stays and shows `EXITED <status>` and the terminal's settings (`stty -a`), so
 * a test can tell the program put the terminal back as it found it.
 */
export class TmuxPane {
  private constructor(
    private readonly dir: string,
    private readonly socket: string,
  ) {}

  /** Runs `argv` in a pane `columns` × `rows`, in `cwd`, with `env` added to this process's environment. */
  static start(
    argv: string[],
    options: { columns: number; rows: number; cwd: string; env: Record<string, string | undefined> },
  ): TmuxPane {
    const dir = tempDir('ctl-pane-');
    const pane = new TmuxPane(dir, join(dir, 'tmux.sock'));
    // A script, not a command line: the program's own command line is then the only one mentioning its words.
    const script = join(dir, 'run.sh');
    const exports = Object.entries(options.env)
      .filter((e): e is [string, string] => e[1] !== undefined)
      .map(([k, v]) => `export ${k}=${quoted(v)}`);
    writeFileSync(
      script,
      [
        `cd ${quoted(options.cwd)}`,
        ...exports,
        `${argv.map(quoted).join(' ')}`,
        'status=$?',
        'stty -a | tr "\\n" " "; echo',
        'echo "EXITED $status"',
        'exec sleep 3600',
      ].join('\n') + '\n',
    );
    pane.tmux(
      'new-session',
      '-d',
      '-s',
      'top',
      '-x',
      String(options.columns),
      '-y',
      String(options.rows),
      `sh ${quoted(script)}`,
    );
    return pane;
  }

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-S', this.socket, '-f', '/dev/null', ...args], {
      encoding: 'utf8',
      env: { ...process.env, TMUX: '' },
    });
  }

  /** What the terminal shows now, a line each (trailing blanks cut). */
  screen(): string {
    return this.tmux('capture-pane', '-p', '-t', 'top');
  }

  /** A tmux format of the pane: `#{alternate_on}`, `#{cursor_flag}`, `#{pane_width}`. */
  format(format: string): string {
    return this.tmux('display-message', '-p', '-t', 'top', format).trim();
  }

  /** Waits until the screen matches `pattern`; returns the screen. */
  async waitFor(pattern: RegExp, timeoutMs = WAIT_MS): Promise<string> {
    let last = '';
    try {
      return await waitUntil(
        `the terminal to show ${pattern}`,
        () => {
          last = this.screen();
          return pattern.test(last) ? last : undefined;
        },
        timeoutMs,
        50,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; it shows:\n${last}`, { cause: err });
    }
  }

  /** Keys as tmux names them (`Enter`, `C-c`, `Down`) or single characters. */
  keys(...keys: string[]): void {
    this.tmux('send-keys', '-t', 'top', ...keys);
  }

  /** Text typed as it is. */
  type(text: string): void {
    this.tmux('send-keys', '-t', 'top', '-l', text);
  }

  resize(columns: number, rows: number): void {
    this.tmux('resize-window', '-t', 'top', '-x', String(columns), '-y', String(rows));
  }

  /** Ends the tmux server (and what still runs in it) and removes its directory. */
  close(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
