import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** A local account as the access rule needs it. */
export interface Account {
  uid: number;
  name: string;
  /** Its primary group and every group that lists it as a member. */
  gids: number[];
}

interface Tables {
  byUid: Map<number, { name: string; gid: number }>;
  byName: Map<string, number>;
  groupsByName: Map<string, number>;
  /** Group ids listing each user name as a supplementary member. */
  memberOf: Map<string, number[]>;
}

/**
 * Local accounts and groups, from /etc/passwd and /etc/group (what every Linux has, read in microseconds), with
 * `id` as the fallback for an account only a name service knows (LDAP, sssd). Read again at most every few
 * seconds, so an account added while the supervisor runs is found without a restart.
 */
export class LocalAccounts {
  private tables: Tables | undefined;
  private readAt = 0;
  /** Accounts found through `id` (a process spawn), kept until the files are read again. */
  private readonly viaNameService = new Map<number, Account>();

  constructor(
    private readonly files = { passwd: '/etc/passwd', group: '/etc/group' },
    private readonly maxAgeMs = 5_000,
  ) {}

  /** The account of a uid; a uid no database names is still an account, named by its number. */
  byUid(uid: number): Account {
    const t = this.current();
    const entry = t.byUid.get(uid);
    if (entry) return { uid, name: entry.name, gids: [entry.gid, ...(t.memberOf.get(entry.name) ?? [])] };
    let found = this.viaNameService.get(uid);
    if (!found) {
      found = idOf(String(uid)) ?? { uid, name: String(uid), gids: [] };
      this.viaNameService.set(uid, found);
    }
    return found;
  }

  /** The uid of a user name, or undefined when no such user exists. */
  uidOf(name: string): number | undefined {
    return this.current().byName.get(name) ?? idOf(name)?.uid;
  }

  /** The gid of a group name, or undefined when no such group exists. */
  gidOf(name: string): number | undefined {
    const known = this.current().groupsByName.get(name);
    if (known !== undefined) return known;
    try {
      const line = execFileSync('getent', ['group', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      const gid = Number(line.split(':')[2]);
      return Number.isInteger(gid) ? gid : undefined;
    } catch {
      return undefined; // getent exits 2 for an unknown group
    }
  }

  private current(): Tables {
    const now = Date.now();
    if (!this.tables || now - this.readAt > this.maxAgeMs) {
      this.tables = readTables(this.files);
      this.readAt = now;
      this.viaNameService.clear();
    }
    return this.tables;
  }
}

function readTables(files: { passwd: string; group: string }): Tables {
  const t: Tables = { byUid: new Map(), byName: new Map(), groupsByName: new Map(), memberOf: new Map() };
  for (const line of readLines(files.passwd)) {
    const [name, , uid, gid] = line.split(':');
    if (!name || !/^\d+$/.test(uid ?? '') || !/^\d+$/.test(gid ?? '')) continue;
    if (!t.byUid.has(Number(uid))) t.byUid.set(Number(uid), { name, gid: Number(gid) });
    if (!t.byName.has(name)) t.byName.set(name, Number(uid));
  }
  for (const line of readLines(files.group)) {
    const [name, , gid, members] = line.split(':');
    if (!name || !/^\d+$/.test(gid ?? '')) continue;
    if (!t.groupsByName.has(name)) t.groupsByName.set(name, Number(gid));
    for (const member of (members ?? '').split(',').filter(Boolean)) {
      const list = t.memberOf.get(member) ?? [];
      list.push(Number(gid));
      t.memberOf.set(member, list);
    }
  }
  return t;
}

function readLines(path: string): string[] {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** An account through the name service (`id`), for one the local files do not list. */
function idOf(user: string): Account | undefined {
  try {
    const run = (flag: string) =>
      execFileSync('id', [flag, user], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const uid = Number(run('-u'));
    if (!Number.isInteger(uid)) return undefined;
    return { uid, name: run('-un'), gids: run('-G').split(/\s+/).map(Number) };
  } catch {
    return undefined; // `id` exits 1 for an unknown user
  }
}
