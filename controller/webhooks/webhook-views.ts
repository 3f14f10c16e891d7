import type { WebhookView } from '../../shared/dto/webhooks.js';
import { listenerHookPath } from '../../shared/http/webhook-path.js';
import { effectiveRateLimit, type WebhookDef, type WebhookPolicy } from './webhook-config.js';

/** A `[[webhook]]` as `GET /webhooks` shows it. */
export function webhookView(city: string, def: WebhookDef, policy: WebhookPolicy): WebhookView {
  const v = def.verify;
  const limit = effectiveRateLimit(policy, def);
  const jwt = policy.jwtPolicies.get(def.name);
  return {
    name: def.name,
    path: listenerHookPath(city, def.name),
    scope: def.scope,
    ...(def.rig ? { rig: def.rig } : {}),
    scheme: v.scheme,
    ...(v.secretEnv ? { secret_env: v.secretEnv } : {}),
    ...(v.bearerEnv ? { bearer_env: v.bearerEnv } : {}),
    ...(v.signatureHeader ? { signature_header: v.signatureHeader } : {}),
    ...(v.eventHeader ? { event_header: v.eventHeader } : {}),
    ...(v.dedupHeader ? { dedup_header: v.dedupHeader } : {}),
    ...(v.timestampHeader ? { timestamp_header: v.timestampHeader } : {}),
    ...(v.replayWindowMs !== undefined ? { replay_window_ms: v.replayWindowMs } : {}),
    allowed_cidrs: v.allowedCidrs,
    rate_limit: { per_minute: limit.perMinute, burst: limit.burst },
    ...(v.scheme === 'jwt-jwks' && jwt
      ? { jwt_policy: { issuer: jwt.issuer, audience: jwt.audience, jwks_url: jwt.jwksUrl } }
      : {}),
    rules: def.rules.map((r) => ({
      event: r.event,
      match: r.match,
      order: r.order,
      ...(r.rig ? { rig: r.rig } : {}),
      args: r.args,
    })),
  };
}
