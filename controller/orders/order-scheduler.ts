import { Cron } from 'croner';
import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import { formatDuration } from '../../shared/duration.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { LogTail } from '../../shared/events/log-tail.js';
import type { BeadReads, BeadsService } from '../beads/beads-service.js';
import type { Clock } from '../clock.js';
import type { CommandRunner } from '../commands.js';
import type { OrderCatalog } from './order-catalog.js';
import { EVENT_SEQ, FIRED_AT, ORDER_STATUS, type OrderDispatcher } from './order-dispatch.js';
import { orderEnv, type WebhookPayloadRef } from './order-context.js';
import type { OrderDef } from './order-file.js';
import { RunStats } from '../run-stats.js';

/** The scheduler looks again at least this often (new files are seen sooner: the config watcher says so). */
const MAX_SLEEP_MS = 60_000;

/** Whether an order is due now, and why (what `GET /orders/check` shows). */
export interface Dueness {
  due: boolean;
  reason: string;
  /** When it is next due, when known. */
  nextDue?: number;
}

interface OrderState {
  /** Read from the store once; then kept as the scheduler fires. */
  lastRun?: { at: number; beadId: string };
  /** Event orders: the last event seq already fired on, and the newest matching one seen. */
  cursor?: number;
  seen?: number;
  /** Condition orders: the last answer of its check and when it came; whether one runs now. */
  condition?: { at: number; ok: boolean; detail: string };
  checking?: boolean;
  /** Event orders: the log was read from the cursor once, while the tail follows it for what comes next. */
  caughtUp?: boolean;
}

/**
 * When orders fire. Off the tick and never waiting on a command: each evaluation reads the catalog (cheap:
 * files are parsed only when they change), decides which automatic orders are due — cooldown (never run, or the
 * interval passed), cron (an occurrence of its schedule since the last firing; a never-run order does not
 * backfill), condition (its check, run in the background, exited 0), event (an event of its type after its
 * cursor) — and hands those to the dispatcher, whose firings run on their own. It then sleeps until the next
 * order is due (at most a minute), an event arrives that an order waits for, the clock moves, or the files change.
 */
export class OrderScheduler {
  private readonly state = new Map<string, OrderState>();
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Immediate | undefined;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  /** Event types some order fires on. */
  private listening = new Set<string>();
  /** How long its evaluations take, for `GET /status` (and the bench). */
  readonly runStats = new RunStats();

  constructor(
    private readonly deps: {
      catalog: OrderCatalog;
      dispatcher: OrderDispatcher;
      beads: Pick<BeadReads, 'find'> & Pick<BeadsService, 'orderRuns'>;
      log: EventLog;
      /** Follows the log for event orders. */
      tail: LogTail;
      clock: Clock;
      commands: CommandRunner;
      cityRoot: string;
      env: NodeJS.ProcessEnv;
      /** How often a condition order's check runs. */
      conditionEveryMs: () => number;
      logger?: Logger;
    },
  ) {}

  start(): void {
    this.stopped = false;
    this.deps.clock.onMoved(() => this.evaluateSoon());
    // What a controller that died left running is closed first, so it holds nothing back.
    void this.deps.dispatcher
      .closeInterrupted()
      .catch((err: unknown) => this.deps.logger?.error({ err }, 'could not close the firings left running'))
      .finally(() => this.evaluateSoon());
  }

  stop(): void {
    this.stopped = true;
    this.follow(false);
    clearTimeout(this.timer);
    if (this.soon) clearImmediate(this.soon);
  }

  /** Something changed (files, a firing ended): look again soon, once. */
  evaluateSoon(): void {
    if (this.stopped || this.soon) return;
    this.soon = setImmediate(() => {
      this.soon = undefined;
      this.evaluateSafely();
    });
  }

  private readonly eventOrders = new Map<string, string>();

  private evaluateSafely(): void {
    try {
      this.evaluate();
    } catch (err) {
      this.deps.logger?.error({ err }, 'order evaluation failed');
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.evaluateSafely(), MAX_SLEEP_MS);
      this.timer.unref();
    }
  }

  /** One pass: fires what is due, then sleeps until the next thing is. */
  evaluate(): void {
    if (this.stopped) return;
    const started = performance.now();
    clearTimeout(this.timer);
    const { orders } = this.deps.catalog.list();
    const now = this.deps.clock.now();
    let next = now + MAX_SLEEP_MS;
    this.listening = new Set(orders.filter((o) => o.enabled && o.trigger === 'event' && o.on).map((o) => o.on!));
    this.eventOrders.clear();
    for (const order of orders)
      if (order.enabled && order.trigger === 'event' && order.on) this.eventOrders.set(order.scopedName, order.on);
    this.follow(this.listening.size > 0);
    for (const order of orders) {
      if (this.eventOrders.has(order.scopedName)) this.catchUp(order);
      if (!order.enabled || order.trigger === 'manual' || order.trigger === 'webhook') continue;
      const dueness = this.dueness(order, now);
      if (dueness.nextDue !== undefined) next = Math.min(next, dueness.nextDue);
      if (order.trigger === 'condition') this.maybeCheck(order, now);
      if (!dueness.due || this.deps.dispatcher.openWork(order)) continue;
      void this.fire(order, now);
    }
    this.runStats.record(performance.now() - started);
    const delay = Math.max(10, Math.min(next - now, MAX_SLEEP_MS));
    this.timer = setTimeout(() => this.evaluateSafely(), delay);
    this.timer.unref();
  }

  /**
   * Follows the city's log (whoever appends: this controller, the supervisor, a tool) while an event order
   * waits for a type; a city without one does not pay for following it.
   */
  private follow(on: boolean): void {
    if (on && !this.unsubscribe) {
      this.unsubscribe = this.deps.tail.subscribe((records) => {
        let wanted = false;
        for (const record of records) {
          if (!this.listening.has(record.type)) continue;
          for (const [name, state] of this.state) {
            if (this.eventOrders.get(name) === record.type) state.seen = Math.max(state.seen ?? 0, record.seq);
          }
          wanted = true;
        }
        if (wanted) this.evaluateSoon();
      });
    } else if (!on && this.unsubscribe) {
      this.unsubscribe();
      this.unsubscribe = undefined;
    }
  }

  /** Fires `order` now (whatever its trigger); for `POST /order/{name}/run` and a webhook delivery. */
  async fireNow(order: OrderDef, vars?: Record<string, string>, webhook?: WebhookPayloadRef): Promise<Bead> {
    const at = this.deps.clock.now();
    const tracking = await this.deps.dispatcher.fire({
      order,
      trigger: order.trigger,
      vars,
      at,
      ...(webhook ? { webhook } : {}),
    });
    this.stateOf(order).lastRun = { at, beadId: tracking.id };
    return tracking;
  }

  private async fire(order: OrderDef, now: number): Promise<void> {
    const state = this.stateOf(order);
    const eventSeq = order.trigger === 'event' ? state.seen : undefined;
    // Taken before the firing, so the next evaluation does not fire it again meanwhile.
    state.lastRun = { at: now, beadId: '' };
    if (eventSeq !== undefined) state.cursor = eventSeq;
    if (order.trigger === 'condition') state.condition = undefined;
    try {
      const tracking = await this.deps.dispatcher.fire({ order, trigger: order.trigger, eventSeq, at: now });
      state.lastRun = { at: now, beadId: tracking.id };
    } catch (err) {
      this.deps.logger?.warn({ err, order: order.scopedName }, 'order did not fire');
    }
  }

  /** Whether `order` is due at `now`, why, and when it next will be. */
  dueness(order: OrderDef, now = this.deps.clock.now()): Dueness {
    if (!order.enabled) return { due: false, reason: 'disabled' };
    const state = this.stateOf(order);
    const last = state.lastRun?.at;
    switch (order.trigger) {
      case 'manual':
        return { due: false, reason: 'manual trigger — fire it with ctl order run (POST /order/{name}/run)' };
      case 'webhook':
        return { due: false, reason: 'webhook trigger — fires when its webhook (or POST /order/{name}/run) is called' };
      case 'cooldown': {
        if (last === undefined) return { due: true, reason: 'never run' };
        const nextDue = last + order.intervalMs!;
        if (now >= nextDue) return { due: true, reason: `cooldown elapsed (${order.interval})`, nextDue };
        return { due: false, reason: `cooldown: ${formatDuration(nextDue - now)} remaining`, nextDue };
      }
      case 'cron': {
        const cron = new Cron(order.schedule!, { timezone: order.tz, paused: true });
        const previous = cron.previousRuns(1, new Date(now))[0]?.getTime();
        const upcoming = cron.nextRun(new Date(now))?.getTime();
        // A never-run order fires on a matching minute, and does not backfill one already past.
        const due = previous !== undefined && (last === undefined ? now - previous < 60_000 : previous > last);
        const when = previous !== undefined ? new Date(previous).toISOString() : '';
        return due
          ? { due: true, reason: `schedule matched at ${when}`, nextDue: upcoming }
          : {
              due: false,
              reason: `next at ${upcoming ? new Date(upcoming).toISOString() : 'never'}`,
              nextDue: upcoming,
            };
      }
      case 'condition': {
        const c = state.condition;
        if (!c) return { due: false, reason: state.checking ? 'check running' : 'check not run yet' };
        const nextDue = c.at + this.conditionEvery(order);
        return c.ok
          ? { due: true, reason: 'check exited 0', nextDue }
          : { due: false, reason: `check: ${c.detail}`, nextDue };
      }
      case 'event': {
        const cursor = state.cursor ?? 0;
        if (state.seen !== undefined && state.seen > cursor)
          return { due: true, reason: `${order.on} event ${state.seen} after cursor ${cursor}` };
        return { due: false, reason: `no ${order.on} event after cursor ${cursor}` };
      }
    }
  }

  /** What the last firing was: when, and how it ended. */
  lastRun(order: OrderDef): { at: number; outcome?: string } | undefined {
    const state = this.stateOf(order);
    if (!state.lastRun) return undefined;
    const bead = state.lastRun.beadId ? this.deps.beads.find(state.lastRun.beadId) : undefined;
    return { at: state.lastRun.at, outcome: bead?.metadata?.[ORDER_STATUS] ?? 'running' };
  }

  private conditionEvery(order: OrderDef): number {
    return order.intervalMs ?? this.deps.conditionEveryMs();
  }

  private maybeCheck(order: OrderDef, now: number): void {
    const state = this.stateOf(order);
    if (state.checking || !order.check) return;
    if (state.condition && now - state.condition.at < this.conditionEvery(order)) return;
    // Not while its last firing is open: its answer could not fire it anyway.
    if (this.deps.dispatcher.openWork(order)) return;
    state.checking = true;
    void this.deps.commands
      .run(order.check, {
        cwd: order.rigDir ?? this.deps.cityRoot,
        env: { ...this.deps.env, ...order.env, ...orderEnv(order) },
        timeoutMs: order.checkTimeoutMs,
      })
      .then((result) => {
        state.checking = false;
        const detail = result.timedOut
          ? `timed out after ${order.checkTimeoutMs} ms`
          : (result.error ?? `exited with ${result.signal ?? `code ${result.exitCode}`}`);
        state.condition = { at: this.deps.clock.now(), ok: result.exitCode === 0, detail };
        // Fire now, or sleep until the next check is due.
        this.evaluateSoon();
      });
  }

  /** An order's state, read from its newest tracking bead the first time it is asked for. */
  private stateOf(order: OrderDef): OrderState {
    let state = this.state.get(order.scopedName);
    if (state) return state;
    state = {};
    const newest = this.deps.beads.orderRuns(order.scopedName, { limit: 1 }).items[0];
    if (newest) {
      const firedAt = Date.parse(newest.metadata?.[FIRED_AT] ?? newest.created_at);
      state.lastRun = { at: Number.isNaN(firedAt) ? Date.parse(newest.created_at) : firedAt, beadId: newest.id };
      const seq = Number(newest.metadata?.[EVENT_SEQ]);
      if (Number.isInteger(seq)) state.cursor = seq;
    }
    // A new event order starts at the log's end: what happened before it existed is not its business.
    if (order.trigger === 'event' && state.cursor === undefined) state.cursor = this.deps.log.head();
    this.state.set(order.scopedName, state);
    return state;
  }

  /**
   * Reads the log after an event order's cursor once — events that came while no controller ran, or before the
   * tail followed the log for it — so each event of its type fires it even if it came before it was followed.
   */
  private catchUp(order: OrderDef): void {
    const state = this.stateOf(order);
    if (state.caughtUp) return;
    state.caughtUp = true;
    const missed = this.deps.log
      .after(state.cursor ?? 0)
      .filter((e) => e.type === order.on)
      .at(-1);
    if (missed) state.seen = Math.max(state.seen ?? 0, missed.seq);
  }
}
