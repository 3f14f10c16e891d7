import { createHash, randomBytes } from 'node:crypto';
import { unauthorized } from '../../shared/http/bearer.js';
import type { SessionGrant } from './session-scope.js';

/** `ctls_` and 43 base64url characters (32 random bytes): told apart at a glance from an API token's `ctl_`. */
const CREDENTIAL_SHAPE = /^ctls_[A-Za-z0-9_-]{43}$/;

/**
 * The credentials of the sessions whose programs run on remote hosts: what their `ctl` sends (`CTL_TOKEN`)
 * through their host's reverse tunnel to its gateway, which knows by it which session calls, and so what it may
 * do (session-scope.ts). One per session: minted when its program starts there, replaced when it starts again
 * (a reset, a restart after a crash — the old program is gone), revoked when it ends (close, exit, lost).
 *
 * Kept in memory only, as SHA-256 hashes (the API tokens' reasoning: 256 random bits need no slow hash): a
 * controller that ends takes them with it. Nothing outlives it on a host to use one — the watchdog there ends
 * every program of a connection that dies (on-host/watchdog.ts) — and the next controller, starting its
 * sessions' programs again, mints each a new one.
 */
export class SessionCredentials {
  private readonly byHash = new Map<string, SessionGrant>();
  private readonly hashOfSession = new Map<string, string>();
  private readonly revokeListeners = new Set<(sessionId: string) => void>();

  /** A new secret for `grant`'s session, the only one it has from now on; shown here once, never stored. */
  mint(grant: SessionGrant): string {
    this.revoke(grant.sessionId);
    const secret = `ctls_${randomBytes(32).toString('base64url')}`;
    const hash = hashOf(secret);
    this.byHash.set(hash, { ...grant });
    this.hashOfSession.set(grant.sessionId, hash);
    return secret;
  }

  /** The session a secret stands for, or the 401 saying why it stands for none (malformed, unknown or revoked). */
  check(secret: string): SessionGrant {
    if (!CREDENTIAL_SHAPE.test(secret)) {
      throw unauthorized('unauthorized: malformed session credential: expected ctls_ and 43 characters');
    }
    const grant = this.byHash.get(hashOf(secret));
    if (!grant) throw unauthorized('unauthorized: unknown or revoked session credential (its session ended)');
    return grant;
  }

  /** Ends a session's credential (its program ended); whether it had one. */
  revoke(sessionId: string): boolean {
    const hash = this.hashOfSession.get(sessionId);
    if (hash === undefined) return false;
    this.hashOfSession.delete(sessionId);
    this.byHash.delete(hash);
    for (const listener of this.revokeListeners) listener(sessionId);
    return true;
  }

  /**
   * Calls `listener` with each session whose credential ends (revoked, or replaced by a new one): a gateway ends
   * what that session still has open (a stream), since its credential was checked only when it opened. Answers
   * the function that stops the calls.
   */
  onRevoke(listener: (sessionId: string) => void): () => void {
    this.revokeListeners.add(listener);
    return () => this.revokeListeners.delete(listener);
  }

  /** Ends the credentials of every session on `host` (it was lost, or is no longer configured): how many. */
  revokeHost(host: string): number {
    let ended = 0;
    for (const [sessionId, hash] of [...this.hashOfSession]) {
      if (this.byHash.get(hash)?.host === host && this.revoke(sessionId)) ended++;
    }
    return ended;
  }

  /** Whether a session has a credential now. */
  has(sessionId: string): boolean {
    return this.hashOfSession.has(sessionId);
  }
}

function hashOf(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
