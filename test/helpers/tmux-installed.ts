import { execFileSync } from 'node:child_process';

/** Whether this machine has tmux (`.ci/run` installs it); a test of the tmux runtime or of a pane skips without. */
export function hasTmux(): boolean {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
