import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { ConfigError } from '../shared/config/config-error.js';
import type { TokenCreateResponse, TokenInfo } from '../shared/dto/tokens.js';
import { parseFlagDuration } from '../shared/duration.js';
import { unauthorized } from '../shared/http/bearer.js';
import { Problem } from '../shared/http/problem.js';

export { unauthorized };

/** `ctl_` and 43 base64url characters: 32 random bytes. */
const TOKEN_SHAPE = /^ctl_[A-Za-z0-9_-]{43}$/;

/** Whether a header value carries something shaped as one of our API tokens (a secret of ours, whoever sent it). */
export function carriesApiToken(value: string): boolean {
  return /(^|[^A-Za-z0-9_-])ctl_[A-Za-z0-9_-]{43}($|[^A-Za-z0-9_-])/.test(value);
}
const NAME_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

interface StoredToken {
  name: string;
  /** SHA-256 of the secret, hex. */
  sha256: string;
  read_only: boolean;
  created_at: string;
  expires_at?: string;
  created_by: string;
}

/** A token that a request presented and we accepted. */
export interface AcceptedToken {
  name: string;
  readOnly: boolean;
}

/**
 * The supervisor's API tokens, in `$CTL_HOME/tokens.json` (mode 0600). Each secret is 256 random bits, shown
 * once and stored as its SHA-256: a slow password hash (bcrypt, argon2) exists to make guessing a low-entropy
 * password from its hash expensive, and nobody guesses 2^256 secrets however fast the hash is — while a fast
 * hash keeps a token's check to a microsecond on every request. Lookups are by hash, so no secret is ever
 * compared byte by byte.
 */
export class ApiTokens {
  private tokens: StoredToken[] = [];
  private byHash = new Map<string, StoredToken>();

  constructor(private readonly path: string) {}

  /** Reads the file (a missing one: no tokens); throws a ConfigError naming it when it cannot be used. */
  load(): void {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return this.replace([]);
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(`${this.path}: ${(err as Error).message}`);
    }
    const list = (parsed as { tokens?: unknown }).tokens;
    if (!Array.isArray(list) || list.some((t) => !isStoredToken(t))) {
      throw new ConfigError(`${this.path}: expected {"tokens": [{name, sha256, read_only, created_at, …}]}`);
    }
    // A file left readable by others (copied in, restored from a backup) is made ours alone again.
    chmodSync(this.path, 0o600);
    this.replace(list as StoredToken[]);
  }

  get size(): number {
    return this.tokens.length;
  }

  list(now = Date.now()): TokenInfo[] {
    return this.tokens.map((t) => infoOf(t, now)).sort((a, b) => a.name.localeCompare(b.name));
  }

  create(
    request: { name: string; read_only?: boolean; expires_in?: string },
    createdBy: string,
    now = Date.now(),
  ): TokenCreateResponse {
    const { name } = request;
    if (!NAME_SHAPE.test(name)) {
      throw invalid(
        'name',
        `invalid: token name ${JSON.stringify(name)} must be 1–64 of A-Z a-z 0-9 . _ - (not first)`,
      );
    }
    if (this.tokens.some((t) => t.name === name)) {
      throw new Problem('conflict-wrong-state', `conflict: a token named ${name} exists; revoke it first`);
    }
    let expiresAt: string | undefined;
    if (request.expires_in !== undefined) {
      let ms: number;
      try {
        ms = parseFlagDuration(request.expires_in);
      } catch (err) {
        throw invalid('expires_in', `invalid: expires_in: ${(err as Error).message}`);
      }
      if (!(ms > 0)) throw invalid('expires_in', 'invalid: expires_in must be positive');
      expiresAt = new Date(now + ms).toISOString();
    }
    const secret = `ctl_${randomBytes(32).toString('base64url')}`;
    const stored: StoredToken = {
      name,
      sha256: hashOf(secret),
      read_only: request.read_only === true,
      created_at: new Date(now).toISOString(),
      ...(expiresAt ? { expires_at: expiresAt } : {}),
      created_by: createdBy,
    };
    this.save([...this.tokens, stored]);
    return { ...infoOf(stored, now), token: secret };
  }

  revoke(name: string): void {
    if (!this.tokens.some((t) => t.name === name)) {
      throw new Problem('token-not-found', `not_found: no token named ${name}`);
    }
    this.save(this.tokens.filter((t) => t.name !== name));
  }

  /**
   * The token a bearer secret is, or the 401 problem saying why it is not: malformed, unknown (or revoked),
   * or expired.
   */
  check(secret: string, now = Date.now()): AcceptedToken {
    if (!TOKEN_SHAPE.test(secret)) throw unauthorized('unauthorized: malformed token: expected ctl_ and 43 characters');
    const stored = this.byHash.get(hashOf(secret));
    if (!stored) throw unauthorized('unauthorized: unknown or revoked token');
    if (stored.expires_at !== undefined && Date.parse(stored.expires_at) <= now) {
      throw unauthorized(`unauthorized: token ${stored.name} expired at ${stored.expires_at}`, 'expired');
    }
    return { name: stored.name, readOnly: stored.read_only };
  }

  /** Whether a token of this name is still accepted (a browser session made from it lives no longer). */
  stillValid(name: string, now = Date.now()): boolean {
    const stored = this.tokens.find((t) => t.name === name);
    return stored !== undefined && (stored.expires_at === undefined || Date.parse(stored.expires_at) > now);
  }

  private save(tokens: StoredToken[]): void {
    writeFileAtomic(this.path, JSON.stringify({ tokens }, null, 2) + '\n', { mode: 0o600 });
    this.replace(tokens);
  }

  private replace(tokens: StoredToken[]): void {
    this.tokens = tokens;
    this.byHash = new Map(tokens.map((t) => [t.sha256, t]));
  }
}

function hashOf(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

function infoOf(t: StoredToken, now: number): TokenInfo {
  return {
    name: t.name,
    read_only: t.read_only,
    created_at: t.created_at,
    ...(t.expires_at ? { expires_at: t.expires_at } : {}),
    expired: t.expires_at !== undefined && Date.parse(t.expires_at) <= now,
    created_by: t.created_by,
  };
}

function isStoredToken(t: unknown): t is StoredToken {
  const x = t as StoredToken;
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof x.name === 'string' &&
    typeof x.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(x.sha256) &&
    typeof x.read_only === 'boolean' &&
    typeof x.created_at === 'string' &&
    (x.expires_at === undefined || typeof x.expires_at === 'string')
  );
}

function invalid(field: string, detail: string): Problem {
  return new Problem('validation-failed', detail, { errors: [{ location: `body.${field}`, message: detail }] });
}
