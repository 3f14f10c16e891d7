import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { readTomlText } from '../../shared/config/toml-file.js';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { ctlHome } from '../../shared/paths.js';
import type { PackSource } from './pack-source.js';
import { loadSimpleGit } from '../simple-git.js';

/** A fetch that takes longer than this fails (the cache keeps what it had). */
const FETCH_TIMEOUT_MS = 120_000;

/** `packs.lock`: the commit each git-backed import resolved to, so every start reads the same content. */
export interface PackLockEntry {
  source: string;
  version?: string;
  commit: string;
  fetched_at: string;
}

const LOCK_FILE = 'packs.lock';

/** The machine's pack cache, shared by its cities. */
export function packCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(ctlHome(env), 'cache', 'packs');
}

export function readPackLock(cityRoot: string): Record<string, PackLockEntry> {
  const path = join(cityRoot, LOCK_FILE);
  if (!existsSync(path)) return {};
  let doc: Record<string, unknown>;
  try {
    doc = parse(readTomlText(path, LOCK_FILE));
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${LOCK_FILE}: ${(err as Error).message.split('\n')[0]}`);
  }
  const packs = (doc.packs ?? {}) as Record<string, PackLockEntry>;
  for (const [key, entry] of Object.entries(packs)) {
    // The reference keys its lock by source (`[packs."https://…//packs/core"] commit = …`, no `source`): the key
    // is the source then, so a city written for the reference starts from its own lock.
    if (entry && typeof entry === 'object' && entry.source === undefined && /^[\w+.-]+:\/\/|@/.test(key)) {
      entry.source = key;
    }
    if (typeof entry?.commit !== 'string' || typeof entry.source !== 'string') {
      throw new ConfigError(`${LOCK_FILE}: packs.${key} needs a source and a commit`);
    }
  }
  return packs;
}

/** The lock is ours (people commit it, nobody edits it): written whole, atomically. */
export function writePackLock(cityRoot: string, packs: Record<string, PackLockEntry>): void {
  const header = '# Written by ctl: the commit each git-backed pack resolved to. Commit it with city.toml.\n';
  const sorted = Object.fromEntries(Object.entries(packs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  writeFileAtomic(join(cityRoot, LOCK_FILE), `${header}${stringify({ packs: sorted })}\n`);
}

/** One repository's place in the machine's pack cache (`$CTL_HOME/cache/packs/<hash of its URL>`). */
export function repoCacheDir(cacheRoot: string, url: string): string {
  return join(cacheRoot, createHash('sha256').update(url).digest('hex').slice(0, 16));
}

/** The pack's directory in the cache at a commit, when it has been fetched; never fetches. */
export function installedPackDir(
  cacheRoot: string,
  source: PackSource & { kind: 'git' },
  commit: string,
): string | undefined {
  const dir = join(repoCacheDir(cacheRoot, source.url), commit, source.subdir ?? '');
  return existsSync(dir) ? dir : undefined;
}

export class PackFetchError extends Error {}

/**
 * Fetches a git-backed pack into the cache with the machine's `git` (a mirror per repository, updated on each
 * fetch), resolves `version` to a commit and lays that commit's files out beside the mirror. The files are
 * written to a temporary directory first and renamed into place, so a half-made checkout is never read.
 */
export async function fetchPack(
  cacheRoot: string,
  source: PackSource & { kind: 'git' },
  version: string | undefined,
): Promise<{ commit: string; dir: string }> {
  const home = repoCacheDir(cacheRoot, source.url);
  const mirror = join(home, 'repo.git');
  mkdirSync(home, { recursive: true });
  const simpleGit = await loadSimpleGit();
  const git = simpleGit({ timeout: { block: FETCH_TIMEOUT_MS } });
  try {
    if (existsSync(join(mirror, 'HEAD'))) {
      await simpleGit(mirror, { timeout: { block: FETCH_TIMEOUT_MS } }).raw(['remote', 'update', '--prune']);
    } else {
      const temp = `${mirror}.${randomBytes(4).toString('hex')}`;
      await git.raw(['clone', '--mirror', '--quiet', source.url, temp]);
      try {
        renameSync(temp, mirror);
      } catch (err) {
        // Another city fetched the same repository meanwhile: its mirror serves us too.
        rmSync(temp, { recursive: true, force: true });
        if (!existsSync(join(mirror, 'HEAD'))) throw err;
      }
    }
  } catch (err) {
    throw new PackFetchError(`git could not fetch ${source.url}: ${firstLine(err)}`);
  }
  const commit = await resolveVersion(mirror, version);
  const dir = join(home, commit);
  if (!existsSync(dir)) {
    const temp = `${dir}.${randomBytes(4).toString('hex')}`;
    try {
      await git.raw(['clone', '--shared', '--no-checkout', '--quiet', mirror, temp]);
      await simpleGit(temp).raw(['checkout', '--quiet', '--detach', commit]);
      rmSync(join(temp, '.git'), { recursive: true, force: true });
      renameSync(temp, dir);
    } catch (err) {
      rmSync(temp, { recursive: true, force: true });
      if (!existsSync(dir)) throw new PackFetchError(`git could not check out ${commit}: ${firstLine(err)}`);
    }
  }
  const packDir = join(dir, source.subdir ?? '');
  if (!existsSync(packDir)) throw new PackFetchError(`${source.url} has no directory ${source.subdir} at ${commit}`);
  return { commit, dir: packDir };
}

/** `sha:<commit>`, a semver range over the tags (`^1.2`), a branch or tag, or the default branch's head. */
async function resolveVersion(mirror: string, version: string | undefined): Promise<string> {
  const git = (await loadSimpleGit())(mirror);
  const commitOf = async (ref: string) =>
    (await git.raw(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]).catch(() => '')).trim();
  const ref = version === undefined ? 'HEAD' : version.startsWith('sha:') ? version.slice(4) : version;
  const exact = await commitOf(ref);
  if (exact) return exact;
  // `^1.2.0`, `1.x`, `>=2`: a range over the tags, when no branch or tag has that very name.
  if (
    version !== undefined &&
    !version.startsWith('sha:') &&
    (await loadSemver()).validRange(version, { loose: true }) !== null
  ) {
    return commitOf(await newestTag(mirror, version));
  }
  throw new PackFetchError(`the repository has no branch, tag or commit ${JSON.stringify(version ?? 'HEAD')}`);
}

async function newestTag(mirror: string, range: string): Promise<string> {
  const tags = (await (await loadSimpleGit())(mirror).raw(['tag', '--list'])).split('\n').filter(Boolean);
  const semver = await loadSemver();
  const best = semver.maxSatisfying(
    tags.filter((t) => semver.valid(semver.clean(t) ?? '') !== null),
    range,
    { loose: true },
  );
  if (!best) throw new PackFetchError(`no tag satisfies ${range} (tags: ${tags.slice(0, 10).join(', ') || 'none'})`);
  return best;
}

/** semver, loaded with the first version range to resolve (see ../simple-git.ts for why). */
async function loadSemver(): Promise<typeof import('semver')> {
  return (await import('semver')).default;
}

function firstLine(err: unknown): string {
  const message = (err as Error).message ?? String(err);
  return (
    message
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l && !l.startsWith('Cloning')) ?? 'git failed'
  );
}
