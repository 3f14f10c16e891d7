import { Problem } from '../../shared/http/problem.js';
import { bearerMatches, parseCidrs, sourceAllowed } from './access.js';
import { bodyHash } from './dedupe.js';
import { matchRule, parseObject } from './match.js';
import type { RateLimiter } from './rate.js';
import { isDiscordPing } from './verify-discord.js';
import { VerifierUnavailable, type Verifiers } from './verify.js';
import { effectiveRateLimit, type WebhookDef, type WebhookPolicy } from './webhook-config.js';
import type { Delivery, DeliveryReply, WebhookDesk } from './webhook-desk.js';

/**
 * A `[[webhook]]` of `city.toml`'s deliveries: the sender's address against `allowed_cidrs` (403), its bearer
 * token (`bearer_env`, 401), the scheme's signature (401; the operator's fault, a 503), then the rate limit (429,
 * `Retry-After`) — after the signature, unlike the reference, so only authentic deliveries draw from the bucket
 * and a flood of forged ones cannot lock the real sender out (refusals are bounded on their own: RejectionLog) —
 * a Discord PING answered PONG, the body as a JSON object (400), the first rule matching (none: 200,
 * `matched: false`), and the rule's order fired once (./webhook-desk.ts `fireOnce`).
 */
export class TableHooks {
  constructor(
    private readonly desk: WebhookDesk,
    private readonly limiter: RateLimiter,
    private readonly verifiers: Verifiers,
  ) {}

  async deliver(def: WebhookDef, policy: WebhookPolicy, d: Delivery, all: WebhookDef[]): Promise<DeliveryReply> {
    const scheme = def.verify.scheme;
    const base = { webhook: def.name, body_size: d.body.length, scheme };
    const reject = async (reason: string, status: number, detail: string, extra: { event_type?: string } = {}) => {
      await this.desk.rejections.record({ ...base, ...extra, reason, status });
      return new Problem('webhook-rejected', detail, { status });
    };
    if (def.verify.allowedCidrs.length > 0 && !sourceAllowed(parseCidrs(def.verify.allowedCidrs), d.peer)) {
      throw await reject(
        'forbidden_source',
        403,
        `forbidden: webhook ${def.name} takes no deliveries from ${d.peer ?? 'an unknown address'}`,
      );
    }
    if (def.verify.bearerEnv) {
      const expected = this.desk.host.env[def.verify.bearerEnv];
      if (!expected?.trim()) {
        throw await reject(
          'no_secret',
          503,
          `unavailable: webhook ${def.name}: its bearer variable ${def.verify.bearerEnv} is not set`,
        );
      }
      if (!bearerMatches(header(d, 'authorization'), expected)) {
        throw await reject(
          'bad_bearer',
          401,
          `unauthorized: webhook ${def.name}: the bearer token is missing or wrong`,
        );
      }
    }
    let verified;
    try {
      verified = await this.verifiers.verify(def, policy.jwtPolicies.get(def.name), d.headers, d.body);
    } catch (err) {
      if (!(err instanceof VerifierUnavailable)) throw err;
      this.desk.host.logger?.warn({ webhook: def.name, err: err.message }, 'webhook verifier unavailable');
      throw await reject('no_secret', 503, `unavailable: webhook ${def.name} takes no deliveries: ${err.message}`);
    }
    if (!verified.ok) throw await reject('bad_signature', 401, `unauthorized: webhook ${def.name}: ${verified.reason}`);
    // Only an authentic delivery draws from the bucket: forged ones cannot spend what the real sender needs.
    this.limiter.keepOnly(new Set(all.map((w) => w.name)));
    const limit = effectiveRateLimit(policy, def);
    const taken = this.limiter.take(def.name, limit);
    if (!taken.allowed) {
      await this.desk.rejections.record({ ...base, reason: 'rate_limited', status: 429 });
      throw new Problem(
        'webhook-rejected',
        `rate_limited: webhook ${def.name} takes ${limit.perMinute} deliveries a minute`,
        {
          status: 429,
          headers: { 'Retry-After': String(taken.retryAfterSeconds) },
        },
      );
    }
    // After the signature: a forged PING gets no PONG. A handshake, not a delivery: neither deduped nor recorded.
    if (scheme === 'discord-ed25519' && isDiscordPing(d.body)) return { status: 200, body: { type: 1 } };
    const event = verified.eventType ? { event_type: verified.eventType } : {};
    let body: Record<string, unknown>;
    try {
      body = parseObject(d.body);
    } catch (err) {
      throw await reject('bad_payload', 400, `invalid: webhook ${def.name}: ${(err as Error).message}`, event);
    }
    const dedupId = verified.deliveryId ?? bodyHash(d.body);
    const seen = { ...base, ...event };
    const matched = matchRule(def.rules, {
      body,
      ...(verified.eventType ? { eventType: verified.eventType } : {}),
      ...(verified.deliveryId ? { deliveryId: verified.deliveryId } : {}),
      ...(verified.identity ? { identity: verified.identity } : {}),
    });
    if (!matched) {
      // Authentic but unwanted: a 2xx, or its sender would retry it.
      await this.desk.received(
        { seen: { ...seen, matched: false }, dedupId },
        { deduped: false, dispatched: false },
        'no rule matched',
      );
      return { status: 200, body: { status: 'ok', matched: false, deduped: false, dedup_id: dedupId } };
    }
    const rig = def.rig ?? matched.rule.rig;
    const scoped = rig ? `${matched.rule.order}:rig:${rig}` : matched.rule.order;
    const order = this.desk.host.order(scoped);
    const refused = (reason: string, status: number) =>
      this.desk.rejections.record({ ...seen, dedup_id: dedupId, reason, status });
    if (!order || order.trigger !== 'webhook') {
      await refused('dispatch_refused', 422);
      throw new Problem(
        'webhook-rejected',
        `invalid: webhook ${def.name}: rule ${matched.index} fires ${scoped}, ${order ? 'which is not a trigger = "webhook" order' : 'which is no order of the city'}`,
        { status: 422 },
      );
    }
    if (!order.enabled) {
      await refused('disabled', 409);
      throw new Problem('webhook-rejected', `conflict: order ${order.scopedName} is disabled`, { status: 409 });
    }
    return this.desk.fireOnce({
      hook: def.name,
      // A signed, per-delivery id (a JWT's jti) or the provider's delivery id; the body's hash always, so a
      // captured delivery replayed under a fresh unsigned id is still the same delivery.
      keys: [...(verified.deliveryId ? [`id:${verified.deliveryId}`] : []), bodyHash(d.body)],
      dedupId,
      order,
      vars: matched.vars,
      body: d.body,
      ...(verified.eventType ? { event: verified.eventType } : {}),
      ...(verified.deliveryId ? { delivery: verified.deliveryId } : {}),
      seen: { ...seen, matched: true, rule_index: matched.index },
      refused,
    });
  }
}

function header(d: Delivery, name: string): string | undefined {
  const v = d.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
