import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { CommandRunner } from '../commands.js';
import type { CompiledFormula } from '../formulas/formula-compile.js';
import * as K from './molecule-keys.js';
import { NodeCommands } from './node-commands.js';
import { childrenEnded, loopState, untilHolds, type LoopState } from './node-beads.js';
import { RunBuilder, type InstantiateOptions } from './run-builder.js';
import { clip, closeNode } from './run-outcome.js';

export type { InstantiateOptions } from './run-builder.js';

/** Beads of a run read at once (a formula compiles to at most a few thousand). */
const MEMBERS_MAX = 100_000;

/**
 * Molecules: a compiled formula made into beads — a root (`molecule`), a bead per node with `blocks` edges from
 * its needs, and the root blocked by the finalize node — and carried on as their beads change. Agents close work
 * steps; the controller closes the rest: a group once its children are closed, a check once its command passes
 * (reopening the step for another attempt when it fails and attempts are left), a gate when its time comes or
 * its condition holds, and finalize when everything before it is closed — which closes the root with its outcome
 * (`pass`, or `fail` when a step failed hard) and records `molecule.resolved`. All state is in the beads'
 * metadata, so a restarted controller carries on where the last one stopped (`resume`).
 */
export class MoleculeEngine {
  /** Runs being advanced, and those asked again meanwhile. */
  private readonly busy = new Set<string>();
  private readonly again = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Runs being canceled or deleted: nothing advances them meanwhile. */
  private readonly ending = new Set<string>();
  private stopped = false;
  private readonly builder: RunBuilder;
  private readonly commands: NodeCommands;

  constructor(
    private readonly deps: {
      beads: BeadsService;
      log: EventLog;
      commands: CommandRunner;
      cityRoot: string;
      env: NodeJS.ProcessEnv;
      logger?: Logger;
      now: () => number;
      /** Routed work appeared: the tick hands it out. */
      poke: () => void;
      /** Pours a run of a formula for a step's `on_complete`: its root's id. */
      bond?: (formula: string, vars: Record<string, string>, options: InstantiateOptions) => Promise<string>;
      /** Called after each bead a pour makes (a test's crash point: `pour-crash-hook.ts`). */
      pourHook?: () => Promise<void>;
    },
  ) {
    this.builder = new RunBuilder(deps);
    this.commands = new NodeCommands({ ...deps, schedule: (rootId) => this.schedule(rootId) });
    deps.beads.onClosed((bead) => {
      const root = bead.metadata?.[K.ROOT_BEAD_ID];
      if (root) this.schedule(root);
      // A run a step poured ended: the run that poured it may be waiting for it (waits_for).
      const parent = bead.metadata?.[K.PARENT_ROOT];
      if (parent) this.schedule(parent);
      // A run ended: the next run of a sequential pour waits for it.
      if (bead.metadata?.[K.KIND] === 'workflow') this.scheduleWaiting(bead.id);
      return Promise.resolve();
    });
  }

  /** Creates the run's beads; the caller has compiled the formula (and so checked every var). */
  async instantiate(
    compiled: CompiledFormula,
    options: InstantiateOptions,
  ): Promise<{ root: Bead; members: Map<string, Bead> }> {
    const made = await this.builder.instantiate(compiled, options);
    this.schedule(made.root.id);
    this.deps.poke();
    return made;
  }

  /**
   * A runtime loop whose iteration is done: it ends when its `until` holds or its `max` iterations ran (the
   * group closes, saying which), else the next iteration's beads are made.
   */
  private async iterate(root: Bead, group: Bead, members: Bead[], state: LoopState): Promise<void> {
    const n = state.iteration;
    const prefix = state.prefix(n);
    const iteration = new Map(
      members
        .filter((b) => b.metadata?.[K.STEP_REF]?.startsWith(prefix))
        .map((b) => [b.metadata![K.STEP_REF]!.slice(prefix.length), b]),
    );
    if (untilHolds(state.until, state.body, iteration)) {
      await this.close(group, 'pass', `until held after ${n} iteration(s): ${state.until}`);
      return;
    }
    if (n >= state.max) {
      await this.close(group, 'pass', `${state.max} iteration(s) ran (its max); until never held: ${state.until}`);
      return;
    }
    await this.builder.nextIteration(root, group, members, state);
  }

  /** Carries on every open run (at start: a restarted controller picks up checks and gates). */
  resume(): void {
    for (const root of this.deps.beads.list({
      type: 'molecule',
      metadata: { [K.KIND]: 'workflow' },
      limit: MEMBERS_MAX,
    }).items) {
      this.schedule(root.id);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** The run's beads but its root (closed ones too), oldest first. */
  members(rootId: string): Bead[] {
    return this.deps.beads
      .list({ includeClosed: true, metadata: { [K.ROOT_BEAD_ID]: rootId }, limit: MEMBERS_MAX })
      .items.reverse();
  }

  /**
   * Closes every open bead of the run (outcome `canceled`, or `skipped` for a workflow delete) and the root with
   * it; `molecule.resolved` says so. Answers how many beads it closed.
   */
  async cancel(rootId: string, outcome: 'canceled' | 'skipped' = 'canceled', reason = 'canceled'): Promise<number> {
    const root = this.deps.beads.get(rootId);
    if (root.status === 'closed') return 0;
    this.ending.add(rootId);
    try {
      let closed = 0;
      for (const bead of this.members(rootId)) {
        if (bead.status === 'closed') continue;
        await this.close(bead, outcome, reason);
        closed++;
      }
      await this.resolve(this.deps.beads.get(rootId), outcome, reason);
      return closed + 1;
    } finally {
      this.ending.delete(rootId);
    }
  }

  /** Deletes the run's beads, members first. */
  async remove(rootId: string): Promise<number> {
    this.deps.beads.get(rootId);
    this.ending.add(rootId);
    // Runs waiting for this one (a sequential pour's next) no longer do once it is gone.
    const waiting = this.deps.beads.dependents(rootId).flatMap((b) => b.metadata?.[K.ROOT_BEAD_ID] ?? []);
    try {
      let deleted = 0;
      for (const bead of this.members(rootId).reverse()) {
        await this.deps.beads.delete(bead.id);
        deleted++;
      }
      await this.deps.beads.delete(rootId);
      this.clearTimer(rootId);
      for (const other of waiting) if (other !== rootId) this.schedule(other);
      return deleted + 1;
    } finally {
      this.ending.delete(rootId);
    }
  }

  /** Looks again at the runs with beads waiting for this run's root (the next of a sequential pour). */
  private scheduleWaiting(rootId: string): void {
    for (const bead of this.deps.beads.dependents(rootId)) {
      const waiting = bead.metadata?.[K.ROOT_BEAD_ID];
      if (waiting && waiting !== rootId) this.schedule(waiting);
    }
  }

  /** Asks for the run to be advanced; runs one at a time per run, coalescing asks that come meanwhile. */
  schedule(rootId: string): void {
    if (this.stopped) return;
    if (this.busy.has(rootId)) {
      this.again.add(rootId);
      return;
    }
    this.busy.add(rootId);
    void (async () => {
      try {
        do {
          this.again.delete(rootId);
          await this.advance(rootId);
        } while (this.again.has(rootId) && !this.stopped);
      } catch (err) {
        this.deps.logger?.error({ err, run: rootId }, 'could not advance a run');
      } finally {
        this.busy.delete(rootId);
      }
    })();
  }

  /** One pass over a run: closes what the controller closes, until nothing more changes. */
  private async advance(rootId: string): Promise<void> {
    const root = this.deps.beads.find(rootId);
    if (!root || root.status === 'closed' || root.metadata?.[K.KIND] !== 'workflow' || this.ending.has(rootId)) return;
    let changed = true;
    let nextWake: number | undefined;
    while (changed && !this.stopped) {
      changed = false;
      nextWake = undefined;
      const members = this.members(rootId);
      const byId = new Map(members.map((b) => [b.id, b]));
      const checked = new Set(members.filter((b) => b.metadata?.[K.CHECKS]).map((b) => b.metadata![K.CHECKS]));
      // A step that failed with nothing to retry or check it fails the run.
      const failed = members.find(
        (b) =>
          b.status === 'closed' &&
          b.metadata?.[K.KIND] === 'step' &&
          b.metadata?.[K.OUTCOME] === 'fail' &&
          !checked.has(b.id),
      );
      if (failed) {
        await this.fail(rootId, failed, `step ${failed.metadata?.[K.STEP_REF]} failed`);
        return;
      }
      for (const bead of members) {
        if (bead.status === 'closed') continue;
        const kind = bead.metadata?.[K.KIND];
        if (kind === 'step') continue;
        // A bead may wait on one outside the run: the run before it in a sequential pour.
        const open = (bead.dependencies ?? []).some(
          (d) =>
            d.type === 'blocks' &&
            (byId.get(d.depends_on_id) ?? this.deps.beads.find(d.depends_on_id))?.status !== 'closed',
        );
        if (open) continue;
        if (kind === 'group') {
          const loop = loopState(bead);
          if (loop) await this.iterate(root, bead, members, loop);
          else await this.close(bead, 'pass');
          changed = true;
        } else if (kind === 'finalize') {
          await this.close(bead, 'pass');
          const hard = members.find(
            (b) =>
              b.metadata?.[K.OUTCOME] === 'fail' &&
              b.metadata?.[K.KIND] === 'check' &&
              b.metadata?.[K.ON_EXHAUSTED] !== 'soft_fail',
          );
          await this.resolve(
            this.deps.beads.get(rootId),
            hard ? 'fail' : 'pass',
            hard ? hard.metadata?.[K.OUTCOME_REASON] : undefined,
          );
          return;
        } else if (kind === 'check') {
          const outcome = await this.commands.check(root, bead, byId);
          if (outcome === 'hard-fail') {
            await this.fail(rootId, bead, `step ${bead.metadata?.[K.STEP_REF]} failed its check`);
            return;
          }
          if (outcome === 'changed') changed = true;
        } else if (kind === 'bond') {
          const failed = await this.builder.pour(root, bead, byId);
          if (failed !== undefined) {
            await this.fail(rootId, bead, failed);
            return;
          }
          changed = true;
        } else if (kind === 'children') {
          const bond = byId.get(bead.metadata?.[K.WAITS_ON] ?? '');
          if (childrenEnded(bead, bond, (id) => this.deps.beads.find(id)?.status)) {
            await this.close(bead, 'pass', 'the runs it waited for ended');
            changed = true;
          }
        } else if (kind === 'gate') {
          const at = await this.commands.gate(root, bead);
          if (at === 'opened') changed = true;
          else if (at !== undefined) nextWake = Math.min(nextWake ?? at, at);
        }
      }
    }
    if (nextWake !== undefined) this.wakeAt(rootId, nextWake);
  }

  /** The run fails: every open bead is skipped, the root closes with outcome `fail`. */
  private async fail(rootId: string, cause: Bead, reason: string): Promise<void> {
    for (const bead of this.members(rootId)) {
      if (bead.status !== 'closed') await this.close(bead, 'skipped', reason);
    }
    await this.resolve(this.deps.beads.get(rootId), 'fail', cause.metadata?.[K.OUTCOME_REASON] ?? reason);
  }

  /** Closes the root with the run's outcome, then the bead it was started for when it passed. */
  private async resolve(root: Bead, outcome: string, reason?: string): Promise<void> {
    if (root.status === 'closed') return;
    this.clearTimer(root.id);
    await this.close(root, outcome, reason);
    await this.deps.log.append({
      type: 'molecule.resolved',
      actor: 'ctl',
      subject: root.id,
      message: `${root.metadata?.[K.FORMULA] ?? 'run'}: ${outcome}${reason ? ` (${clip(reason, 200)})` : ''}`,
      payload: {
        run_id: root.id,
        formula: root.metadata?.[K.FORMULA],
        outcome,
        ...(reason ? { reason: clip(reason) } : {}),
      },
    });
    const attached = root.metadata?.[K.ATTACHED_BEAD_ID];
    if (outcome === 'pass' && attached) {
      const bead = this.deps.beads.find(attached);
      if (bead && bead.status !== 'closed') {
        await this.deps.beads.update(attached, {
          status: 'closed',
          metadata: { [K.OUTCOME]: 'pass', 'ctl.closed_by_run': root.id },
        });
      }
    }
  }

  private close(bead: Bead, outcome: string, reason?: string): Promise<void> {
    return closeNode(this.deps.beads, bead, outcome, reason);
  }

  private wakeAt(rootId: string, at: number): void {
    this.clearTimer(rootId);
    const delay = Math.max(0, Math.min(at - this.deps.now(), 2 ** 31 - 1));
    const timer = setTimeout(() => {
      this.timers.delete(rootId);
      this.schedule(rootId);
    }, delay);
    timer.unref();
    this.timers.set(rootId, timer);
  }

  private clearTimer(rootId: string): void {
    const timer = this.timers.get(rootId);
    if (timer) clearTimeout(timer);
    this.timers.delete(rootId);
  }

  /** Looks at every open run again (the clock moved, in tests). */
  recheckAll(): void {
    for (const rootId of [...this.timers.keys()]) this.schedule(rootId);
  }
}
