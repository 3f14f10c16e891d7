import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { CommandRunner } from '../commands.js';
import type { CompiledFormula, GraphNode } from '../formulas/formula-compile.js';
import * as K from './molecule-keys.js';
import {
  bodySinks,
  bondItems,
  childrenEnded,
  itemVars,
  iterationNodes,
  loopState,
  nodeMetadata,
  nodeType,
  untilHolds,
  type LoopState,
} from './node-beads.js';

/** Beads of a run read at once (a formula compiles to at most a few thousand). */
const MEMBERS_MAX = 100_000;
/** The most of a failed check's output kept on its bead. */
const REASON_MAX = 2000;

export interface InstantiateOptions {
  /** The agent its work steps are routed to (a step's own `assignee` wins). */
  routedTo?: string;
  title?: string;
  attachedBeadId?: string;
  source: 'sling' | 'order' | 'cook' | 'bond';
  /** A run poured by a step of another run (`on_complete`): that run's root. */
  parentRoot?: string;
  order?: string;
  /** Labels the root gets (an order's `order-run:<name>`). */
  rootLabels?: string[];
}

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
  /** Commands in flight (checks and condition gates), by bead id and attempt; and their answers. */
  private readonly inFlight = new Set<string>();
  private readonly answers = new Map<string, { pass: boolean; output: string }>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Runs being canceled or deleted: nothing advances them meanwhile. */
  private readonly ending = new Set<string>();
  private stopped = false;

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
    },
  ) {
    deps.beads.onClosed((bead) => {
      const root = bead.metadata?.[K.ROOT_BEAD_ID];
      if (root) this.schedule(root);
      // A run a step poured ended: the run that poured it may be waiting for it (waits_for).
      const parent = bead.metadata?.[K.PARENT_ROOT];
      if (parent) this.schedule(parent);
      return Promise.resolve();
    });
  }

  /** Creates the run's beads; the caller has compiled the formula (and so checked every var). */
  async instantiate(
    compiled: CompiledFormula,
    options: InstantiateOptions,
  ): Promise<{ root: Bead; members: Map<string, Bead> }> {
    const beads = this.deps.beads;
    const { bead: root } = await beads.create({
      title: options.title ?? (compiled.description.split('\n')[0] || compiled.name),
      type: 'molecule',
      description: compiled.description,
      labels: options.rootLabels,
      metadata: {
        [K.KIND]: 'workflow',
        [K.FORMULA]: compiled.name,
        [K.VARS]: JSON.stringify(compiled.vars),
        [K.RUN_SOURCE]: options.source,
        ...(options.routedTo ? { [K.TARGET]: options.routedTo } : {}),
        ...(options.attachedBeadId ? { [K.ATTACHED_BEAD_ID]: options.attachedBeadId } : {}),
        ...(options.order ? { [K.ORDER]: options.order } : {}),
        ...(options.parentRoot ? { [K.PARENT_ROOT]: options.parentRoot } : {}),
      },
    });
    const members = new Map<string, Bead>();
    for (const node of compiled.nodes) {
      const needs = node.needs.map((n) => members.get(n)!.id);
      const link = node.checks ?? node.waitsOn?.bond;
      const checks = link ? members.get(link)!.id : undefined;
      members.set(node.id, await this.createNode(node, root.id, options.routedTo, needs, checks));
    }
    const finalize = members.get(compiled.nodes.at(-1)!.id)!;
    const blocked = await beads.addDependency(root.id, finalize.id, 'blocks');
    await this.deps.log.append({
      type: 'molecule.created',
      actor: 'ctl',
      subject: root.id,
      message: `${compiled.name}: ${members.size} beads`,
      payload: { run_id: root.id, formula: compiled.name },
    });
    this.schedule(root.id);
    this.deps.poke();
    return { root: blocked, members };
  }

  private async createNode(
    node: GraphNode,
    rootId: string,
    routedTo: string | undefined,
    needs: string[],
    checks: string | undefined,
  ): Promise<Bead> {
    const { bead } = await this.deps.beads.create({
      title: node.title,
      type: nodeType(node),
      description: node.description,
      priority: node.priority,
      labels: node.labels.length ? node.labels : undefined,
      metadata: nodeMetadata(node, rootId, routedTo, checks),
      dependencies: needs.map((id) => ({ dependsOn: id, kind: 'blocks' as const })),
    });
    return bead;
  }

  /**
   * A runtime loop whose iteration is done: it ends when its `until` holds or its `max` iterations ran (the
   * group closes, saying which), else the next iteration's beads are made — after the last one's, with the
   * group waiting for them too — and the loop's `ctl.loop_iteration` counts it.
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
    const after = bodySinks(state.body).flatMap((id) => iteration.get(id)?.id ?? []);
    const made = new Map<string, Bead>();
    for (const { node, inner } of iterationNodes(state, n + 1)) {
      const needs = inner.length ? inner.map((d) => made.get(d)!.id) : after;
      const checks = node.checks ? made.get(node.checks)?.id : undefined;
      made.set(node.id, await this.createNode(node, root.id, root.metadata?.[K.TARGET], needs, checks));
    }
    for (const bead of made.values()) await this.deps.beads.addDependency(group.id, bead.id, 'blocks');
    await this.deps.beads.update(group.id, { metadata: { [K.LOOP_ITERATION]: String(n + 1) } });
    this.deps.poke();
  }

  /**
   * A step with `on_complete` passed: a run of its bond formula per item, routed to the run's target, each
   * knowing this run as its parent. False when pouring failed (a missing formula, a var it refuses): the run fails.
   */
  private async pour(root: Bead, node: Bead, byId: Map<string, Bead>): Promise<boolean> {
    const meta = node.metadata ?? {};
    const step = byId.get(meta[K.BOND_OF] ?? '');
    if (!step || !this.deps.bond) return true;
    const runVars = JSON.parse(root.metadata?.[K.VARS] ?? '{}') as Record<string, string>;
    const items = bondItems(meta[K.BOND_FOR_EACH] ?? '', step, runVars);
    const vars = JSON.parse(meta[K.BOND_VARS] ?? '{}') as Record<string, string>;
    const formula = meta[K.BOND_FORMULA] ?? '';
    const poured: string[] = [];
    try {
      for (const [i, item] of items.entries()) {
        const options = { source: 'bond' as const, routedTo: root.metadata?.[K.TARGET], parentRoot: root.id };
        poured.push(await this.deps.bond(formula, itemVars(vars, item, i), options));
      }
    } catch (err) {
      const reason = `could not pour ${formula} (item ${poured.length + 1} of ${items.length}): ${(err as Error).message}`;
      await this.close(node, 'fail', reason);
      await this.fail(root.id, node, reason);
      return false;
    }
    await this.deps.beads.update(node.id, {
      status: 'closed',
      metadata: {
        [K.OUTCOME]: 'pass',
        [K.OUTCOME_REASON]: `poured ${poured.length} run(s) of ${formula}`,
        [K.BONDED]: JSON.stringify(poured),
      },
    });
    return true;
  }

  /** Carries on every open run (at start: a restarted controller picks up checks and gates). */
  resume(): void {
    for (const root of this.deps.beads.store.list({
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
    return this.deps.beads.store
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
    try {
      let deleted = 0;
      for (const bead of this.members(rootId).reverse()) {
        await this.deps.beads.delete(bead.id);
        deleted++;
      }
      await this.deps.beads.delete(rootId);
      this.clearTimer(rootId);
      return deleted + 1;
    } finally {
      this.ending.delete(rootId);
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
    const root = this.deps.beads.store.get(rootId);
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
        const open = (bead.dependencies ?? []).some(
          (d) => d.type === 'blocks' && byId.get(d.depends_on_id)?.status !== 'closed',
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
          const outcome = await this.check(root, bead, byId);
          if (outcome === 'hard-fail') {
            await this.fail(rootId, bead, `step ${bead.metadata?.[K.STEP_REF]} failed its check`);
            return;
          }
          if (outcome === 'changed') changed = true;
        } else if (kind === 'bond') {
          if (!(await this.pour(root, bead, byId))) return;
          changed = true;
        } else if (kind === 'children') {
          const bond = byId.get(bead.metadata?.[K.WAITS_ON] ?? '');
          if (childrenEnded(bead, bond, (id) => this.deps.beads.store.get(id)?.status)) {
            await this.close(bead, 'pass', 'the runs it waited for ended');
            changed = true;
          }
        } else if (kind === 'gate') {
          const at = await this.gate(root, bead);
          if (at === 'opened') changed = true;
          else if (at !== undefined) nextWake = Math.min(nextWake ?? at, at);
        }
      }
    }
    if (nextWake !== undefined) this.wakeAt(rootId, nextWake);
  }

  /**
   * A check node whose step is closed: the step's outcome and the check's command decide. Answers `changed` when
   * it closed the check or reopened the step, `hard-fail` when the run fails, or nothing while a command runs.
   */
  private async check(root: Bead, node: Bead, byId: Map<string, Bead>): Promise<'changed' | 'hard-fail' | undefined> {
    const meta = node.metadata ?? {};
    const checks = meta[K.CHECKS];
    const step = checks === undefined ? undefined : byId.get(checks);
    if (!step) return undefined;
    const attempt = Number(step.metadata?.[K.ATTEMPT] ?? '1');
    const retries = Number(meta[K.RETRY_MAX_ATTEMPTS] ?? '1');
    const checkAttempts = Number(meta[K.CHECK_MAX_ATTEMPTS] ?? '1');
    const maxAttempts = Math.max(retries, checkAttempts);
    let reason: string | undefined;
    if (step.metadata?.[K.OUTCOME] === 'fail') {
      reason = step.metadata?.[K.OUTCOME_REASON] ?? `attempt ${attempt} failed`;
    } else if (meta[K.CHECK_COMMAND]) {
      const key = `${node.id}#${attempt}`;
      const answer = this.answers.get(key);
      if (!answer) {
        this.runCheck(root, node, step, attempt, key);
        return undefined;
      }
      this.answers.delete(key);
      if (!answer.pass) reason = answer.output;
    }
    if (reason === undefined) {
      await this.close(node, 'pass');
      return 'changed';
    }
    if (attempt < maxAttempts) {
      await this.deps.beads.update(step.id, {
        status: 'open',
        assignee: '',
        metadata: {
          [K.ATTEMPT]: String(attempt + 1),
          [K.OUTCOME]: '',
          [K.OUTCOME_REASON]: clip(reason),
          'ctl.assigned_session': '',
        },
      });
      await this.deps.log.append({
        type: 'molecule.step_retried',
        actor: 'ctl',
        subject: step.id,
        message: `attempt ${attempt + 1} of ${maxAttempts}: ${clip(reason, 200)}`,
        payload: {
          run_id: root.id,
          step: step.metadata?.[K.STEP_REF],
          bead_id: step.id,
          attempt: attempt + 1,
          reason: clip(reason),
        },
      });
      this.deps.poke();
      return 'changed';
    }
    await this.close(node, 'fail', reason);
    await this.deps.log.append({
      type: 'molecule.step_failed',
      actor: 'ctl',
      subject: step.id,
      message: `${attempt} attempt(s): ${clip(reason, 200)}`,
      payload: { run_id: root.id, step: step.metadata?.[K.STEP_REF], bead_id: step.id, attempt, reason: clip(reason) },
    });
    return meta[K.ON_EXHAUSTED] === 'soft_fail' ? 'changed' : 'hard-fail';
  }

  private runCheck(root: Bead, node: Bead, step: Bead, attempt: number, key: string): void {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    const meta = node.metadata ?? {};
    void this.deps.commands
      // check() runs it only when the node has a check command.
      .run(meta[K.CHECK_COMMAND]!, {
        cwd: this.deps.cityRoot,
        env: {
          ...this.deps.env,
          CTL_RUN_ID: root.id,
          CTL_BEAD_ID: step.id,
          CTL_STEP: step.metadata?.[K.STEP_REF] ?? '',
          CTL_ATTEMPT: String(attempt),
        },
        timeoutMs: Number(meta[K.CHECK_TIMEOUT_MS] ?? 60_000),
      })
      .then((result) => {
        this.inFlight.delete(key);
        const why = result.timedOut
          ? `check timed out after ${meta[K.CHECK_TIMEOUT_MS]} ms`
          : (result.error ?? `check exited with ${result.signal ?? `code ${result.exitCode}`}`);
        this.answers.set(key, {
          pass: result.exitCode === 0,
          output: result.exitCode === 0 ? '' : `${why}\n${result.output.trim()}`.trim(),
        });
        this.schedule(root.id);
      });
  }

  /** A gate whose needs are closed: answers `opened`, the time to look again, or nothing (a person opens it). */
  private async gate(root: Bead, gate: Bead): Promise<'opened' | number | undefined> {
    const meta = gate.metadata ?? {};
    const now = this.deps.now();
    let armed = Date.parse(meta[K.GATE_ARMED_AT] ?? '');
    if (Number.isNaN(armed)) {
      armed = now;
      await this.deps.beads.update(gate.id, { metadata: { [K.GATE_ARMED_AT]: new Date(now).toISOString() } });
    }
    if (meta[K.GATE_KIND] === 'timer') {
      const opens = armed + Number(meta[K.GATE_DURATION_MS] ?? 0);
      if (now < opens) return opens;
      await this.close(gate, 'pass', 'timer elapsed');
      return 'opened';
    }
    if (meta[K.GATE_KIND] === 'condition') {
      const key = `${gate.id}#gate`;
      const answer = this.answers.get(key);
      if (answer?.pass) {
        this.answers.delete(key);
        await this.close(gate, 'pass', 'condition met');
        return 'opened';
      }
      if (!this.inFlight.has(key)) {
        const interval = Number(meta[K.GATE_INTERVAL_MS] ?? 30_000);
        const last = (answer as { at?: number } | undefined)?.at;
        if (last === undefined || now - last >= interval) this.runGateCheck(root, gate, key);
        else return last + interval;
      }
      return undefined;
    }
    return undefined;
  }

  private runGateCheck(root: Bead, gate: Bead, key: string): void {
    this.inFlight.add(key);
    const meta = gate.metadata ?? {};
    void this.deps.commands
      // A condition gate always has one: formula validation refuses it without (formula-file.ts).
      .run(meta[K.GATE_CHECK]!, {
        cwd: this.deps.cityRoot,
        env: { ...this.deps.env, CTL_RUN_ID: root.id, CTL_BEAD_ID: gate.id },
        timeoutMs: Number(meta[K.GATE_TIMEOUT_MS] ?? 10_000),
      })
      .then((result) => {
        this.inFlight.delete(key);
        this.answers.set(
          key,
          Object.assign({ pass: result.exitCode === 0, output: result.output }, { at: this.deps.now() }),
        );
        this.schedule(root.id);
      });
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
      const bead = this.deps.beads.store.get(attached);
      if (bead && bead.status !== 'closed') {
        await this.deps.beads.update(attached, {
          status: 'closed',
          metadata: { [K.OUTCOME]: 'pass', 'ctl.closed_by_run': root.id },
        });
      }
    }
  }

  private async close(bead: Bead, outcome: string, reason?: string): Promise<void> {
    await this.deps.beads.update(bead.id, {
      status: 'closed',
      metadata: { [K.OUTCOME]: outcome, ...(reason ? { [K.OUTCOME_REASON]: clip(reason) } : {}) },
    });
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

function clip(text: string, max = REASON_MAX): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}
