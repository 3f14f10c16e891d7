import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { ConfigError } from '../config/config-error.js';
import { LocalAccounts } from './local-accounts.js';
import { peerUid } from './peer-uid.js';
import { Problem } from './problem.js';

/** `[supervisor] allow_users` and `allow_groups`: the local accounts besides our own that may use the API. */
export interface PeerAccessConfig {
  allowUsers: string[];
  allowGroups: string[];
}

/** Who is on the other end of a connection, and whether they may use the API without a token. */
export type PeerVerdict =
  | { allowed: true; user: string; uid: number | undefined }
  | { allowed: false; problem: Problem; uid: number | undefined };

/**
 * The same-user rule, PostgreSQL's `peer` authentication for a TCP API: on a loopback connection, the operating
 * system says which account owns the client's socket; our own account passes, and so do those `allow_users`
 * and `allow_groups` name (primary or supplementary membership). Anyone else, a peer that cannot be identified,
 * and any connection not on loopback is refused (with a token they may still come in; the caller decides).
 *
 * The verdict is found once per connection, starting when it is accepted (so the lookup overlaps the reading of
 * the first request), and kept in a WeakMap on the socket: keep-alive requests pay a map lookup.
 */
export class PeerAccess {
  readonly ownUid: number;
  readonly ownUser: string;
  private readonly allowUids: Set<number>;
  private readonly allowGids: Set<number>;
  private readonly verdicts = new WeakMap<Socket, PeerVerdict | Promise<PeerVerdict>>();

  /** Throws a ConfigError naming an `allow_users` or `allow_groups` entry no account or group has. */
  constructor(
    config: PeerAccessConfig,
    private readonly accounts = new LocalAccounts(),
    ownUid = process.geteuid?.() ?? 0,
  ) {
    this.ownUid = ownUid;
    this.ownUser = accounts.byUid(ownUid).name;
    this.allowUids = new Set(
      config.allowUsers.map((name) => {
        const uid = accounts.uidOf(name);
        if (uid === undefined) throw new ConfigError(`supervisor.allow_users: no such user: ${name}`);
        return uid;
      }),
    );
    this.allowGids = new Set(
      config.allowGroups.map((name) => {
        const gid = accounts.gidOf(name);
        if (gid === undefined) throw new ConfigError(`supervisor.allow_groups: no such group: ${name}`);
        return gid;
      }),
    );
  }

  /** Starts each accepted connection's lookup at once. */
  watch(server: Server): void {
    server.on('connection', (socket: Socket) => void this.verdictOf(socket));
  }

  /** The verdict of a connection: at once when known (every request after a connection's first), else a promise. */
  verdictOf(socket: Socket): PeerVerdict | Promise<PeerVerdict> {
    const known = this.verdicts.get(socket);
    if (known !== undefined) return known;
    const pending = this.lookUp(socket).then((verdict) => {
      this.verdicts.set(socket, verdict);
      return verdict;
    });
    this.verdicts.set(socket, pending);
    return pending;
  }

  /** The verdict for an identified uid (exported for the tests of the rule itself). */
  verdictForUid(uid: number): PeerVerdict {
    if (uid === this.ownUid) return { allowed: true, user: this.ownUser, uid };
    const account = this.accounts.byUid(uid);
    if (this.allowUids.has(uid) || account.gids.some((gid) => this.allowGids.has(gid))) {
      return { allowed: true, user: account.name, uid };
    }
    return refused(
      uid,
      `forbidden: local user ${account.name} (uid ${uid}) may not use this API: it is not the supervisor's ` +
        `user ${this.ownUser} nor named by allow_users or allow_groups; send a token (Authorization: Bearer …)`,
    );
  }

  private async lookUp(socket: Socket): Promise<PeerVerdict> {
    const { localAddress, localPort, remoteAddress, remotePort } = socket;
    if (remoteAddress === undefined || localAddress === undefined || !localPort || !remotePort) {
      return refused(undefined, 'forbidden: the connection has no peer address to identify');
    }
    if (!isLoopbackAddress(remoteAddress)) {
      return refused(
        undefined,
        `forbidden: a connection from ${remoteAddress} is not on loopback, so its user cannot be identified; ` +
          'send a token (Authorization: Bearer …)',
      );
    }
    try {
      return this.verdictForUid(await peerUid({ localAddress, localPort, remoteAddress, remotePort }));
    } catch (err) {
      return refused(undefined, `forbidden: ${(err as Error).message}`);
    }
  }
}

function refused(uid: number | undefined, detail: string): PeerVerdict {
  return { allowed: false, uid, problem: new Problem('forbidden', detail) };
}

/** 127.0.0.0/8, ::1, or an IPv4 loopback address mapped into IPv6, as a socket reports its peer. */
export function isLoopbackAddress(address: string): boolean {
  const v4 = address.toLowerCase().startsWith('::ffff:') ? address.slice(7) : address;
  return /^127\.\d+\.\d+\.\d+$/.test(v4) || address === '::1';
}
