import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { parse } from 'smol-toml';
import { packageRoot } from '../../../shared/paths.js';

/** Where the screen rules shipped with ctl live (data, not code: a new program's rules need no release of ours). */
export const RULES_DIR = join(packageRoot, 'controller', 'sessions', 'tmux', 'rules');

/** The rules of the format this runtime reads. */
const RULES_VERSION = 1;

/**
 * How to read an interactive program's screen, as data per program (`rules/<name>.toml`): when it waits for
 * input, when it works, when it asks for permission and how to answer, which startup dialogs to answer and how.
 * Screen reading is the fallback for programs without a structured interface; these rules are its only
 * knowledge of a program.
 */
export interface ScreenRules {
  /** Where they were read from, for errors. */
  source: string;
  /** Its input line's prefix: the text after it is what has been typed (nothing: it waits for input). */
  prompt: RegExp;
  /** How many of the screen's last non-empty lines its input line may be among (below it: rules, a status line). */
  promptLines: number;
  /** Lines that are never part of a reply (rules, status lines). */
  ignore?: RegExp;
  /** A prefix its reply lines carry, left out of the reply. */
  replyPrefix?: RegExp;
  /** A status file it keeps (`{home}`, `{pid}` filled in): `status` idle, busy or waiting (for a permission prompt). */
  statusFile?: string;
  /** Seen on the screen's last lines while it works. */
  busy?: RegExp;
  interruptKeys: string[];
  /**
   * `settleMs`: how long the prompt must have been up before it takes an answer (keys sent sooner are dropped by
   * programs that guard against type-ahead approving a prompt, as Claude Code 2.1.3xx does).
   */
  permission?: { pattern: RegExp; allowKeys: string[]; denyKeys: string[]; settleMs: number };
  /** Startup dialogs: when the screen matches, send the keys. */
  dialogs: { pattern: RegExp; keys: string[] }[];
}

export class ScreenRulesError extends Error {}

function regex(value: unknown, where: string, source: string): RegExp {
  if (typeof value !== 'string' || value === '') throw new ScreenRulesError(`${source}: ${where} must be a pattern`);
  try {
    return new RegExp(value, 'm');
  } catch (err) {
    throw new ScreenRulesError(`${source}: ${where} is not a valid pattern: ${(err as Error).message}`);
  }
}

function keys(value: unknown, where: string, source: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((k) => typeof k === 'string' && k !== '')) {
    throw new ScreenRulesError(`${source}: ${where} must be a list of tmux key names`);
  }
  return value as string[];
}

function promptLines(value: unknown, source: string): number {
  if (value === undefined) return 1;
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 50) {
    throw new ScreenRulesError(`${source}: prompt_lines must be a whole number from 1 to 50`);
  }
  return value as number;
}

function settleMs(value: unknown, source: string): number {
  if (value === undefined) return 0;
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 10_000) {
    throw new ScreenRulesError(
      `${source}: permission.settle_ms must be a whole number of milliseconds from 0 to 10000`,
    );
  }
  return value as number;
}

function text(value: unknown, where: string, source: string): string {
  if (typeof value !== 'string' || value === '') throw new ScreenRulesError(`${source}: ${where} must be a string`);
  return value;
}

/** The rules `name` names: a file of the shipped ones (`claude`, `tui-agent`), or a path to a TOML file. */
export function loadScreenRules(name: string, cwd: string): ScreenRules {
  const path =
    name.includes('/') || name.endsWith('.toml')
      ? isAbsolute(name)
        ? name
        : join(cwd, name)
      : join(RULES_DIR, `${name}.toml`);
  let doc: Record<string, unknown>;
  try {
    doc = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ScreenRulesError(
      code === 'ENOENT' ? `screen rules ${name}: ${path} not found` : `screen rules ${path}: ${(err as Error).message}`,
    );
  }
  if (doc.version !== RULES_VERSION) {
    throw new ScreenRulesError(`${path}: version must be ${RULES_VERSION} (the format this ctl reads)`);
  }
  const permission = doc.permission as Record<string, unknown> | undefined;
  const dialogs = (doc.dialogs ?? []) as Record<string, unknown>[];
  if (!Array.isArray(dialogs)) throw new ScreenRulesError(`${path}: dialogs must be a list of tables`);
  return {
    source: path,
    prompt: regex(doc.prompt, 'prompt', path),
    promptLines: promptLines(doc.prompt_lines, path),
    ...(doc.ignore !== undefined ? { ignore: regex(doc.ignore, 'ignore', path) } : {}),
    ...(doc.reply_prefix !== undefined ? { replyPrefix: regex(doc.reply_prefix, 'reply_prefix', path) } : {}),
    ...(doc.status_file !== undefined ? { statusFile: text(doc.status_file, 'status_file', path) } : {}),
    ...(doc.busy !== undefined ? { busy: regex(doc.busy, 'busy', path) } : {}),
    interruptKeys: doc.interrupt_keys === undefined ? ['Escape'] : keys(doc.interrupt_keys, 'interrupt_keys', path),
    ...(permission
      ? {
          permission: {
            pattern: regex(permission.pattern, 'permission.pattern', path),
            allowKeys: keys(permission.allow_keys, 'permission.allow_keys', path),
            denyKeys: keys(permission.deny_keys, 'permission.deny_keys', path),
            settleMs: settleMs(permission.settle_ms, path),
          },
        }
      : {}),
    dialogs: dialogs.map((d, i) => ({
      pattern: regex(d.pattern, `dialogs[${i}].pattern`, path),
      keys: keys(d.keys, `dialogs[${i}].keys`, path),
    })),
  };
}
