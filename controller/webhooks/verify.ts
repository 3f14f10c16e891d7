import type { IncomingHttpHeaders } from 'node:http';
import type { JwtPolicy, WebhookDef } from './webhook-config.js';
import { verifyDiscord } from './verify-discord.js';
import { verifyGenericHmac, verifyGithub, verifySlack } from './verify-hmac.js';
import { JwksCache, verifyJwt, type JwksFetch } from './verify-jwt.js';
import type { Verified } from './verify-types.js';

/** A shorter secret (or one byte repeated) is refused: its HMAC could be found by trying. As the reference. */
export const MIN_SECRET_BYTES = 16;

/** The operator's fault — a secret unset or too weak, keys that cannot be had: a 503, closed until fixed. */
export class VerifierUnavailable extends Error {}

/** Checks deliveries against their webhook's scheme; keeps each jwt-jwks webhook's keys between deliveries. */
export class Verifiers {
  private readonly jwks = new Map<string, { url: string; cache: JwksCache }>();

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly fetchJwks?: JwksFetch,
  ) {}

  async verify(
    def: WebhookDef,
    jwtPolicy: JwtPolicy | undefined,
    headers: IncomingHttpHeaders,
    body: Buffer,
    now = Date.now(),
  ): Promise<Verified> {
    const verify = def.verify;
    if (verify.scheme === 'jwt-jwks') {
      if (!jwtPolicy) throw new VerifierUnavailable(`no [[webhooks.jwt_policy]] names webhook ${def.name}`);
      const req = { verify, headers, body, now };
      try {
        return await verifyJwt(req, jwtPolicy, this.jwksOf(def.name, jwtPolicy.jwksUrl));
      } catch (err) {
        throw new VerifierUnavailable((err as Error).message);
      }
    }
    const req = { verify, headers, body, now, secret: this.secret(def) };
    switch (verify.scheme) {
      case 'github-hmac-sha256':
        return verifyGithub(req);
      case 'hmac-sha256':
        return verifyGenericHmac(req);
      case 'slack-v0':
        return verifySlack(req);
      case 'discord-ed25519':
        try {
          return verifyDiscord(req);
        } catch (err) {
          throw new VerifierUnavailable((err as Error).message);
        }
    }
  }

  private secret(def: WebhookDef): string {
    const name = def.verify.secretEnv!;
    const value = this.env[name];
    if (value === undefined || value === '') throw new VerifierUnavailable(`its secret variable ${name} is not set`);
    if (def.verify.scheme !== 'discord-ed25519') {
      if (Buffer.byteLength(value) < MIN_SECRET_BYTES || /^(.)\1*$/su.test(value)) {
        throw new VerifierUnavailable(`its secret in ${name} is weaker than ${MIN_SECRET_BYTES} varied bytes`);
      }
    }
    return value;
  }

  private jwksOf(name: string, url: string): JwksCache {
    const kept = this.jwks.get(name);
    if (kept?.url === url) return kept.cache;
    const cache = new JwksCache(url, this.fetchJwks);
    this.jwks.set(name, { url, cache });
    return cache;
  }
}
