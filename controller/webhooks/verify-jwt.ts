import { constants, createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { JwtPolicy } from './webhook-config.js';
import { failed, headerOf, type Verified, type VerifyRequest } from './verify-types.js';

const JWKS_TTL_MS = 5 * 60_000;
const JWKS_MIN_REFRESH_MS = 30_000;
const JWKS_TIMEOUT_MS = 10_000;
const JWKS_MAX_BYTES = 1 << 20;

/** Asymmetric algorithms only: no `none`, no HS256 signed with the public key as its secret. */
const ALGS: Record<string, { hash: string | null; key: string; pss?: true; ec?: string }> = {
  RS256: { hash: 'sha256', key: 'rsa' },
  RS384: { hash: 'sha384', key: 'rsa' },
  RS512: { hash: 'sha512', key: 'rsa' },
  PS256: { hash: 'sha256', key: 'rsa', pss: true },
  PS384: { hash: 'sha384', key: 'rsa', pss: true },
  PS512: { hash: 'sha512', key: 'rsa', pss: true },
  ES256: { hash: 'sha256', key: 'ec', ec: 'prime256v1' },
  ES384: { hash: 'sha384', key: 'ec', ec: 'secp384r1' },
  ES512: { hash: 'sha512', key: 'ec', ec: 'secp521r1' },
  EdDSA: { hash: null, key: 'ed25519' },
};

/** Fetches a JWKS document's text; an https GET, bounded in time and size, unless a test gives its own. */
export type JwksFetch = (url: string) => Promise<string>;

/** Thrown when the keys cannot be had: the operator's or the issuer's fault (a 503), not the sender's. */
export class JwksUnavailable extends Error {}

async function fetchJwks(url: string): Promise<string> {
  const res = await fetch(url, {
    signal: AbortSignal.timeout(JWKS_TIMEOUT_MS),
    headers: { Accept: 'application/json' },
  });
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  const text = await res.text();
  if (text.length > JWKS_MAX_BYTES) throw new Error('the document is over 1 MiB');
  return text;
}

/** A JWKS endpoint's signing keys, by `kid`, kept five minutes; an unknown `kid` refetches (at most twice a minute). */
export class JwksCache {
  private keys = new Map<string, KeyObject>();
  private anonymous: KeyObject[] = [];
  private fetchedAt = -Infinity;

  constructor(
    private readonly url: string,
    private readonly get: JwksFetch = fetchJwks,
  ) {}

  async keyFor(kid: string | undefined, now: number): Promise<KeyObject | undefined> {
    const stale = now - this.fetchedAt >= JWKS_TTL_MS;
    if (stale) await this.refresh(now);
    const found = this.lookup(kid);
    if (found || stale || now - this.fetchedAt < JWKS_MIN_REFRESH_MS) return found;
    await this.refresh(now); // a key rotated in since
    return this.lookup(kid);
  }

  private lookup(kid: string | undefined): KeyObject | undefined {
    if (kid !== undefined) return this.keys.get(kid);
    const all = [...this.keys.values(), ...this.anonymous];
    return all.length === 1 ? all[0] : undefined;
  }

  private async refresh(now: number): Promise<void> {
    let doc: { keys?: unknown };
    try {
      doc = JSON.parse(await this.get(this.url)) as { keys?: unknown };
    } catch (err) {
      throw new JwksUnavailable(`the JWKS at ${this.url} could not be read: ${(err as Error).message}`);
    }
    const keys = new Map<string, KeyObject>();
    const anonymous: KeyObject[] = [];
    for (const jwk of Array.isArray(doc.keys) ? (doc.keys as (JsonWebKey & { kid?: unknown; use?: unknown })[]) : []) {
      if (jwk.use !== undefined && jwk.use !== 'sig') continue;
      let key: KeyObject;
      try {
        // A private JWK published by mistake yields its public half: the private members are dropped.
        const pub: JsonWebKey = { ...jwk };
        for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) delete pub[member];
        key = createPublicKey({ key: pub, format: 'jwk' });
      } catch {
        continue;
      }
      if (typeof jwk.kid === 'string' && jwk.kid) keys.set(jwk.kid, key);
      else anonymous.push(key);
    }
    if (keys.size + anonymous.length === 0) throw new JwksUnavailable(`the JWKS at ${this.url} has no signing key`);
    this.keys = keys;
    this.anonymous = anonymous;
    this.fetchedAt = now;
  }
}

/**
 * jwt-jwks: a JWT in `Authorization: Bearer …` (or `signature_header`), signed by a key of the policy's JWKS with
 * an asymmetric algorithm, its `iss` the policy's, its `aud` naming the policy's audience, unexpired (`exp`
 * required; `nbf` honoured; a minute's leeway for clocks). Its `jti` is the delivery id — signed, so safe to key
 * dedupe on; its `sub` (else `iss`) the identity.
 */
export async function verifyJwt(req: VerifyRequest, policy: JwtPolicy, jwks: JwksCache): Promise<Verified> {
  const name = req.verify.signatureHeader ?? 'Authorization';
  const raw = headerOf(req.headers, name);
  if (raw === undefined) return failed(`missing ${name} token header`);
  const token = raw.replace(/^Bearer\s+/i, '');
  const parts = token.split('.');
  if (parts.length !== 3) return failed('the token is not a JWT');
  let header: { alg?: unknown; kid?: unknown };
  let claims: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as typeof header;
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return failed('the token’s header or claims are not JSON');
  }
  const alg = typeof header.alg === 'string' ? ALGS[header.alg] : undefined;
  if (!alg) return failed(`the token’s algorithm ${String(header.alg)} is not accepted`);
  const key = await jwks.keyFor(typeof header.kid === 'string' ? header.kid : undefined, req.now);
  if (!key) return failed(`no key of the JWKS for the token’s kid ${String(header.kid)}`);
  if (key.asymmetricKeyType !== alg.key)
    return failed(`the key for kid ${String(header.kid)} is not for ${String(header.alg)}`);
  if (alg.ec && key.asymmetricKeyDetails?.namedCurve !== alg.ec)
    return failed('the key’s curve is not the algorithm’s');
  const signature = Buffer.from(parts[2]!, 'base64url');
  const data = Buffer.from(`${parts[0]}.${parts[1]}`);
  const ok = verify(
    alg.hash,
    data,
    alg.pss
      ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
      : alg.ec
        ? { key, dsaEncoding: 'ieee-p1363' }
        : key,
    signature,
  );
  if (!ok) return failed('the token’s signature does not match');
  const nowSeconds = req.now / 1000;
  const leeway = 60;
  if (claims.iss !== policy.issuer) return failed('the token’s issuer is not the policy’s');
  const aud = claims.aud;
  if (!(aud === policy.audience || (Array.isArray(aud) && aud.includes(policy.audience)))) {
    return failed('the token is not for the policy’s audience');
  }
  if (typeof claims.exp !== 'number') return failed('the token has no exp');
  if (claims.exp + leeway < nowSeconds) return failed('the token has expired');
  if (typeof claims.nbf === 'number' && claims.nbf - leeway > nowSeconds) return failed('the token is not valid yet');
  const jti = typeof claims.jti === 'string' && claims.jti.trim() ? claims.jti.trim() : undefined;
  const sub = typeof claims.sub === 'string' && claims.sub.trim() ? claims.sub.trim() : policy.issuer;
  return { ok: true, identity: sub, ...(jti ? { deliveryId: jti } : {}) };
}
