import type { IncomingHttpHeaders } from 'node:http';
import type { WebhookVerify } from './webhook-config.js';

/** What a scheme is given: the raw body (the signature covers these bytes), the headers, the resolved key. */
export interface VerifyRequest {
  verify: WebhookVerify;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The HMAC secret, or Discord's public key; none for jwt-jwks. */
  secret?: string;
  now: number;
}

/** A delivery that passed its scheme: the event type, and its delivery id if it carries one. */
export interface VerifiedOk {
  ok: true;
  eventType?: string;
  /** Unique per delivery (GitHub's `X-GitHub-Delivery`, a JWT's `jti`, a configured `dedup_header`). */
  deliveryId?: string;
  /** The verified principal (a JWT's subject, else its issuer). */
  identity?: string;
}

export type Verified = VerifiedOk | { ok: false; reason: string };

export function failed(reason: string): Verified {
  return { ok: false, reason };
}

/** A header's trimmed value (the first, when sent twice); undefined when absent or blank. */
export function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  return text ? text : undefined;
}

/** A signed unix-seconds timestamp is no further than `windowMs` from now, either way. */
export function withinWindow(nowMs: number, seconds: number, windowMs: number): boolean {
  return Number.isSafeInteger(seconds) && Math.abs(nowMs - seconds * 1000) <= windowMs;
}
