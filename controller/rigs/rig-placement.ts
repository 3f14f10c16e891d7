import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';
import {
  checkHome,
  DirectoryRefused,
  isWithin,
  resolveDirectory,
  type ResolvedDirectory,
} from '../../shared/fs/city-directory.js';
import { Problem } from '../../shared/http/problem.js';
import { ctlHome } from '../../shared/paths.js';

/**
 * Where a rig's directory may be, by the placement rules of a city directory (decisions.md) — resolved to its real
 * path, never a system directory or under /proc, /sys, /dev, /etc or /boot, never `$CTL_HOME` or around it — and
 * by a rig's own: never a person's home directory itself, never the city or a directory around it, never inside
 * its `.ctl/`, and a relative path stays inside the city (`..` out of it is refused; an absolute path says where
 * on purpose). A 422 naming the rule, at `body.path`.
 */
export async function checkRigPath(
  written: string,
  cityRoot: string,
  options: { mustExist: boolean },
): Promise<ResolvedDirectory> {
  try {
    if (!isAbsolute(written)) {
      const inside = relative(cityRoot, join(cityRoot, written));
      if (inside === '..' || inside.startsWith(`..${sep}`)) {
        throw new DirectoryRefused(
          'escapes_city',
          `${written} leads out of the city with ".." (write an absolute path for a directory elsewhere)`,
        );
      }
    }
    const resolved = await resolveDirectory(written, cityRoot);
    const path = resolved.path;
    for (const home of homes()) {
      if (path === home) {
        throw new DirectoryRefused('home_directory', `${path} is a home directory (a subdirectory is fine)`);
      }
    }
    checkHome(path, ctlHome());
    const city = realOr(cityRoot);
    if (path === city || isWithin(city, path)) {
      throw new DirectoryRefused('contains_city', `${path} is the city's own directory or contains it (${city})`);
    }
    const runtime = join(city, '.ctl');
    if (path === runtime || isWithin(path, runtime)) {
      throw new DirectoryRefused('inside_city', `${path} is inside the city's .ctl/ runtime directory`);
    }
    if (options.mustExist && resolved.missing.length > 0) {
      throw new DirectoryRefused('not_a_directory', `${path} is not an existing directory`);
    }
    return resolved;
  } catch (err) {
    if (!(err instanceof DirectoryRefused)) throw err;
    const message = `${err.message} (rule: ${err.rule})`;
    throw new Problem('validation-failed', `invalid: cannot use this directory for a rig: ${message}`, {
      errors: [{ location: 'body.path', message, value: written }],
    });
  }
}

/** `$HOME` and the account's home directory, real. */
function homes(): string[] {
  return [...new Set([process.env.HOME, homedir()].filter((h): h is string => !!h).map(realOr))];
}

function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
