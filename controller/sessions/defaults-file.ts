import { existsSync, lstatSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type { DefaultsFile } from '../providers/provider-spec.js';

/** The session's own defaults file, in its directory: never the person's home or their system's. */
export const DEFAULTS_FILE = 'program-defaults.json';

/** What the program's settings files hold: JSON objects. */
type Settings = Record<string, unknown>;

const isObject = (value: unknown): value is Settings =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `top` over `base`: objects merged key by key, anything else (arrays included) replaced. */
export function overlaySettings(base: Settings, top: Settings): Settings {
  const merged: Settings = { ...base };
  for (const [key, value] of Object.entries(top)) {
    const under = merged[key];
    merged[key] = isObject(under) && isObject(value) ? overlaySettings(under, value) : value;
  }
  return merged;
}

/**
 * The file the program reads when started with `env` and no file of ours: the one the variable names, else the
 * first fallback whose variables are set.
 */
export function defaultsFileRead(spec: DefaultsFile, env: NodeJS.ProcessEnv): string | undefined {
  const named = env[spec.env];
  if (named) return resolve(named);
  for (const candidate of spec.fallbacks) {
    let applies = true;
    const path = candidate.replaceAll(/\{env_dir:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const value = env[name];
      if (!value) applies = false;
      return value ? dirname(resolve(value)) : '';
    });
    if (applies) return path;
  }
  return undefined;
}

/** What the checks below read of a path: its owner, mode, and whether it is a symbolic link itself. */
export interface PathFacts {
  lstat(path: string): { uid: number; mode: number; isSymbolicLink(): boolean };
  stat(path: string): { uid: number; mode: number };
  realpath(path: string): string;
}

const REAL_FS: PathFacts = { lstat: lstatSync, stat: statSync, realpath: realpathSync };

/** The path and every directory above it, the path first. */
function withAncestors(path: string): string[] {
  const paths = [path];
  for (let dir = dirname(path); dir !== paths.at(-1); dir = dirname(dir)) paths.push(dir);
  return paths;
}

/**
 * Why Gemini CLI would not read `file` as a system file, or nothing when it would: the file and every directory
 * above it — where they are and where their links lead — must belong to root and be writable by no one else (its
 * `isFileAndDirectorySecureSync`), so that no one but root can change what every run of it is set to.
 */
export function rootOnlyRefusal(file: string, facts: PathFacts = REAL_FS): string | undefined {
  try {
    const paths = withAncestors(resolve(file));
    const real = facts.realpath(file);
    if (real !== paths[0]) paths.push(...withAncestors(real));
    for (const path of new Set(paths)) {
      const link = facts.lstat(path);
      if (link.isSymbolicLink() && link.uid !== 0) return `${path} is a link not owned by root`;
      const { uid, mode } = facts.stat(path);
      if (uid !== 0) return `${path} is not owned by root`;
      if ((mode & 0o022) !== 0) return `${path} is writable by group or others`;
    }
    return undefined;
  } catch (err) {
    // What cannot be looked at cannot be shown safe (Gemini CLI refuses it too).
    return err instanceof Error ? err.message : String(err);
  }
}

/** The refusals each logger (a controller's) has warned of. */
const saidNotRead = new WeakMap<Logger, Set<string>>();

/**
 * Hands the program its provider's defaults file: writes the session's own (what the file the program would read
 * says, with the preset's settings on top) and names it in `env`. Where the program would not read it (a
 * `root_only` file outside a root-owned tree), nothing changes: `env` keeps whatever file it named, and why is
 * logged. A person's file that is not plain JSON is kept as it is, ours not handed (we will not guess at it); one
 * the program itself would refuse is not read.
 */
export function handDefaultsFile(
  spec: DefaultsFile,
  env: NodeJS.ProcessEnv,
  sessionDir: string,
  logger: Logger,
  facts: PathFacts = REAL_FS,
): void {
  const ours = join(sessionDir, DEFAULTS_FILE);
  const notRead = (refused: string) => {
    // Said once per reason: every session of a city in a person's own folder would otherwise repeat it at start.
    const said = saidNotRead.get(logger) ?? new Set<string>();
    saidNotRead.set(logger, said);
    const level = said.has(`${spec.env} ${refused}`) ? 'debug' : 'warn';
    said.add(`${spec.env} ${refused}`);
    logger[level](
      { file: ours, settings: spec.settings },
      `${spec.env}: the program would not read a defaults file here (${refused}); its settings are left as they ` +
        `are — to have them, put ${JSON.stringify(spec.settings)} in your own settings for it`,
    );
  };
  // The folder first: where it is refused, nothing is written (a person's city, most often).
  const folderRefused = spec.root_only ? rootOnlyRefusal(sessionDir, facts) : undefined;
  if (folderRefused !== undefined) return notRead(folderRefused);
  const theirs = defaultsFileRead(spec, env);
  let base: Settings = {};
  if (theirs !== undefined && existsSync(theirs)) {
    const refused = spec.root_only ? rootOnlyRefusal(theirs, facts) : undefined;
    if (refused === undefined) {
      let text: string;
      let parsed: unknown;
      try {
        text = readFileSync(theirs, 'utf8');
      } catch (err) {
        logger.warn({ err, file: theirs }, `${spec.env}: could not be read; kept as it is, ctl's defaults not added`);
        return;
      }
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        logger.warn({ err, file: theirs }, `${spec.env}: not plain JSON; kept as it is, ctl's defaults not added`);
        return;
      }
      if (!isObject(parsed)) {
        logger.warn({ file: theirs }, `${spec.env}: not a JSON object; kept as it is, ctl's defaults not added`);
        return;
      }
      base = parsed;
    }
  }
  writeFileAtomic(ours, `${JSON.stringify(overlaySettings(base, spec.settings), null, 2)}\n`, { mode: 0o644 });
  const refused = spec.root_only ? rootOnlyRefusal(ours, facts) : undefined;
  if (refused !== undefined) {
    rmSync(ours, { force: true });
    return notRead(refused);
  }
  env[spec.env] = ours;
}
