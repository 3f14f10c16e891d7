import type { IncomingHttpHeaders } from 'node:http';
import { Problem } from '../../shared/http/problem.js';
import { DEFAULT_SIGNATURE_HEADER } from '../orders/order-file.js';
import { bodyHash } from './dedupe.js';
import { decodeSignature, hmacSha256, sameDigest } from './verify-hmac.js';
import type { Delivery, DeliveryReply, WebhookDesk } from './webhook-desk.js';

const SCHEME = 'hmac-sha256';

/**
 * A webhook order's deliveries: `POST /v0/city/{cityName}/hook/{order}` fires a `trigger = "webhook"` order when
 * the body's HMAC-SHA256 under the order's secret (`secret_env`) matches its signature header — compared in
 * constant time, as the reference does. A delivery that passes fires the order with the payload: its body kept in
 * a file (`CTL_WEBHOOK_PAYLOAD_FILE`, `{{webhook_payload_file}}`), and a JSON object's top-level strings, numbers
 * and booleans as the order's vars (its `[order.params]`); a redelivery of one accepted (same `X-GitHub-Delivery`
 * or `X-CTL-Delivery`, or the same body) is a duplicate. One that does not pass is refused and `webhook.rejected`
 * — except an unknown order (404), which is not recorded: anyone can send those.
 */
export class OrderHooks {
  constructor(private readonly desk: WebhookDesk) {}

  async deliver({ name, headers, body }: Delivery): Promise<DeliveryReply> {
    const host = this.desk.host;
    const order = host.order(name);
    if (!order || order.trigger !== 'webhook') {
      throw new Problem('order-not-found', `not_found: no webhook (no [[webhook]], no webhook order) named ${name}`);
    }
    const event = header(headers, 'x-github-event') ?? header(headers, 'x-ctl-event');
    const delivery = header(headers, 'x-github-delivery') ?? header(headers, 'x-ctl-delivery');
    const dedupId = delivery ?? bodyHash(body);
    const seen = {
      webhook: order.scopedName,
      body_size: body.length,
      scheme: SCHEME,
      ...(event ? { event_type: event } : {}),
    };
    const refused = (reason: string, status: number) =>
      this.desk.rejections.record({ ...seen, dedup_id: dedupId, reason, status });
    const reject = async (reason: string, status: number, detail: string) => {
      await refused(reason, status);
      return new Problem('webhook-rejected', detail, { status });
    };
    const secret = order.secretEnv ? host.env[order.secretEnv] : undefined;
    if (!secret) {
      // The operator's fault, not the sender's: closed until the secret is there.
      const why = order.secretEnv ? `its secret variable ${order.secretEnv} is not set` : 'it names no secret_env';
      throw await reject('no_secret', 503, `unavailable: webhook ${order.scopedName} takes no deliveries: ${why}`);
    }
    const signatureHeader = order.signatureHeader ?? DEFAULT_SIGNATURE_HEADER;
    const mismatch = signatureMismatch(secret, header(headers, signatureHeader.toLowerCase()), body, signatureHeader);
    if (mismatch) throw await reject('bad_signature', 401, `unauthorized: webhook ${order.scopedName}: ${mismatch}`);
    if (!order.enabled) {
      throw await reject('disabled', 409, `conflict: order ${order.scopedName} is disabled`);
    }
    let vars: Record<string, string>;
    try {
      vars = payloadVars(headers, body);
    } catch (err) {
      throw await reject('bad_payload', 422, `invalid: webhook ${order.scopedName}: ${(err as Error).message}`);
    }
    return this.desk.fireOnce({
      hook: order.scopedName,
      keys: [...(delivery ? [`id:${delivery}`] : []), bodyHash(body)],
      dedupId,
      order,
      vars,
      body,
      ...(event ? { event } : {}),
      ...(delivery ? { delivery } : {}),
      seen,
      refused,
    });
  }
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  return text ? text : undefined;
}

/**
 * Why a signature does not match the body's HMAC-SHA256 under `secret` (undefined when it does). It may be
 * `sha256=<hex>` (GitHub), bare hex, or base64; compared in constant time (a digest's length is no secret).
 */
export function signatureMismatch(
  secret: string,
  signature: string | undefined,
  body: Buffer,
  headerName: string,
): string | undefined {
  if (signature === undefined) return `missing ${headerName} signature header`;
  const provided = decodeSignature(signature);
  if (!provided || !sameDigest(provided, hmacSha256(secret, body))) return `${headerName} does not match the body`;
  return undefined;
}

/**
 * A delivery's vars: a JSON object's top-level strings, numbers and booleans (what `[order.params]` name). A body
 * that says it is JSON and is not is refused; any other body is passed on as it is (in its file).
 */
export function payloadVars(headers: IncomingHttpHeaders, body: Buffer): Record<string, string> {
  const type = (header(headers, 'content-type') ?? '').toLowerCase();
  if (!/^application\/([a-z0-9.+-]*\+)?json\b/.test(type) || body.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('the body is not JSON, as its Content-Type says');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const vars: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) && ['string', 'number', 'boolean'].includes(typeof v))
      vars[key] = String(v);
  }
  return vars;
}
