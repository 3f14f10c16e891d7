import type { IncomingHttpHeaders } from 'node:http';
import { rmSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { WebhookDeliveryResponse, WebhookPong, WebhookReceivedPayload } from '../../shared/dto/webhooks.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { WebhookPayloadRef } from '../orders/order-context.js';
import type { OrderDef } from '../orders/order-file.js';
import { DeliveryLedger } from './dedupe.js';
import { keepPayload, RejectionLog } from './delivery-record.js';
import { OrderHooks } from './order-hooks.js';
import { RateLimiter } from './rate.js';
import { TableHooks } from './table-hooks.js';
import { Verifiers } from './verify.js';
import type { JwksFetch } from './verify-jwt.js';
import type { WebhookDef, WebhookPolicy } from './webhook-config.js';

/** What webhooks need of the city: its orders, a way to fire one, its `[[webhook]]` tables, its log, its files. */
export interface WebhookHost {
  order(scopedName: string): OrderDef | undefined;
  fire(order: OrderDef, vars: Record<string, string>, payload: WebhookPayloadRef): Promise<Bead>;
  /** Whether the firing a tracking bead records ended because ctl itself stopped (not because of what it ran). */
  interrupted(trackingId: string): boolean;
  /** The `[[webhook]]` tables and `[webhooks]` policy of the configuration in use. */
  tables(): { webhooks: WebhookDef[]; policy: WebhookPolicy };
  log: EventLog;
  /** Where delivery bodies are kept for the orders they fire. */
  payloadDir: string;
  /** Where accepted deliveries are remembered (dedupe), across restarts. */
  ledgerFile: string;
  /** The environment a secret is read from (the controller's own). */
  env: NodeJS.ProcessEnv;
  logger?: Logger;
  /** How a jwt-jwks webhook's keys are fetched (tests give their own). */
  fetchJwks?: JwksFetch;
}

/** One delivery as it came: the webhook named in its path, its headers and bytes, the sender's address. */
export interface Delivery {
  name: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The sender's address, as the supervisor saw its connection. */
  peer?: string;
}

export interface DeliveryReply {
  status: 200 | 202;
  body: WebhookDeliveryResponse | WebhookPong;
}

/** A delivery checked and matched, ready to fire its order once. */
export interface Firing {
  /** The webhook: the ledger's namespace and the events' subject. */
  hook: string;
  /** What makes it the same delivery: its id when it has one, its body's hash always. */
  keys: string[];
  dedupId: string;
  order: OrderDef;
  vars: Record<string, string>;
  body: Buffer;
  event?: string;
  delivery?: string;
  /** What `webhook.received` says of it besides the firing. */
  seen: Pick<WebhookReceivedPayload, 'webhook' | 'body_size' | 'scheme' | 'event_type' | 'matched' | 'rule_index'>;
  /** Records why a firing was refused (`open_work`, `missing_params`). */
  refused(reason: string, status: number): Promise<void>;
}

/**
 * Inbound webhooks: `POST /v0/city/{cityName}/hook/{name}` is a `[[webhook]]` of `city.toml` by that name
 * (./table-hooks.ts), else a `trigger = "webhook"` order (./order-hooks.ts). Either way an accepted delivery fires
 * its order once: a redelivery (./dedupe.ts) is answered 200 `duplicate` and recorded, firing nothing.
 */
export class WebhookDesk {
  readonly ledger: DeliveryLedger;
  readonly rejections: RejectionLog;
  private readonly orderHooks: OrderHooks;
  private readonly tableHooks: TableHooks;

  constructor(readonly host: WebhookHost) {
    this.ledger = new DeliveryLedger(host.ledgerFile, { ...(host.logger ? { logger: host.logger } : {}) });
    this.rejections = new RejectionLog(host.log, host.logger);
    this.orderHooks = new OrderHooks(this);
    this.tableHooks = new TableHooks(this, new RateLimiter(), new Verifiers(host.env, host.fetchJwks));
  }

  deliver(delivery: Delivery): Promise<DeliveryReply> {
    const { webhooks, policy } = this.host.tables();
    const def = webhooks.find((w) => w.name === delivery.name);
    if (def) return this.tableHooks.deliver(def, policy, delivery, webhooks);
    return this.orderHooks.deliver(delivery);
  }

  /**
   * Fires `f.order` unless the same delivery was accepted within the window: then a `duplicate`, nothing fired.
   * A delivery whose firing ctl itself cut off (its controller died or stopped while it ran) is not a duplicate:
   * the sender's redelivery fires it again, once — its claim replaces the old one before anything awaits.
   */
  async fireOnce(f: Firing): Promise<DeliveryReply> {
    const seen = this.ledger.seen(f.hook, f.keys);
    const prior = seen?.tracking && this.host.interrupted(seen.tracking) ? undefined : seen;
    const target = {
      order: f.order.name,
      scoped_name: f.order.scopedName,
      ...(f.order.rig ? { rig: f.order.rig } : {}),
    };
    if (prior) {
      await this.received(
        f,
        { ...target, deduped: true, dispatched: false, ...(prior.tracking ? { tracking_id: prior.tracking } : {}) },
        'a duplicate, not fired again',
      );
      return {
        status: 200,
        body: {
          status: 'duplicate',
          deduped: true,
          scoped_name: f.order.scopedName,
          dedup_id: f.dedupId,
          ...(prior.tracking ? { tracking_id: prior.tracking } : {}),
          ...(f.seen.matched !== undefined ? { matched: f.seen.matched } : {}),
        },
      };
    }
    const claim = this.ledger.claim(f.hook, f.keys);
    const file = keepPayload(this.host.payloadDir, f.body);
    let tracking: Bead;
    try {
      tracking = await this.host.fire(f.order, f.vars, {
        file,
        ...(f.event ? { event: f.event } : {}),
        ...(f.delivery ? { delivery: f.delivery } : {}),
      });
    } catch (err) {
      // Never acted on: the sender's retry must be able to fire it.
      claim.release();
      rmSync(file, { force: true });
      if (err instanceof Problem) await f.refused(err.status === 409 ? 'open_work' : 'missing_params', err.status);
      throw err;
    }
    claim.settle(tracking.id);
    await this.received(f, { ...target, deduped: false, dispatched: true, tracking_id: tracking.id }, 'fired it');
    return {
      status: 202,
      body: {
        status: 'dispatched',
        deduped: false,
        scoped_name: f.order.scopedName,
        tracking_id: tracking.id,
        dedup_id: f.dedupId,
        ...(f.seen.matched !== undefined ? { matched: f.seen.matched } : {}),
      },
    };
  }

  async received(
    f: Pick<Firing, 'seen' | 'dedupId' | 'event'>,
    outcome: Omit<WebhookReceivedPayload, keyof Firing['seen'] | 'dedup_id'>,
    what: string,
  ): Promise<void> {
    const subject = f.seen.webhook;
    await this.host.log.append({
      type: 'webhook.received',
      actor: 'webhook',
      subject,
      message: `webhook ${subject}: ${what}${f.event ? ` (${f.event})` : ''}`,
      payload: { ...f.seen, dedup_id: f.dedupId, ...outcome },
    });
  }
}
