import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { failed, headerOf, withinWindow, type Verified, type VerifyRequest } from './verify-types.js';

const DISCORD_WINDOW_MS = 5 * 60_000;
const INTERACTIONS: Record<string, string> = {
  '1': 'ping',
  '2': 'application_command',
  '3': 'message_component',
  '4': 'application_command_autocomplete',
  '5': 'modal_submit',
};

/**
 * discord-ed25519: `X-Signature-Ed25519` (hex) is the application's Ed25519 signature of `{timestamp}{body}`,
 * `X-Signature-Timestamp` within the replay window; the key (`secret_env`) is its public key in hex, as Discord's
 * portal shows it. The event is the interaction's type by name (`application_command`, …; a PING is `ping`).
 * A key that is not one is the operator's fault: thrown, not a failed delivery.
 */
export function verifyDiscord(req: VerifyRequest): Verified {
  const key = discordKey(req.secret ?? '');
  const sigName = req.verify.signatureHeader ?? 'X-Signature-Ed25519';
  const tsName = req.verify.timestampHeader ?? 'X-Signature-Timestamp';
  const signature = headerOf(req.headers, sigName);
  if (signature === undefined) return failed(`missing ${sigName} signature header`);
  if (!/^[0-9a-fA-F]{128}$/.test(signature)) return failed(`${sigName} is not a 64-byte hex signature`);
  const ts = headerOf(req.headers, tsName);
  if (ts === undefined) return failed(`missing ${tsName} header`);
  if (!/^\d+$/.test(ts)) return failed(`${tsName} is not a unix timestamp`);
  if (!withinWindow(req.now, Number(ts), req.verify.replayWindowMs ?? DISCORD_WINDOW_MS)) {
    return failed(`${tsName} ${ts} is outside the replay window`);
  }
  const message = Buffer.concat([Buffer.from(ts), req.body]);
  if (!verify(null, message, key, Buffer.from(signature, 'hex'))) return failed(`${sigName} does not match`);
  return {
    ok: true,
    eventType: discordEventType(req.body),
    deliveryId: req.verify.dedupHeader ? headerOf(req.headers, req.verify.dedupHeader) : undefined,
  };
}

/** Whether a verified Discord body is a PING (interaction type 1), answered with a PONG and nothing else. */
export function isDiscordPing(body: Buffer): boolean {
  return discordEventType(body) === 'ping';
}

function discordEventType(body: Buffer): string | undefined {
  try {
    const type = (JSON.parse(body.toString('utf8')) as { type?: unknown }).type;
    if (typeof type !== 'number' && typeof type !== 'string') return undefined;
    return INTERACTIONS[String(type)] ?? `interaction_${String(type)}`;
  } catch {
    return undefined;
  }
}

function discordKey(hex: string): KeyObject {
  const text = hex.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new Error('the discord-ed25519 key is not a 32-byte public key in hex');
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(text, 'hex').toString('base64url') },
    format: 'jwk',
  });
}
