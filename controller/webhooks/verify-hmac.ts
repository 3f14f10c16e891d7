import { createHmac, timingSafeEqual } from 'node:crypto';
import { failed, headerOf, withinWindow, type Verified, type VerifyRequest } from './verify-types.js';

const SLACK_WINDOW_MS = 5 * 60_000;

/** The HMAC-SHA256 of `message` under `secret`. */
export function hmacSha256(secret: Buffer | string, message: Buffer): Buffer {
  return createHmac('sha256', secret).update(message).digest();
}

/** `provided` equals `expected`, in constant time (a digest's length is no secret). */
export function sameDigest(provided: Buffer, expected: Buffer): boolean {
  return provided.length === expected.length && timingSafeEqual(provided, expected);
}

/**
 * github-hmac-sha256: `X-Hub-Signature-256: sha256=<hex>` of the raw body; the event in `X-GitHub-Event`, the
 * delivery id in `X-GitHub-Delivery` (each header may be renamed).
 */
export function verifyGithub(req: VerifyRequest): Verified {
  const name = req.verify.signatureHeader ?? 'X-Hub-Signature-256';
  const signature = headerOf(req.headers, name);
  if (signature === undefined) return failed(`missing ${name} signature header`);
  const hex = /^sha256=([0-9a-fA-F]{64})$/.exec(signature)?.[1];
  if (!hex) return failed(`${name} is not in sha256=<hex> form`);
  if (!sameDigest(Buffer.from(hex, 'hex'), hmacSha256(req.secret!, req.body))) return failed(`${name} does not match`);
  return {
    ok: true,
    eventType: headerOf(req.headers, req.verify.eventHeader ?? 'X-GitHub-Event'),
    deliveryId: headerOf(req.headers, req.verify.dedupHeader ?? 'X-GitHub-Delivery'),
  };
}

/**
 * hmac-sha256: the raw body's HMAC-SHA256 in `signature_header`, as hex or base64 (standard or URL-safe), with or
 * without `sha256=` — Plane and most senders that are not GitHub; event and delivery id from the headers named.
 */
export function verifyGenericHmac(req: VerifyRequest): Verified {
  const name = req.verify.signatureHeader!;
  const signature = headerOf(req.headers, name);
  if (signature === undefined) return failed(`missing ${name} signature header`);
  const provided = decodeSignature(signature);
  if (!provided) return failed(`${name} is not valid hex or base64`);
  if (!sameDigest(provided, hmacSha256(req.secret!, req.body))) return failed(`${name} does not match`);
  return {
    ok: true,
    eventType: req.verify.eventHeader ? headerOf(req.headers, req.verify.eventHeader) : undefined,
    deliveryId: req.verify.dedupHeader ? headerOf(req.headers, req.verify.dedupHeader) : undefined,
  };
}

/**
 * slack-v0: `X-Slack-Signature: v0=<hex>` of `v0:{timestamp}:{body}`, the timestamp
 * (`X-Slack-Request-Timestamp`) within the replay window. The event is the payload's `event.type` (else `type`).
 * Slack's timestamp is no delivery id (two deliveries share a second): dedupe goes by the body.
 */
export function verifySlack(req: VerifyRequest): Verified {
  const tsName = req.verify.timestampHeader ?? 'X-Slack-Request-Timestamp';
  const sigName = req.verify.signatureHeader ?? 'X-Slack-Signature';
  const ts = headerOf(req.headers, tsName);
  if (ts === undefined) return failed(`missing ${tsName} header`);
  if (!/^\d+$/.test(ts)) return failed(`${tsName} is not a unix timestamp`);
  const window = req.verify.replayWindowMs ?? SLACK_WINDOW_MS;
  if (!withinWindow(req.now, Number(ts), window)) return failed(`${tsName} ${ts} is outside the replay window`);
  const signature = headerOf(req.headers, sigName);
  if (signature === undefined) return failed(`missing ${sigName} signature header`);
  const hex = /^v0=([0-9a-fA-F]{64})$/.exec(signature)?.[1];
  if (!hex) return failed(`${sigName} is not in v0=<hex> form`);
  const base = Buffer.concat([Buffer.from(`v0:${ts}:`), req.body]);
  if (!sameDigest(Buffer.from(hex, 'hex'), hmacSha256(req.secret!, base))) return failed(`${sigName} does not match`);
  return { ok: true, eventType: slackEventType(req.body) };
}

function slackEventType(body: Buffer): string | undefined {
  try {
    const p = JSON.parse(body.toString('utf8')) as { type?: unknown; event?: { type?: unknown } };
    const type = typeof p.event?.type === 'string' ? p.event.type : p.type;
    return typeof type === 'string' && type ? type : undefined;
  } catch {
    return undefined;
  }
}

/** A signature as hex or base64 (standard or URL-safe, padded or not), `sha256=` dropped; undefined if neither. */
export function decodeSignature(text: string): Buffer | undefined {
  const s = text.trim().replace(/^sha256=/i, '');
  if (/^[0-9a-fA-F]+$/.test(s) && s.length % 2 === 0) return Buffer.from(s, 'hex');
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(s)) return Buffer.from(s, 'base64');
  if (/^[A-Za-z0-9_-]+={0,2}$/.test(s)) return Buffer.from(s, 'base64url');
  return undefined;
}
