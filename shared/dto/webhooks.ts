// Inbound webhooks: `POST /v0/city/{cityName}/hook/{name}` — a `[[webhook]]` of city.toml, or a webhook order.

/** A webhook delivery's body: whatever its sender sends (its signature covers the bytes as they came). */
export type WebhookPayload = { [key: string]: unknown };

/** `POST /hook/{name}`: what became of a delivery that was let in. */
export interface WebhookDeliveryResponse {
  /**
   * `dispatched` (202: it fired an order), `duplicate` (200: it was accepted before and fired nothing now),
   * `ok` (200: authentic, but no rule of the webhook wants it).
   */
  status: string;
  /** The order it fired (or fired the first time). */
  scoped_name?: string;
  /** The firing's tracking bead (a duplicate's: the first delivery's). */
  tracking_id?: string;
  /** A redelivery of one already accepted: nothing fired. */
  deduped: boolean;
  /** A `[[webhook]]`'s delivery: whether a rule wanted it. */
  matched?: boolean;
  /** The delivery's id (`X-GitHub-Delivery`, a JWT's `jti`, …), else `sha256:<hex>` of its body. */
  dedup_id?: string;
}

/** Discord's handshake: a verified PING (interaction type 1) is answered `{"type": 1}` and fires nothing. */
export interface WebhookPong {
  /** @isInt */
  type: number;
}

/** Payload of `webhook.received`: an authentic delivery, and what became of it. */
export interface WebhookReceivedPayload {
  /** The webhook: a `[[webhook]]`'s name, or a webhook order's scoped name. */
  webhook: string;
  /** The order it fired (or would have: a duplicate's). */
  order?: string;
  scoped_name?: string;
  rig?: string;
  /** @isInt */
  body_size: number;
  /** `hmac-sha256` (a webhook order), or the `[[webhook]]`'s scheme (`github-hmac-sha256`, `jwt-jwks`, …). */
  scheme: string;
  /** The event type its sender named (`X-GitHub-Event`, a Slack payload's `event.type`, …). */
  event_type?: string;
  /** The delivery's id (`X-GitHub-Delivery`, `jti`, …), else `sha256:<hex>` of its body. */
  dedup_id?: string;
  /** A redelivery of one accepted within the dedupe window: nothing fired. */
  deduped: boolean;
  /** A `[[webhook]]`'s delivery: whether a rule matched it. */
  matched?: boolean;
  /** The index of the rule that matched. @isInt */
  rule_index?: number;
  /** Whether it fired an order now. */
  dispatched: boolean;
  /** The firing's tracking bead (a duplicate's: the first delivery's). */
  tracking_id?: string;
}

/** Payload of `webhook.rejected`: a delivery to a webhook that was refused, and why. */
export interface WebhookRejectedPayload {
  webhook: string;
  /**
   * `no_secret` (the secret is unset or too weak, or the keys cannot be had: 503), `bad_signature` (401),
   * `bad_bearer` (401), `forbidden_source` (403, `allowed_cidrs`), `rate_limited` (429), `disabled` (409),
   * `open_work` (409), `missing_params` (422), `bad_payload` (422 for an order, 400 for a `[[webhook]]`),
   * `dispatch_refused` (422: a rule's order is not there or not a webhook order).
   */
  reason: string;
  /** @isInt */
  status: number;
  /** @isInt */
  body_size?: number;
  scheme?: string;
  event_type?: string;
  dedup_id?: string;
}

/** One `[[webhook]]` of `city.toml` as the city runs it (secrets named, never shown). */
export interface WebhookView {
  name: string;
  /** `/hooks/{city}/{name}`: where senders deliver to it, on the webhook listener (`[webhooks] listen`). */
  path: string;
  /** `city`, or `rig` (its rules fire that rig's instances). */
  scope: string;
  rig?: string;
  scheme: string;
  /** The variable holding its secret (or Discord's public key). */
  secret_env?: string;
  bearer_env?: string;
  signature_header?: string;
  event_header?: string;
  dedup_header?: string;
  timestamp_header?: string;
  /** @isInt */
  replay_window_ms?: number;
  /** Source addresses it takes deliveries from; none: any. */
  allowed_cidrs: string[];
  /** The limit its deliveries are held to (the city's, an override, its own `max_per_minute`). */
  rate_limit: { per_minute: number; burst: number };
  /** A jwt-jwks webhook's trust anchor (`[[webhooks.jwt_policy]]`). */
  jwt_policy?: { issuer: string; audience: string; jwks_url: string };
  rules: WebhookRuleView[];
}

export interface WebhookRuleView {
  event: string;
  match: { [path: string]: string };
  order: string;
  rig?: string;
  args: { [name: string]: string };
}

export interface WebhookListBody {
  webhooks: WebhookView[];
}
