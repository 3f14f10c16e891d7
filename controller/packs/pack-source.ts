import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSupervisorConfig } from '../../shared/config/supervisor-config.js';
import { AddressRefused, checkHostAllowed } from '../../shared/http/address-policy.js';
import { ctlHome, homePaths } from '../../shared/paths.js';

/** Where a pack comes from: a directory used in place, or a git repository fetched into the cache. */
export type PackSource =
  | { kind: 'local'; dir: string }
  | {
      kind: 'git';
      /** What `git clone` is given. */
      url: string;
      /** A directory inside the repository that holds the pack (`repo.git//packs/review`). */
      subdir?: string;
      /** The host the URL reaches (none for `file://`). */
      host?: string;
      scheme: 'https' | 'http' | 'ssh' | 'git' | 'file';
    };

const URL_SCHEME = /^(https?|ssh|git|file):\/\//;
/** `user@host:path`, git's scp-like form. */
const SCP_LIKE = /^([\w.-]+)@([\w.-]+):(?!\/\/)(.+)$/;

/**
 * A pack source as the city wrote it. A URL (`https://`, `http://`, `ssh://`, `git://`, `file://`) or
 * `user@host:path` is a git repository, with an optional `//subdir` after the repository's path; anything
 * else is a directory, relative to the city.
 */
export function parsePackSource(source: string, cityRoot: string): PackSource {
  const scp = SCP_LIKE.exec(source);
  if (scp) {
    const [repo, subdir] = splitSubdir(scp[3]!);
    return { kind: 'git', url: `${scp[1]}@${scp[2]}:${repo}`, host: scp[2], scheme: 'ssh', ...sub(subdir) };
  }
  const scheme = URL_SCHEME.exec(source)?.[1] as 'https' | 'http' | 'ssh' | 'git' | 'file' | undefined;
  if (!scheme) return { kind: 'local', dir: isAbsolute(source) ? source : resolve(cityRoot, source) };
  const afterScheme = source.slice(scheme.length + 3);
  const [rest, subdir] = splitSubdir(afterScheme);
  const url = `${scheme}://${rest}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new PackSourceError(`${source} is not a URL`);
  }
  if (scheme === 'file') {
    // Validates the path (a file URL naming another host is refused).
    fileURLToPath(parsed);
    return { kind: 'git', url, scheme, ...sub(subdir) };
  }
  return { kind: 'git', url, host: parsed.hostname.replace(/^\[|\]$/g, ''), scheme, ...sub(subdir) };
}

function sub(subdir: string | undefined): { subdir?: string } {
  return subdir ? { subdir } : {};
}

/** `a/b.git//packs/x` → [`a/b.git`, `packs/x`]. */
function splitSubdir(path: string): [string, string | undefined] {
  // The first `//` after the host's part; `file:///x` has its third slash in the path, not a separator.
  const at = path.indexOf('//', 1);
  if (at < 0) return [path, undefined];
  const subdir = path.slice(at + 2).replace(/\/+$/, '');
  if (subdir.split('/').some((seg) => seg === '..' || seg === '.')) {
    throw new PackSourceError(`the subdirectory ${subdir} may not have . or .. segments`);
  }
  return [path.slice(0, at), subdir || undefined];
}

export class PackSourceError extends Error {}

/** What sources a city may fetch packs from (`[packs]` of `supervisor.toml`). */
export interface PackSourcePolicy {
  /** `file://` repositories on this machine (default true). */
  allowFile: boolean;
  /** Hosts in private, link-local and unique-local ranges (default false; loopback is this machine's own). */
  allowPrivateNetworks: boolean;
  /** Hosts allowed whatever their address. */
  allowedHosts: string[];
}

/** The machine's policy: `[packs]` of `$CTL_HOME/supervisor.toml`, read now (an edit applies at the next fetch). */
export function machineSourcePolicy(): PackSourcePolicy {
  return readSupervisorConfig(homePaths(ctlHome()).config).packs;
}

export const DEFAULT_PACK_POLICY: PackSourcePolicy = { allowFile: true, allowPrivateNetworks: false, allowedHosts: [] };

/**
 * Refuses a source the policy does not allow, with the reason: `file://` when disabled, and a host that
 * resolves to a private, link-local (cloud metadata) or unique-local address unless allowed — the fetch is made
 * by the controller, and must not become a way to reach the machine's networks.
 */
export async function checkSourceAllowed(source: PackSource, policy: PackSourcePolicy): Promise<void> {
  if (source.kind === 'local') return;
  if (source.scheme === 'file') {
    if (!policy.allowFile) throw new PackSourceError('file:// pack sources are disabled on this machine');
    return;
  }
  const host = source.host!;
  if (policy.allowedHosts.includes(host)) return;
  try {
    await checkHostAllowed(host, policy, 'pack sources');
  } catch (err) {
    if (err instanceof AddressRefused) throw new PackSourceError(err.message);
    throw err;
  }
}

/** The binding a source gets when the request names none: its last path segment, without `.git`. */
export function bindingFor(source: PackSource, raw: string): string {
  const path = source.kind === 'local' ? source.dir : (source.subdir ?? source.url);
  const last = path.replace(/\/+$/, '').split(/[/:]/).pop() ?? raw;
  return last.replace(/\.git$/, '').replace(/[^a-zA-Z0-9_-]/g, '-');
}
