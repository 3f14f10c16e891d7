import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import type { BeadsService } from '../beads/beads-service.js';
import { ORDER_TRACKING, runLabel } from '../beads/order-labels.js';
import type { CommandRunner } from '../commands.js';
import type { FormulaCatalog } from '../formulas/formula-catalog.js';
import { launchFormula } from '../formulas/launch.js';
import type { RunVars } from '../formulas/run-vars.js';
import type { MoleculeEngine } from '../molecules/molecule-engine.js';
import { contextVars, orderEnv, qualifiedPool, webhookEnv, type WebhookPayloadRef } from './order-context.js';
import type { OrderDef, Trigger } from './order-file.js';

/** Tracking-bead metadata: what a firing did. */
export const ORDER = 'ctl.order';
export const ORDER_TRIGGER = 'ctl.trigger';
/** `running`, `success`, `failed` or `dispatched`. */
export const ORDER_STATUS = 'ctl.order_status';
export const EXIT_CODE = 'ctl.exit_code';
export const SIGNAL = 'ctl.signal';
export const DURATION_MS = 'ctl.duration_ms';
export const ERROR = 'ctl.error';
export const OUTPUT = 'ctl.output';
export const RUN_ID = 'ctl.run_id';
export const EVENT_SEQ = 'ctl.event_seq';
export const CAPTURE_OUTPUT = 'ctl.capture_output';
/** When it fired by the city's order clock (the time cooldowns and cron count from). */
export const FIRED_AT = 'ctl.fired_at';
/**
 * `true` on a firing that ended because ctl itself stopped (its controller died or was stopping), not because of
 * what it ran: the delivery that fired it may fire it again (./../webhooks/webhook-desk.ts).
 */
export const INTERRUPTED = 'ctl.interrupted';
/** Why a firing cut off by its controller's end failed. */
export const INTERRUPTED_ERROR = 'the controller stopped while it ran (its command was ended with it)';

export { runLabel };

export interface Firing {
  order: OrderDef;
  /** A webhook delivery: where its body is kept and the event type its sender named. */
  webhook?: WebhookPayloadRef;
  trigger: Trigger;
  /** An event order: the last event this firing covers. */
  eventSeq?: number;
  vars?: Record<string, string>;
  /** The order clock's time of the firing. */
  at: number;
}

/**
 * Fires orders: the open-work gate (no second firing while a bead of an earlier one is open, unless the order is
 * `idempotent` or has `no_work_gate`), a tracking bead per firing (created before anything runs), `order.fired`,
 * then the action — a shell command under its time-out (output, exit status and duration kept on the tracking
 * bead), or a formula run routed to its `pool` — and `order.completed` or `order.failed`. The action runs off
 * the caller: `fire` answers once the tracking bead exists.
 */
export class OrderDispatcher {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly deps: {
      beads: BeadsService;
      log: EventLog;
      commands: CommandRunner;
      formulas: FormulaCatalog;
      molecules: MoleculeEngine;
      runVars: Pick<RunVars, 'of'>;
      cityRoot: string;
      env: NodeJS.ProcessEnv;
      logger?: Logger;
      /** Whether the city has this agent (a rig instance's pool is qualified by it). */
      agentExists?: (name: string) => boolean;
      /** Something changed that may make another order due or free (a firing ended). */
      settled: (order: string) => void;
    },
  ) {}

  /** An open bead of an earlier firing, which holds the next one back. */
  openWork(order: OrderDef): Bead | undefined {
    if (order.idempotent || order.noWorkGate) return undefined;
    return this.deps.beads.list({ label: runLabel(order.scopedName), limit: 1 }).items[0];
  }

  /** Fires the order now; throws a 409 problem when open work holds it back, a 422 when a required param is missing. */
  async fire(firing: Firing): Promise<Bead> {
    const { order } = firing;
    const open = this.openWork(order);
    if (open) {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: order ${order.scopedName} has open work: ${open.id} (it is not idempotent)`,
      );
    }
    const missing = order.requiredParams.filter((p) => firing.vars?.[p] === undefined);
    if (missing.length) {
      throw new Problem('validation-failed', `invalid: order ${order.scopedName} needs ${missing.join(', ')}`, {
        errors: missing.map((p) => ({ location: `body.vars.${p}`, message: `${p} is required` })),
      });
    }
    const { bead: tracking } = await this.deps.beads.create({
      title: `order ${order.scopedName} (${firing.trigger})`,
      type: 'task',
      labels: [
        ORDER_TRACKING,
        runLabel(order.scopedName),
        order.exec ? 'exec' : 'formula',
        ...(firing.eventSeq !== undefined ? [`seq:${firing.eventSeq}`] : []),
      ],
      metadata: {
        [ORDER]: order.scopedName,
        [ORDER_TRIGGER]: firing.trigger,
        [ORDER_STATUS]: 'running',
        [CAPTURE_OUTPUT]: String(order.captureOutput),
        [FIRED_AT]: new Date(firing.at).toISOString(),
        ...(firing.eventSeq !== undefined ? { [EVENT_SEQ]: String(firing.eventSeq) } : {}),
      },
    });
    await this.deps.log.append({
      type: 'order.fired',
      actor: 'ctl',
      subject: order.scopedName,
      message: `${order.scopedName} fired (${firing.trigger})`,
      payload: {
        order: order.name,
        scoped_name: order.scopedName,
        ...(order.rig ? { rig: order.rig } : {}),
        tracking_id: tracking.id,
        trigger: firing.trigger,
      },
    });
    const work = (order.exec ? this.exec(firing, tracking) : this.formula(firing, tracking))
      .catch((err: unknown) => this.deps.logger?.error({ err, order: order.scopedName }, 'order firing failed'))
      .finally(() => {
        this.inFlight.delete(work);
        this.deps.settled(order.scopedName);
      });
    this.inFlight.add(work);
    return tracking;
  }

  /**
   * Firings a controller that died left `running`: their command ended with it (its process group is tethered to
   * the controller), so each is closed as failed with one `order.failed`, and no longer holds its order back.
   * Called before anything fires: every firing of ours is in `inFlight`, none of these is.
   */
  async closeInterrupted(): Promise<void> {
    const left = this.deps.beads.list({
      label: ORDER_TRACKING,
      metadata: { [ORDER_STATUS]: 'running' },
      limit: 10_000,
    }).items;
    for (const tracking of left) {
      const scoped = tracking.metadata?.[ORDER] ?? '';
      const name = scoped.split(':rig:')[0]!;
      const trigger = tracking.metadata?.[ORDER_TRIGGER] ?? 'manual';
      const error = INTERRUPTED_ERROR;
      await this.deps.beads.update(tracking.id, {
        status: 'closed',
        addLabels: ['exec-failed'],
        metadata: { [ORDER_STATUS]: 'failed', [ERROR]: error, [INTERRUPTED]: 'true' },
      });
      await this.deps.log.append({
        type: 'order.failed',
        actor: 'ctl',
        subject: scoped,
        message: `${scoped}: ${error}`,
        payload: { order: name, scoped_name: scoped, tracking_id: tracking.id, trigger, error },
      });
    }
  }

  private pool(order: OrderDef): string | undefined {
    return qualifiedPool(order, this.deps.agentExists ?? (() => false));
  }

  private contextVars(order: OrderDef, firing: Firing): Record<string, string> {
    return contextVars(order, firing.webhook, (name) => this.declares(order, name));
  }

  /** The vars a firing was given: a webhook's (its payload's fields) only those the formula declares. */
  private givenVars(order: OrderDef, firing: Firing): Record<string, string> {
    const vars = firing.vars ?? {};
    if (!firing.webhook) return vars;
    return Object.fromEntries(Object.entries(vars).filter(([name]) => this.declares(order, name)));
  }

  private declares(order: OrderDef, name: string): boolean {
    return (this.deps.formulas.get(order.formula!)?.def?.vars ?? []).some((v) => v.name === name);
  }

  /** Firings still running (for a clean stop and for tests). */
  get running(): number {
    return this.inFlight.size;
  }

  private async exec(firing: Firing, tracking: Bead): Promise<void> {
    const { order } = firing;
    const args = Object.fromEntries(
      Object.entries(firing.vars ?? {}).map(([k, v]) => [`CTL_ORDER_ARG_${k.toUpperCase()}`, v]),
    );
    const result = await this.deps.commands.run(order.exec!, {
      cwd: order.rigDir ?? this.deps.cityRoot,
      env: {
        ...this.deps.env,
        ...order.env,
        ...args,
        ORDER_DIR: `${this.deps.cityRoot}/orders`,
        ...orderEnv(order),
        ...(firing.webhook ? webhookEnv(firing.webhook) : {}),
        CTL_ORDER_TRACKING_ID: tracking.id,
        CTL_ORDER_TRIGGER: firing.trigger,
        ...(firing.eventSeq !== undefined ? { CTL_EVENT_SEQ: String(firing.eventSeq) } : {}),
      },
      timeoutMs: order.timeoutMs,
    });
    const ok = result.exitCode === 0;
    // Killed because the controller is stopping: ctl's doing, not the command's.
    const interrupted = !ok && this.deps.commands.stopped;
    const error = interrupted
      ? INTERRUPTED_ERROR
      : result.timedOut
        ? `timed out after ${order.timeoutMs} ms (killed)`
        : (result.error ?? (ok ? undefined : `exited with ${result.signal ?? `code ${result.exitCode}`}`));
    await this.deps.beads.update(tracking.id, {
      status: 'closed',
      addLabels: [ok ? 'exec' : 'exec-failed'],
      metadata: {
        [ORDER_STATUS]: ok ? 'success' : 'failed',
        [DURATION_MS]: String(result.durationMs),
        ...(result.exitCode !== null ? { [EXIT_CODE]: String(result.exitCode) } : {}),
        ...(result.signal ? { [SIGNAL]: result.signal } : result.timedOut ? { [SIGNAL]: 'SIGKILL' } : {}),
        ...(error ? { [ERROR]: error } : {}),
        ...(interrupted ? { [INTERRUPTED]: 'true' } : {}),
        ...(order.captureOutput && result.output ? { [OUTPUT]: result.output } : {}),
      },
    });
    await this.deps.log.append({
      type: ok ? 'order.completed' : 'order.failed',
      actor: 'ctl',
      subject: order.scopedName,
      message: ok ? `${order.scopedName} exited 0 in ${result.durationMs} ms` : `${order.scopedName}: ${error}`,
      payload: {
        order: order.name,
        scoped_name: order.scopedName,
        ...(order.rig ? { rig: order.rig } : {}),
        tracking_id: tracking.id,
        trigger: firing.trigger,
        duration_ms: result.durationMs,
        ...(result.exitCode !== null ? { exit_code: result.exitCode } : {}),
        ...(result.signal ? { signal: result.signal } : result.timedOut ? { signal: 'SIGKILL' } : {}),
        ...(error ? { error } : {}),
      },
    });
  }

  private async formula(firing: Firing, tracking: Bead): Promise<void> {
    const { order } = firing;
    const started = Date.now();
    try {
      const { root } = await launchFormula(
        this.deps.formulas,
        this.deps.molecules,
        order.formula!,
        { ...order.vars, ...this.contextVars(order, firing), ...this.givenVars(order, firing) },
        {
          source: 'order',
          order: order.scopedName,
          routedTo: this.pool(order),
          rootLabels: [runLabel(order.scopedName)],
        },
        await this.deps.runVars.of({ target: order.pool }),
      );
      await this.deps.beads.update(tracking.id, {
        status: 'closed',
        metadata: { [ORDER_STATUS]: 'dispatched', [RUN_ID]: root.id, [DURATION_MS]: String(Date.now() - started) },
      });
      await this.deps.log.append({
        type: 'order.completed',
        actor: 'ctl',
        subject: order.scopedName,
        message: `${order.scopedName} started run ${root.id}${order.pool ? ` for ${order.pool}` : ''}`,
        payload: {
          order: order.name,
          scoped_name: order.scopedName,
          ...(order.rig ? { rig: order.rig } : {}),
          tracking_id: tracking.id,
          trigger: firing.trigger,
          run_id: root.id,
        },
      });
    } catch (err) {
      const error = err instanceof Problem ? err.detail : (err as Error).message;
      await this.deps.beads.update(tracking.id, {
        status: 'closed',
        addLabels: ['exec-failed'],
        metadata: { [ORDER_STATUS]: 'failed', [ERROR]: error, [DURATION_MS]: String(Date.now() - started) },
      });
      await this.deps.log.append({
        type: 'order.failed',
        actor: 'ctl',
        subject: order.scopedName,
        message: `${order.scopedName}: ${error}`,
        payload: {
          order: order.name,
          scoped_name: order.scopedName,
          ...(order.rig ? { rig: order.rig } : {}),
          tracking_id: tracking.id,
          trigger: firing.trigger,
          error,
        },
      });
    }
  }
}
