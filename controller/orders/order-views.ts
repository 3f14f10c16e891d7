import { listenerHookPath } from '../../shared/http/webhook-path.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { MonitorFeedItemResponse } from '../../shared/dto/formulas.js';
import type {
  OrderCheckResponse,
  OrderHistoryDetailResponse,
  OrderHistoryEntry,
  OrderResponse,
  OrderWebhookView,
} from '../../shared/dto/orders.js';
import { formatDuration } from '../../shared/duration.js';
import {
  CAPTURE_OUTPUT,
  DURATION_MS,
  ERROR,
  EXIT_CODE,
  ORDER,
  ORDER_STATUS,
  ORDER_TRIGGER,
  OUTPUT,
  RUN_ID,
  SIGNAL,
} from './order-dispatch.js';
import { DEFAULT_SIGNATURE_HEADER, type OrderDef } from './order-file.js';
import type { OrderScheduler } from './order-scheduler.js';

export function orderResponse(city: string, order: OrderDef, overridden: boolean): OrderResponse {
  return {
    name: order.name,
    scoped_name: order.scopedName,
    ...(order.rig ? { rig: order.rig } : {}),
    scope: order.scope,
    type: order.exec ? 'exec' : 'formula',
    trigger: order.trigger,
    ...(order.description ? { description: order.description } : {}),
    ...(order.interval ? { interval: order.interval } : {}),
    ...(order.schedule ? { schedule: order.schedule } : {}),
    ...(order.tz ? { tz: order.tz } : {}),
    ...(order.check
      ? {
          check: order.check,
          check_timeout: formatDuration(order.checkTimeoutMs),
          check_timeout_ms: order.checkTimeoutMs,
        }
      : {}),
    ...(order.on ? { on: order.on } : {}),
    ...(order.exec ? { exec: order.exec } : {}),
    ...(order.formula ? { formula: order.formula } : {}),
    ...(order.pool ? { pool: order.pool } : {}),
    timeout: formatDuration(order.timeoutMs),
    timeout_ms: order.timeoutMs,
    enabled: order.enabled,
    ...(order.idempotent ? { idempotent: true } : {}),
    capture_output: order.captureOutput,
    ...(Object.keys(order.env).length ? { env: order.env } : {}),
    ...(order.trigger === 'webhook' ? { webhook: webhookView(city, order) } : {}),
    source: order.file,
    ...(overridden ? { overridden: true } : {}),
  };
}

/** Where a webhook order takes deliveries, and how they are signed (never the secret itself). */
function webhookView(city: string, order: OrderDef): OrderWebhookView {
  return {
    path: listenerHookPath(city, order.scopedName),
    signature_header: order.signatureHeader ?? DEFAULT_SIGNATURE_HEADER,
    ...(order.secretEnv ? { secret_env: order.secretEnv } : {}),
  };
}

export function orderCheck(order: OrderDef, scheduler: OrderScheduler): OrderCheckResponse {
  const dueness = scheduler.dueness(order);
  const last = scheduler.lastRun(order);
  return {
    name: order.name,
    scoped_name: order.scopedName,
    ...(order.rig ? { rig: order.rig } : {}),
    due: dueness.due,
    reason: dueness.reason,
    ...(last
      ? { last_run: new Date(last.at).toISOString(), ...(last.outcome ? { last_run_outcome: last.outcome } : {}) }
      : {}),
    ...(dueness.nextDue !== undefined ? { next_due: new Date(dueness.nextDue).toISOString() } : {}),
  };
}

export function historyEntry(bead: Bead): OrderHistoryEntry {
  const meta = bead.metadata ?? {};
  const capture = meta[CAPTURE_OUTPUT] !== 'false';
  return {
    bead_id: bead.id,
    store_ref: 'city',
    name: (meta[ORDER] ?? '').split(':rig:')[0]!,
    scoped_name: meta[ORDER] ?? '',
    ...(meta[ORDER]?.includes(':rig:') ? { rig: meta[ORDER].split(':rig:')[1] } : {}),
    created_at: bead.created_at,
    labels: bead.labels ?? [],
    ...(meta[ORDER_STATUS] ? { status: meta[ORDER_STATUS] } : {}),
    ...(meta[ORDER_TRIGGER] ? { trigger: meta[ORDER_TRIGGER] } : {}),
    ...(meta[DURATION_MS] ? { duration_ms: meta[DURATION_MS] } : {}),
    ...(meta[EXIT_CODE] ? { exit_code: meta[EXIT_CODE] } : {}),
    ...(meta[SIGNAL] ? { signal: meta[SIGNAL] } : {}),
    ...(meta[ERROR] ? { error: meta[ERROR] } : {}),
    ...(meta[RUN_ID] ? { wisp_root_id: meta[RUN_ID] } : {}),
    capture_output: capture,
    has_output: (meta[OUTPUT] ?? '') !== '',
  };
}

export function historyDetail(bead: Bead): OrderHistoryDetailResponse {
  const meta = bead.metadata ?? {};
  return {
    bead_id: bead.id,
    store_ref: 'city',
    created_at: bead.created_at,
    labels: bead.labels ?? [],
    output: meta[OUTPUT] ?? '',
    ...(meta[EXIT_CODE] ? { exit_code: meta[EXIT_CODE] } : {}),
    ...(meta[DURATION_MS] ? { duration_ms: meta[DURATION_MS] } : {}),
    ...(meta[ERROR] ? { error: meta[ERROR] } : {}),
  };
}

export function orderFeedItem(bead: Bead): MonitorFeedItemResponse {
  const meta = bead.metadata ?? {};
  return {
    id: bead.id,
    type: 'order',
    status: meta[ORDER_STATUS] ?? (bead.status === 'closed' ? 'closed' : 'running'),
    title: bead.title,
    scope_kind: 'city',
    scope_ref: '',
    target: meta[ORDER] ?? '',
    started_at: bead.created_at,
    updated_at: bead.updated_at ?? bead.created_at,
    bead_id: bead.id,
    ...(meta[RUN_ID] ? { root_bead_id: meta[RUN_ID], workflow_id: meta[RUN_ID], run_detail_available: true } : {}),
    detail_available: true,
  };
}
