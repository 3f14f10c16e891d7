import { execa } from 'execa';
import { ctlEntryPath } from '../../shared/paths.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `ctl` binary (the built one) and captures what it prints. */
export async function runCtl(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const result = await execa(process.execPath, [ctlEntryPath(), ...args], {
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
    reject: false,
    timeout: options.timeoutMs ?? 60_000,
    stdin: 'ignore',
  });
  return { code: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}
