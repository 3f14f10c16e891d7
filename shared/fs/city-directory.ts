import { constants } from 'node:fs';
import { access, lstat, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { bounded, FsTimeoutError } from './bounded.js';

/** The rule a refused directory broke; part of the 422's detail and of its `errors[]` entry. */
export type DirectoryRule =
  | 'not_absolute'
  | 'too_long'
  | 'system_directory'
  | 'ctl_home'
  | 'inside_city'
  | 'contains_city'
  | 'not_a_directory'
  | 'dangling_symlink'
  | 'symlink_loop'
  | 'not_accessible'
  | 'not_writable'
  | 'not_a_city'
  | 'unresponsive'
  /** A rig's path: a person's home directory itself. */
  | 'home_directory'
  /** A rig's relative path whose `..` leads out of its city. */
  | 'escapes_city';

/** A directory that may not be used for a city, and the rule that says so. */
export class DirectoryRefused extends Error {
  constructor(
    readonly rule: DirectoryRule,
    message: string,
  ) {
    super(message);
  }
}

/** Anything below these is never a city: kernel interfaces (a mkdir under /proc never returns) and system state. */
const SYSTEM_TREES = ['/proc', '/sys', '/dev', '/etc', '/boot'];
/** These themselves are never a city; their subdirectories are fine (`/home/me/alpha`, `/tmp/x`). */
const SYSTEM_DIRECTORIES = new Set([
  '/',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib64',
  '/var',
  '/opt',
  '/home',
  '/root',
  '/tmp',
]);

// Linux's PATH_MAX counts the terminating NUL; NAME_MAX is per component.
const PATH_MAX = 4096;
const NAME_MAX = 255;

export function isWithin(path: string, ancestor: string): boolean {
  return ancestor === sep ? path !== sep : path.startsWith(ancestor + sep);
}

/** Refuses a path (lexical or real) that is or lies in a system location. */
function checkSystem(path: string): void {
  for (const tree of SYSTEM_TREES) {
    if (path === tree || isWithin(path, tree)) {
      throw new DirectoryRefused('system_directory', `${path} is under ${tree}, which never holds a city`);
    }
  }
  if (SYSTEM_DIRECTORIES.has(path)) {
    throw new DirectoryRefused('system_directory', `${path} is a system directory (a subdirectory of it is fine)`);
  }
}

function checkLength(path: string): void {
  if (Buffer.byteLength(path) >= PATH_MAX) {
    throw new DirectoryRefused('too_long', `the path is longer than ${PATH_MAX - 1} bytes`);
  }
  const long = path.split(sep).find((part) => Buffer.byteLength(part) > NAME_MAX);
  if (long !== undefined) {
    throw new DirectoryRefused(
      'too_long',
      `the path component ${JSON.stringify(long.slice(0, 40) + '…')} is longer than ${NAME_MAX} bytes`,
    );
  }
}

function refusedFor(err: unknown, path: string): DirectoryRefused {
  if (err instanceof DirectoryRefused) return err;
  if (err instanceof FsTimeoutError) {
    return new DirectoryRefused('unresponsive', `the filesystem did not answer for ${path} within ${err.ms} ms`);
  }
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ELOOP':
      return new DirectoryRefused('symlink_loop', `${path} goes through a loop of symbolic links`);
    case 'ENOTDIR':
      return new DirectoryRefused('not_a_directory', `a component of ${path} is not a directory`);
    case 'ENAMETOOLONG':
      return new DirectoryRefused('too_long', `${path} is too long for the filesystem`);
    case 'EACCES':
    case 'EPERM':
      return new DirectoryRefused('not_accessible', `${path} cannot be accessed (${code})`);
    case 'EROFS':
      return new DirectoryRefused('not_writable', `${path} is on a read-only filesystem`);
    default:
      return new DirectoryRefused('not_accessible', `${path}: ${(err as Error).message}`);
  }
}

/** Where a directory really is: its real path, and the trailing components that do not exist yet. */
export interface ResolvedDirectory {
  /** The real path (symbolic links resolved) the city would have. */
  path: string;
  /** The deepest existing ancestor (or the path itself), real. */
  existing: string;
  /** Directories still to create, outermost first (full real paths). */
  missing: string[];
}

/**
 * Resolves a city directory without ever blocking the event loop or waiting without bound: refuses what the
 * path names before touching the filesystem (system trees such as /proc, where a mkdir never returns; over-long
 * paths), then finds the real path of its deepest existing ancestor (symbolic links, `/proc/self/root/…`),
 * refuses dangling links and loops, checks the real path again, and that what exists is a writable directory.
 */
export async function resolveDirectory(input: string, base: string): Promise<ResolvedDirectory> {
  if (input.includes('\0')) throw new DirectoryRefused('not_accessible', 'the path contains a NUL byte');
  const lexical = resolve(base, input);
  if (!isAbsolute(lexical)) throw new DirectoryRefused('not_absolute', `${input} is not an absolute path`);
  checkLength(lexical);
  checkSystem(lexical);

  const missing: string[] = [];
  let existing = lexical;
  let real: string;
  for (;;) {
    try {
      real = await bounded(`realpath ${existing}`, realpath(existing));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw refusedFor(err, existing);
      // Missing, or a symbolic link to nothing: the second must not be created through.
      const link = await bounded(`lstat ${existing}`, lstat(existing)).catch(() => undefined);
      if (link?.isSymbolicLink()) {
        throw new DirectoryRefused(
          'dangling_symlink',
          `${existing} is a symbolic link to something that does not exist`,
        );
      }
      missing.unshift(basename(existing));
      existing = dirname(existing);
    }
  }
  const path = join(real, ...missing);
  checkLength(path);
  checkSystem(path);
  try {
    const st = await bounded(`stat ${real}`, stat(real));
    if (!st.isDirectory()) throw new DirectoryRefused('not_a_directory', `${real} exists and is not a directory`);
    await bounded(`access ${real}`, access(real, constants.W_OK)).catch((err: unknown) => {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
        throw new DirectoryRefused('not_writable', `${real} is not writable`);
      }
      throw err;
    });
  } catch (err) {
    throw refusedFor(err, real);
  }
  const created: string[] = [];
  let at = real;
  for (const part of missing) {
    at = join(at, part);
    created.push(at);
  }
  return { path, existing: real, missing: created };
}

/** A registered (or being registered) city, by its real path. */
export interface KnownCity {
  name: string;
  path: string;
}

/**
 * The placement rules of decisions.md: not `$CTL_HOME`, inside it or around it; not inside another city (or
 * its `.ctl/`); not an ancestor of one. `self` is a city's own path (register again, rename), which is allowed.
 */
export function checkPlacement(path: string, home: string, cities: KnownCity[], self?: string): void {
  checkHome(path, home);
  for (const city of cities) {
    if (city.path === self) continue;
    if (isWithin(path, city.path)) {
      const inRuntime = isWithin(path, join(city.path, '.ctl')) || path === join(city.path, '.ctl');
      throw new DirectoryRefused(
        'inside_city',
        `${path} is inside city ${city.name} (${city.path}${inRuntime ? ', in its .ctl/ runtime directory' : ''})`,
      );
    }
    if (isWithin(city.path, path)) {
      throw new DirectoryRefused('contains_city', `${path} contains city ${city.name} (${city.path})`);
    }
  }
}

/** Not `$CTL_HOME`, inside it or around it. */
export function checkHome(path: string, home: string): void {
  if (path === home || isWithin(path, home)) {
    throw new DirectoryRefused('ctl_home', `${path} is the supervisor's home ($CTL_HOME ${home}) or inside it`);
  }
  if (isWithin(home, path)) {
    throw new DirectoryRefused('ctl_home', `${path} contains the supervisor's home ($CTL_HOME ${home})`);
  }
}
