import type { OrderDef } from './order-file.js';

/** Where a webhook delivery's body is kept (a firing's payload), and the event type its sender named. */
export interface WebhookPayloadRef {
  file: string;
  event?: string;
  /** The delivery id its sender gave (`X-GitHub-Delivery`), when it gave one. */
  delivery?: string;
}

/** What an order's commands (its `exec`, its `check`) are told of it: its name, and the rig an instance runs for. */
export function orderEnv(order: OrderDef): Record<string, string> {
  return {
    CTL_ORDER: order.name,
    CTL_ORDER_SCOPED_NAME: order.scopedName,
    ...(order.rig ? { CTL_RIG: order.rig, CTL_RIG_DIR: order.rigDir! } : {}),
  };
}

/** What an exec order fired by a webhook is told of the delivery (the body is read from its file). */
export function webhookEnv(payload: WebhookPayloadRef): Record<string, string> {
  return {
    CTL_WEBHOOK_PAYLOAD_FILE: payload.file,
    ...(payload.event ? { CTL_WEBHOOK_EVENT: payload.event } : {}),
    ...(payload.delivery ? { CTL_WEBHOOK_DELIVERY: payload.delivery } : {}),
  };
}

/**
 * The vars a formula order's run gets from its context — `rig`, `rig_dir`, and for a webhook delivery
 * `webhook_payload_file`, `webhook_event`, `webhook_delivery` — each only when the formula declares it (a formula
 * refuses vars it does not declare).
 */
export function contextVars(
  order: OrderDef,
  payload: WebhookPayloadRef | undefined,
  declared: (name: string) => boolean,
): Record<string, string> {
  const all: Record<string, string | undefined> = {
    rig: order.rig,
    rig_dir: order.rigDir,
    webhook_payload_file: payload?.file,
    webhook_event: payload?.event,
    webhook_delivery: payload?.delivery,
  };
  return Object.fromEntries(
    Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined && declared(e[0])),
  );
}

/**
 * The agent a formula order's work is routed to. A rig instance's bare `pool` means the pool of its own rig when
 * the city has one (`rig/binding.pool`, then `rig/pool`), else a city pool of that name; a pool with a `/` is
 * already rig-qualified.
 */
export function qualifiedPool(order: OrderDef, agentExists: (name: string) => boolean): string | undefined {
  const pool = order.pool;
  if (pool === undefined || order.rig === undefined || pool.includes('/')) return pool;
  const candidates = [
    ...(order.binding ? [`${order.rig}/${order.binding}.${pool}`] : []),
    `${order.rig}/${pool}`,
    ...(order.binding ? [`${order.binding}.${pool}`] : []),
    pool,
  ];
  return candidates.find(agentExists) ?? candidates[0];
}
