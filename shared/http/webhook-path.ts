/** A webhook delivery: `POST /v0/city/{cityName}/hook/{order}` (the order's name or scoped name). */
const HOOK_PATH = /^\/v0\/city\/[^/]+\/hook\/[^/]+$/;

/**
 * Whether a request is a webhook delivery to an order. Its credential is the order's secret (an HMAC of the body
 * the controller checks), not an API token or the connection's account, and its sender — GitHub, a CI system,
 * another machine — sends no `X-CTL-Request` header: the access gate lets it through to the controller, which
 * refuses it unless the signature matches, and the CSRF marker is not asked of it (a browser cannot forge the
 * signature, so it cannot be made to deliver one). `url` may carry a query.
 */
export function isWebhookDelivery(method: string | undefined, url: string): boolean {
  if (method !== 'POST') return false;
  const q = url.indexOf('?');
  return HOOK_PATH.test(q < 0 ? url : url.slice(0, q));
}

/**
 * The sender's address, as the supervisor saw its connection: set by the supervisor on a webhook delivery it
 * forwards (any the sender wrote is replaced), read by the controller for `allowed_cidrs`.
 */
export const WEBHOOK_PEER_HEADER = 'x-ctl-webhook-peer';
