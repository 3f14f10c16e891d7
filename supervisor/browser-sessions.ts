import { createHash, randomBytes } from 'node:crypto';
import { Problem } from '../shared/http/problem.js';
import type { Caller } from './caller.js';

/** A one-time code lives this long: long enough to open a link, too short to be worth stealing from a log. */
export const CODE_TTL_MS = 60_000;
/** A browser session lives at most this long (and never past its token's expiry or revocation). */
export const SESSION_TTL_MS = 12 * 3_600_000;
export const SESSION_COOKIE = 'ctl_session';

interface Grant {
  caller: Caller;
  expiresAt: number;
}

/**
 * Browser sessions, for the dashboard: a caller already let in (the same user, an allowed one, or a token
 * holder) mints a one-time code; the browser opens `/v0/auth/exchange?code=…`, which spends the code and sets an
 * HttpOnly, SameSite=Strict cookie carrying a session that stands for that caller — so no token is ever in a URL
 * that stays in a history or a log, and the code in one is worthless once used or a minute old. Sessions live in
 * memory: a supervisor restart signs browsers out. Codes and sessions are kept by their SHA-256.
 */
export class BrowserSessions {
  private readonly codes = new Map<string, Grant>();
  private readonly sessions = new Map<string, Grant>();

  mint(caller: Caller, now = Date.now()): { code: string; expiresAt: number } {
    this.sweep(now);
    const code = randomBytes(32).toString('base64url');
    const expiresAt = now + CODE_TTL_MS;
    this.codes.set(hashOf(code), { caller, expiresAt });
    return { code, expiresAt };
  }

  /** Spends a code: the new session's secret and lifetime, or a 401 when the code is unknown, used or expired. */
  exchange(
    code: string,
    sessionEnd: (caller: Caller, now: number) => number,
    now = Date.now(),
  ): { session: string; maxAgeSec: number } {
    const key = hashOf(code);
    const grant = this.codes.get(key);
    this.codes.delete(key);
    if (!grant || grant.expiresAt <= now) {
      throw new Problem('unauthorized', 'unauthorized: unknown, used or expired code; ask for a new link');
    }
    const expiresAt = Math.min(now + SESSION_TTL_MS, sessionEnd(grant.caller, now));
    const session = randomBytes(32).toString('base64url');
    this.sessions.set(hashOf(session), { caller: grant.caller, expiresAt });
    return { session, maxAgeSec: Math.max(1, Math.floor((expiresAt - now) / 1000)) };
  }

  /** The caller a session cookie stands for, or undefined when it is unknown or over. */
  callerOf(session: string, now = Date.now()): Caller | undefined {
    const key = hashOf(session);
    const grant = this.sessions.get(key);
    if (!grant) return undefined;
    if (grant.expiresAt <= now) {
      this.sessions.delete(key);
      return undefined;
    }
    return grant.caller;
  }

  /** Ends every session standing for a token (when it is revoked). */
  endFor(tokenName: string): void {
    for (const [key, grant] of this.sessions) {
      if (grant.caller.kind === 'token' && grant.caller.name === tokenName) this.sessions.delete(key);
    }
  }

  private sweep(now: number): void {
    for (const [key, grant] of this.codes) if (grant.expiresAt <= now) this.codes.delete(key);
    for (const [key, grant] of this.sessions) if (grant.expiresAt <= now) this.sessions.delete(key);
  }
}

function hashOf(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** The value of one cookie in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
