import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { WebhookDeliveryResponse, WebhookRejectedPayload } from '../../shared/dto/orders.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { WebhookPayloadRef } from './order-context.js';
import { DEFAULT_SIGNATURE_HEADER, type OrderDef } from './order-file.js';

const SCHEME = 'hmac-sha256';
/** The newest deliveries' bodies kept for the orders they fired (older ones are removed as new ones come). */
const KEPT_PAYLOADS = 200;
/** Rejections recorded per webhook per minute: a sender anyone can reach must not be able to flood the log. */
const REJECTIONS_PER_MINUTE = 20;

/** What the receiver needs of the city: its orders, a way to fire one, its log, and where bodies are kept. */
export interface WebhookHost {
  order(scopedName: string): OrderDef | undefined;
  fire(order: OrderDef, vars: Record<string, string>, payload: WebhookPayloadRef): Promise<Bead>;
  log: EventLog;
  payloadDir: string;
  /** The environment a secret is read from (the controller's own). */
  env: NodeJS.ProcessEnv;
  logger?: Logger;
}

/**
 * Inbound webhooks: `POST /v0/city/{cityName}/hook/{order}` fires a `trigger = "webhook"` order when the body's
 * HMAC-SHA256 under the order's secret (`secret_env`) matches its signature header — compared in constant time,
 * as the reference does. A delivery that passes is `webhook.received` and fires the order with the payload: its
 * body kept in a file (`CTL_WEBHOOK_PAYLOAD_FILE`, `{{webhook_payload_file}}`), and a JSON object's top-level
 * strings, numbers and booleans as the order's vars (its `[order.params]`). One that does not is refused and
 * `webhook.rejected` — except an unknown order (404), which is not recorded: anyone can send those.
 */
export class WebhookReceiver {
  private readonly rejections = new Map<string, { minute: number; count: number }>();

  constructor(private readonly host: WebhookHost) {}

  async deliver(name: string, headers: IncomingHttpHeaders, body: Buffer): Promise<WebhookDeliveryResponse> {
    const order = this.host.order(name);
    if (!order || order.trigger !== 'webhook') {
      throw new Problem('order-not-found', `not_found: no webhook order named ${name}`);
    }
    const event = header(headers, 'x-github-event') ?? header(headers, 'x-ctl-event');
    const delivery = header(headers, 'x-github-delivery') ?? header(headers, 'x-ctl-delivery');
    const seen = {
      webhook: order.scopedName,
      body_size: body.length,
      scheme: SCHEME,
      ...(event ? { event_type: event } : {}),
      ...(delivery ? { dedup_id: delivery } : {}),
    };
    const reject = async (reason: string, status: number, detail: string) => {
      await this.recordRejection({ ...seen, reason, status });
      return new Problem('webhook-rejected', detail, { status });
    };
    const secret = order.secretEnv ? this.host.env[order.secretEnv] : undefined;
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
    const file = this.keep(body);
    let tracking: Bead;
    try {
      tracking = await this.host.fire(order, vars, {
        file,
        ...(event ? { event } : {}),
        ...(delivery ? { delivery } : {}),
      });
    } catch (err) {
      rmSync(file, { force: true });
      if (err instanceof Problem) {
        const reason = err.status === 409 ? 'open_work' : 'missing_params';
        await this.recordRejection({ ...seen, reason, status: err.status });
      }
      throw err;
    }
    await this.host.log.append({
      type: 'webhook.received',
      actor: 'webhook',
      subject: order.scopedName,
      message: `webhook ${order.scopedName} fired it${event ? ` (${event})` : ''}`,
      payload: {
        ...seen,
        order: order.name,
        scoped_name: order.scopedName,
        ...(order.rig ? { rig: order.rig } : {}),
        tracking_id: tracking.id,
      },
    });
    return { status: 'dispatched', scoped_name: order.scopedName, tracking_id: tracking.id };
  }

  /** Keeps a delivery's body for the order it fires; the oldest beyond KEPT_PAYLOADS go. */
  private keep(body: Buffer): string {
    mkdirSync(this.host.payloadDir, { recursive: true, mode: 0o700 });
    const name = `${Date.now().toString().padStart(15, '0')}-${process.hrtime.bigint()}.body`;
    const file = join(this.host.payloadDir, name);
    writeFileSync(file, body, { mode: 0o600 });
    const kept = readdirSync(this.host.payloadDir)
      .filter((f) => f.endsWith('.body'))
      .sort();
    for (const old of kept.slice(0, Math.max(0, kept.length - KEPT_PAYLOADS))) {
      rmSync(join(this.host.payloadDir, old), { force: true });
    }
    return file;
  }

  private async recordRejection(payload: WebhookRejectedPayload): Promise<void> {
    const minute = Math.floor(Date.now() / 60_000);
    const seen = this.rejections.get(payload.webhook);
    const count = seen?.minute === minute ? seen.count + 1 : 1;
    this.rejections.set(payload.webhook, { minute, count });
    if (count > REJECTIONS_PER_MINUTE) {
      if (count === REJECTIONS_PER_MINUTE + 1)
        this.host.logger?.warn({ webhook: payload.webhook }, 'webhook rejections past the per-minute record limit');
      return;
    }
    await this.host.log.append({
      type: 'webhook.rejected',
      actor: 'webhook',
      subject: payload.webhook,
      message: `webhook ${payload.webhook} refused a delivery: ${payload.reason}`,
      payload,
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
  const text = signature.replace(/^sha256=/i, '');
  const provided = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  const expected = createHmac('sha256', secret).update(body).digest();
  if (provided.length !== expected.length || !timingSafeEqual(provided, expected)) {
    return `${headerName} does not match the body`;
  }
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
