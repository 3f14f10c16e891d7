import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ConfigError } from '../../shared/config/config-error.js';
import { parseToml } from '../../shared/config/toml-syntax.js';
import { outsideTree, readWithin } from '../../shared/fs/within.js';

/**
 * A command a pack offers, run as `ctl <binding> <words…> [args…]`: the reference's legacy `[[commands]]` of
 * `pack.toml` (one word, `name`), and its `commands/<words…>/run.sh` directories (an optional `command.toml`
 * naming other `command` words, a `description`, another `run` script).
 */
export interface PackCommand {
  words: string[];
  description?: string;
  /** The script to run, relative to the pack's directory. */
  script: string;
  /** A help text file relative to the pack's directory (`long_description`, or the directory's `help.md`). */
  help?: string;
}

const WORD = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;
/** How deep `commands/` directories nest: more is a mistake, and bounds the walk. */
const MAX_WORDS = 4;

/**
 * Why a command may not be offered: its script (or help file) is a link leading out of its pack. The one check
 * listing, validate and running agree through: such a command is skipped with a warning when the pack is read, and
 * refused if the link appears later, before the next read.
 */
export function commandOutsidePack(packDir: string, command: PackCommand): string | undefined {
  for (const file of [command.script, ...(command.help !== undefined ? [command.help] : [])]) {
    const why = outsideTree(join(packDir, file), packDir, 'the pack');
    if (why) return `${file}: ${why}`;
  }
  return undefined;
}

/**
 * A pack's commands: `[[commands]]` first, then its `commands/` tree; a second command of the same words is an
 * error. One whose files lead out of the pack is left out, named in `skipped` (`<label's pack>file: why`).
 */
export function readPackCommands(dir: string, table: unknown, label: string, skipped: string[] = []): PackCommand[] {
  const out: PackCommand[] = [];
  const entries = table ?? [];
  if (!Array.isArray(entries)) throw new ConfigError(`${label}: commands must be an array of tables ([[commands]])`);
  for (const [i, raw] of entries.entries()) {
    const at = (k: string) => `${label}: commands[${i}].${k}`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new ConfigError(`${label}: commands[${i}] must be a table`);
    const t = raw as Record<string, unknown>;
    const name = t.name;
    if (typeof name !== 'string' || !WORD.test(name))
      throw new ConfigError(`${at('name')} must be one word (a-z, 0-9, . _ -)`);
    const script = packPath(t.script, at('script'), true)!;
    const help = packPath(t.long_description, at('long_description'), false);
    out.push({
      words: [name],
      script,
      ...(typeof t.description === 'string' && t.description ? { description: t.description } : {}),
      ...(help ? { help } : {}),
    });
  }
  const prefix = label.replace(/pack\.toml$/, '');
  walk(dir, join(dir, 'commands'), [], out, label, skipped);
  const seen = new Set<string>();
  for (const c of out) {
    const key = c.words.join(' ');
    if (seen.has(key)) throw new ConfigError(`${label}: two commands are named "${key}"`);
    seen.add(key);
  }
  return out.filter((c) => {
    const why = commandOutsidePack(dir, c);
    if (why) skipped.push(`${prefix}${why} (command ${c.words.join(' ')} skipped)`);
    return why === undefined;
  });
}

function walk(
  packDir: string,
  dir: string,
  words: string[],
  out: PackCommand[],
  label: string,
  skipped: string[],
): void {
  if (words.length > MAX_WORDS) return;
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return;
  }
  const file = (name: string) => join(dir, name);
  if (words.length > 0 && (names.includes('run.sh') || names.includes('command.toml'))) {
    const where = `${label.replace(/pack\.toml$/, '')}${relative(packDir, dir)}/command.toml`;
    let meta: Record<string, unknown> = {};
    if (names.includes('command.toml')) {
      const why = outsideTree(file('command.toml'), packDir, 'the pack');
      if (why) {
        skipped.push(`${where}: ${why} (command ${words.join(' ')} skipped)`);
        return;
      }
      meta = parseToml(readWithin(file('command.toml'), packDir, 'the pack'), where);
    }
    let cmdWords = words;
    if (meta.command !== undefined) {
      if (
        !Array.isArray(meta.command) ||
        meta.command.length === 0 ||
        meta.command.some((w) => typeof w !== 'string' || !WORD.test(w))
      )
        throw new ConfigError(`${where}: command must be an array of words (a-z, 0-9, . _ -)`);
      cmdWords = meta.command as string[];
    }
    const run = meta.run ?? 'run.sh';
    if (typeof run !== 'string' || run.trim() === '') throw new ConfigError(`${where}: run must be a file name`);
    const script = packPath(join(relative(packDir, dir), run), `${where}: run`, true)!;
    if (!existsSync(join(packDir, script))) {
      if (meta.run !== undefined) throw new ConfigError(`${where}: run names no file of the command's directory`);
    } else {
      out.push({
        words: cmdWords,
        script,
        ...(typeof meta.description === 'string' && meta.description ? { description: meta.description } : {}),
        ...(names.includes('help.md') ? { help: relative(packDir, file('help.md')) } : {}),
      });
    }
  }
  for (const name of names) {
    if (name.startsWith('.') || !WORD.test(name)) continue;
    const sub = file(name);
    if (!statSync(sub, { throwIfNoEntry: false })?.isDirectory() || outsideTree(sub, packDir, 'the pack')) continue;
    walk(packDir, sub, [...words, name], out, label, skipped);
  }
}

/** A path inside the pack (relative, no `..`), or undefined when absent and not required. */
function packPath(value: unknown, at: string, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new ConfigError(`${at} must be a path inside the pack`);
  const clean = value.replace(/^\.\//, '');
  if (clean.startsWith('/') || clean.split('/').includes('..'))
    throw new ConfigError(`${at} must be a path inside the pack`);
  return clean;
}
