import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { execa } from 'execa';
import { ctlEntryPath } from '../../shared/paths.js';
import { findOnPath } from '../../shared/readiness.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `ctl` binary (the built one) and captures what it prints. */
export async function runCtl(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; input?: string } = {},
): Promise<CliResult> {
  const result = await execa(process.execPath, [ctlEntryPath(), ...args], {
    env: { ...process.env, NO_COLOR: undefined, FORCE_COLOR: undefined, ...options.env },
    cwd: options.cwd,
    reject: false,
    timeout: options.timeoutMs ?? 60_000,
    // What a hook pipes in (`ctl hook-event`); nothing otherwise.
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' as const }),
  });
  return { code: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** A shell word: `word`, single-quoted. */
function quoted(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs the real `ctl` with stderr on a terminal, as a person runs it (a pty from util-linux `script`), and
 * stdout to a file, as a pipe would take it. Undefined where `script` is not installed.
 */
export async function runCtlWithTerminal(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<CliResult | undefined> {
  if (!findOnPath('script', process.env.PATH ?? '')) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'ctl-tty-'));
  const out = join(dir, 'stdout');
  try {
    const command = [process.execPath, ctlEntryPath(), ...args].map(quoted).join(' ');
    const result = await execa('script', ['-qefc', `${command} > ${quoted(out)}`, '/dev/null'], {
      env: { ...process.env, ...options.env },
      cwd: options.cwd,
      reject: false,
      timeout: 60_000,
      stdin: 'ignore',
    });
    return {
      code: result.exitCode ?? -1,
      stdout: readFileSync(out, 'utf8').replace(/\n$/, ''),
      // What reached the terminal: stderr, with the terminal's line endings.
      stderr: String(result.stdout).replace(/\r\n/g, '\n'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the real `ctl` with stdout and stderr on a terminal `columns` wide (a pty from util-linux `script`, which
 * Debian and CI have), as a person at a terminal runs it; returns what reached the terminal (both streams, `\n`
 * line ends) as stdout.
 */
export async function runCtlOnTerminal(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; columns?: number } = {},
): Promise<CliResult> {
  if (!findOnPath('script', process.env.PATH ?? '')) throw new Error('terminal tests need util-linux script');
  const command = [process.execPath, ctlEntryPath(), ...args].map(quoted).join(' ');
  const result = await execa(
    'script',
    ['-qefc', `stty cols ${options.columns ?? 80} rows 50; exec ${command}`, '/dev/null'],
    {
      env: { ...process.env, NO_COLOR: undefined, FORCE_COLOR: undefined, ...options.env },
      cwd: options.cwd,
      reject: false,
      timeout: 60_000,
      stdin: 'ignore',
    },
  );
  return {
    code: result.exitCode ?? -1,
    stdout: String(result.stdout).replace(/\r\n/g, '\n').replace(/\n$/, ''),
    stderr: String(result.stderr),
  };
}

/** The lines of an output (runCtl, through execa, has already stripped the final newline). */
export function lines(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

/** Exit 0, nothing on stderr; returns stdout's lines. */
export function expectSuccess(result: CliResult): string[] {
  expect(result.stderr, `stderr of a successful run (stdout: ${result.stdout.slice(0, 500)})`).to.equal('');
  expect(result.code, 'exit status').to.equal(0);
  return lines(result.stdout);
}

/**
 * The failure contract (decisions.md, "The `ctl` client"): exit 1, empty stdout, exactly one plain stderr line
 * `ctl <command>: …` (`ctl: …` for no command); returns the text after the prefix, which includes `pattern`
 * (a string) or matches it (a RegExp).
 */
export function expectFailure(result: CliResult, command: string, pattern?: RegExp | string): string {
  const prefix = command === '' ? 'ctl: ' : `ctl ${command}: `;
  expect(result.stdout, `stdout of a failed run (stderr: ${result.stderr})`).to.equal('');
  expect(result.code, `exit status (stderr: ${result.stderr})`).to.equal(1);
  expect(result.stderr, 'no terminal escapes on stderr').to.not.include('\u001b[');
  const errLines = lines(result.stderr);
  expect(errLines, `exactly one stderr line: ${JSON.stringify(result.stderr)}`).to.have.length(1);
  const line = errLines[0];
  expect(line.startsWith(prefix), `${JSON.stringify(line)} starts with ${JSON.stringify(prefix)}`).to.equal(true);
  const message = line.slice(prefix.length);
  expect(message.trim(), 'a message after the prefix').to.not.equal('');
  if (typeof pattern === 'string') expect(message).to.include(pattern);
  else if (pattern) expect(message).to.match(pattern);
  return message;
}
