/**
 * A delivery on the webhook listener (`[webhooks] listen` of supervisor.toml): `POST /hooks/{city}/{name}`, the
 * only thing that listener serves. Its credential is the webhook's signature (or bearer), checked by the city's
 * controller; the control plane takes none of it (decisions.md, fourth round).
 */
export const LISTENER_HOOK_PATH = /^\/hooks\/([^/]+)\/([^/]+)$/;

/** Where a delivery reaches the city's controller (and the control plane's own route, a mutation like any). */
export function controllerHookPath(city: string, name: string): string {
  return `/v0/city/${encodeURIComponent(city)}/hook/${encodeURIComponent(name)}`;
}

/** A delivery's address on the webhook listener. */
export function listenerHookPath(city: string, name: string): string {
  return `/hooks/${encodeURIComponent(city)}/${encodeURIComponent(name)}`;
}

/**
 * The sender's address, as the webhook listener saw its connection: set by the supervisor on a delivery it
 * forwards (any the sender wrote is replaced, and the control plane drops it from every request), read by the
 * controller for `allowed_cidrs`.
 */
export const WEBHOOK_PEER_HEADER = 'x-ctl-webhook-peer';
