import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { LOCAL_HOST } from './host.js';

/** One `[[host]]` table of a city's configuration (or a pack's), as validated. */
export interface HostConfig {
  name: string;
  /** As written: `ssh://user@host[:port]`. */
  address: string;
  user: string;
  hostname: string;
  port: number;
  /** An absolute path (relative ones resolved against the city), readable by the controller. */
  identity_file?: string;
  /** An absolute path; without one, the controller's user's own known_hosts. Host keys are always checked. */
  known_hosts?: string;
  /** How many sessions may run there at once (default 1). */
  slots: number;
  labels: string[];
  /** Where worktrees, session files and ctl's own bundle live on the host (default `~/.ctl-work`). */
  work_root: string;
  /** The file that declares it (`city.toml`, `pack:<binding>/pack.toml`). */
  source?: string;
}

/** What a check of a host found. */
export interface HostProbe {
  /** It answered and has what ctl needs to run there (git; node is shipped). */
  ok: boolean;
  /** How long it took to answer; absent when it did not (its git and tmux are then unknown, not missing). */
  rtt_ms?: number;
  /** Of the Node ctl runs there (shipped by ctl). */
  node_version?: string;
  /** Of the ctl bundle there (shipped by ctl). */
  ctl_version?: string;
  /** Whether it has git and tmux (a tmux agent cannot be placed on a host without it). */
  git: boolean;
  tmux: boolean;
  /** Why it is not usable, for a person. */
  error?: string;
}

/** A `[[host]]` name, or a label: one word, as URLs and `hosts = [...]` carry them. */
export const HOST_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

/** Where a host keeps ctl's files when its table says nothing. */
export const DEFAULT_WORK_ROOT = '~/.ctl-work';

/** Something wrong with one `[[host]]` table: the host is left out, the rest of the city runs. */
export interface HostProblem {
  file: string;
  /** `host[2].address`. */
  key: string;
  message: string;
}

/** The user, host name and port of an `ssh://user@host[:port]` address, or why it is not one. */
export function parseSshAddress(address: string): { user: string; hostname: string; port: number } | string {
  if (!address.startsWith('ssh://')) return `must be ssh://user@host[:port] (got ${JSON.stringify(address)})`;
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return `is not an address: ${JSON.stringify(address)} (ssh://user@host[:port])`;
  }
  if (!url.username) return `names no user: ssh://user@host[:port] (got ${JSON.stringify(address)})`;
  if (url.password) return 'must not carry a password: ctl logs in with a key (identity_file), never a password';
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) {
    return `must be only ssh://user@host[:port], with no path or query (got ${JSON.stringify(address)})`;
  }
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!hostname) return `names no host: ssh://user@host[:port] (got ${JSON.stringify(address)})`;
  const port = url.port ? Number(url.port) : 22;
  // A user or host starting with `-` would be read by ssh as an option.
  const user = decodeURIComponent(url.username);
  if (user.startsWith('-') || hostname.startsWith('-')) return `must not start a user or host with "-"`;
  return { user, hostname, port };
}

/**
 * The `[[host]]` tables of one file (`city.toml`, or a pack's `pack.toml` as `file` names it), checked key by key:
 * the good ones, and a problem naming the key of each bad one (left out). `root` is the city's directory, which a
 * relative `identity_file` or `known_hosts` is resolved against; both must be readable files.
 */
export function parseHostTables(
  value: unknown,
  file: string,
  root: string,
): { hosts: HostConfig[]; problems: HostProblem[] } {
  const hosts: HostConfig[] = [];
  const problems: HostProblem[] = [];
  if (value === undefined) return { hosts, problems };
  if (!Array.isArray(value)) {
    problems.push({ file, key: 'host', message: `${file}: host must be an array of tables ([[host]])` });
    return { hosts, problems };
  }
  for (const [i, table] of value.entries()) {
    try {
      hosts.push({ ...parseHostTable(table, `host[${i}]`, root), source: file });
    } catch (err) {
      if (!(err instanceof BadHost)) throw err;
      problems.push({ file, key: err.key, message: `${file}: ${err.key} ${err.message}` });
    }
  }
  return { hosts, problems };
}

class BadHost extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

function parseHostTable(value: unknown, at: string, root: string): HostConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadHost(at, 'must be a table');
  const t = value as Record<string, unknown>;
  const text = (key: string, required: boolean): string | undefined => {
    const v = t[key];
    if (v === undefined) {
      if (required) throw new BadHost(`${at}.${key}`, 'is required');
      return undefined;
    }
    if (typeof v !== 'string' || v.trim() === '') throw new BadHost(`${at}.${key}`, 'must be a non-empty string');
    return v;
  };
  const name = text('name', true)!;
  if (!HOST_NAME_PATTERN.test(name)) throw new BadHost(`${at}.name`, `must match ${HOST_NAME_PATTERN.source}`);
  if (name === LOCAL_HOST) throw new BadHost(`${at}.name`, `"${LOCAL_HOST}" is this machine's name; call it otherwise`);
  const address = text('address', true)!;
  const parsed = parseSshAddress(address);
  if (typeof parsed === 'string') throw new BadHost(`${at}.address`, parsed);
  const slotsValue = t.slots ?? 1;
  const slots = typeof slotsValue === 'bigint' ? Number(slotsValue) : slotsValue;
  if (typeof slots !== 'number' || !Number.isInteger(slots) || slots < 1) {
    throw new BadHost(
      `${at}.slots`,
      `must be an integer, 1 or more (got ${typeof slots === 'number' ? slots : JSON.stringify(slots)})`,
    );
  }
  const labelsValue = t.labels ?? [];
  if (!Array.isArray(labelsValue) || labelsValue.some((l) => typeof l !== 'string' || !HOST_NAME_PATTERN.test(l))) {
    throw new BadHost(`${at}.labels`, `must be an array of words (each matching ${HOST_NAME_PATTERN.source})`);
  }
  const labels = labelsValue as string[];
  if (labels.includes(LOCAL_HOST)) throw new BadHost(`${at}.labels`, `must not be "${LOCAL_HOST}" (this machine)`);
  const workRoot = text('work_root', false) ?? DEFAULT_WORK_ROOT;
  if (!workRoot.startsWith('/') && !workRoot.startsWith('~/')) {
    throw new BadHost(`${at}.work_root`, `must be absolute on the host, or under its home (~/…) (got "${workRoot}")`);
  }
  const config: HostConfig = { name, address, ...parsed, slots, labels, work_root: workRoot };
  for (const key of ['identity_file', 'known_hosts'] as const) {
    const path = text(key, false);
    if (path === undefined) continue;
    const absolute = isAbsolute(path) ? path : resolve(root, path);
    const why = unreadable(absolute);
    if (why) throw new BadHost(`${at}.${key}`, `${absolute} ${why}`);
    config[key] = absolute;
  }
  return config;
}

/** Why the controller cannot read `path` as a file, or undefined when it can. */
function unreadable(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return 'is not a file';
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'does not exist';
    if (code === 'EACCES') return 'is not readable by the controller';
    return `cannot be read (${code ?? (err as Error).message})`;
  }
}

/**
 * The hosts a city has: those of `city.toml`, then those of its packs; a second host of a name already taken is
 * a problem naming both files, and left out.
 */
export function mergeHosts(sets: { hosts: HostConfig[]; problems: HostProblem[] }[]): {
  hosts: HostConfig[];
  problems: HostProblem[];
} {
  const hosts: HostConfig[] = [];
  const problems: HostProblem[] = [];
  for (const set of sets) {
    problems.push(...set.problems);
    for (const host of set.hosts) {
      const first = hosts.find((h) => h.name === host.name);
      if (first) {
        problems.push({
          file: host.source ?? 'city.toml',
          key: 'host',
          message: `${host.source ?? 'city.toml'}: two hosts are named ${host.name} (the first in ${first.source ?? 'city.toml'}): this one is left out`,
        });
        continue;
      }
      hosts.push(host);
    }
  }
  // A label that is also a host's name would make `hosts = ["x"]` mean two things.
  for (const host of hosts) {
    const clash = host.labels.find((l) => hosts.some((h) => h.name === l));
    if (clash) {
      problems.push({
        file: host.source ?? 'city.toml',
        key: 'host',
        message: `${host.source ?? 'city.toml'}: host ${host.name} has the label ${clash}, which is also a host's name: hosts = ["${clash}"] would mean both`,
      });
    }
  }
  return { hosts, problems };
}

/**
 * The names in an agent's `hosts` list that name nothing: no `[[host]]`, no host's label, not `local`.
 */
export function unknownHostNames(list: readonly string[], hosts: readonly HostConfig[]): string[] {
  return list.filter((n) => n !== LOCAL_HOST && !hosts.some((h) => h.name === n || h.labels.includes(n)));
}
