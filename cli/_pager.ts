import { spawn } from 'node:child_process';
import { findOnPath } from '../shared/readiness.js';
import { CliError } from './_errors.js';

// Long output for a person (a review's diff) goes through their pager, as git's does: `$CTL_PAGER`, else `$PAGER`,
// else `less`; empty or `cat` means none. Only when stdout is a terminal: a pipe or a file gets the text itself.

/** The pager's command line (a shell's words), or undefined for none: chosen empty or `cat`, or no `less` found. */
export function pagerCommand(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const chosen = env.CTL_PAGER ?? env.PAGER;
  if (chosen !== undefined) return chosen.trim() === '' || chosen.trim() === 'cat' ? undefined : chosen;
  return findOnPath('less', env.PATH ?? '') ? 'less' : undefined;
}

/**
 * The pager's environment: git's defaults for `less` (`LESS=FRX`: quit when the text fits one screen, pass colour
 * through, leave the screen as it was; `LV=-c` for lv) where the person set none.
 */
export function pagerEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...env, LESS: env.LESS ?? 'FRX', LV: env.LV ?? '-c' };
}

/**
 * Shows `text` to a person: through their pager when stdout is a terminal and `paging` is not false
 * (`--no-pager`), else on stdout. Resolves when the pager has ended; one that the shell cannot run (126, 127) is
 * an error naming it, a person quitting it early is not.
 */
export async function page(text: string, paging: boolean | undefined): Promise<void> {
  const command = paging === false || !process.stdout.isTTY ? undefined : pagerCommand();
  if (command === undefined) {
    process.stdout.write(text);
    return;
  }
  const pager = spawn('sh', ['-c', command], { stdio: ['pipe', 'inherit', 'inherit'], env: pagerEnv() });
  // ^C at the pager is the pager's (less stops a search with it): ctl waits for it to end, as git does.
  const ignore = () => undefined;
  process.on('SIGINT', ignore);
  try {
    const ended = new Promise<number | null>((resolve, reject) => {
      pager.on('error', reject);
      pager.on('close', (code) => resolve(code));
    });
    // Quitting before reading it all closes the pipe: what was left unread is not an error.
    pager.stdin.on('error', ignore);
    pager.stdin.end(text);
    const code = await ended;
    if (code === 126 || code === 127) {
      throw new CliError(`the pager ${JSON.stringify(command)} could not be run; set CTL_PAGER, or pass --no-pager`);
    }
  } finally {
    process.off('SIGINT', ignore);
  }
}
