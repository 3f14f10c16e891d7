import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { CompiledFormula, GraphNode } from '../formulas/formula-compile.js';
import * as K from './molecule-keys.js';
import {
  bodySinks,
  bondItems,
  itemVars,
  iterationNodes,
  nodeMetadata,
  nodeType,
  type LoopState,
} from './node-beads.js';
import { closeNode } from './run-outcome.js';

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
  /** A run a bond node pours: which one (`ctl.poured_by`); a run by that name made in part is finished. */
  pouredBy?: string;
  /** A sequential pour's run before this one: this run's first beads wait for that run's root to close. */
  after?: string;
}

/** Beads of a run read at once (a formula compiles to at most a few thousand). */
const MEMBERS_MAX = 100_000;

/**
 * Whether a poured run was made whole: the root's `blocks` edge to finalize is the last write of a run's making
 * (nothing else ever blocks a root).
 */
function madeWhole(root: Bead): boolean {
  return (root.dependencies ?? []).some((d) => d.type === 'blocks');
}

/**
 * What makes a run's beads: a new run from its compiled formula, a runtime loop's next iteration, and the runs a
 * bond node pours. The engine decides when; this makes them.
 */
export class RunBuilder {
  constructor(
    private readonly deps: {
      beads: BeadsService;
      log: EventLog;
      /** Routed work appeared: the tick hands it out. */
      poke: () => void;
      /** Pours a run of a formula for a step's `on_complete`: its root's id. */
      bond?: (formula: string, vars: Record<string, string>, options: InstantiateOptions) => Promise<string>;
      /** Called after each bead a pour makes (a test's crash point: `pour-crash-hook.ts`). */
      pourHook?: () => Promise<void>;
    },
  ) {}

  /**
   * Creates the run's beads; the caller has compiled the formula (and so checked every var). A poured run
   * (`pouredBy`) that a dead controller left made in part is finished instead: the beads it has (by step) are
   * kept, the others made.
   */
  async instantiate(
    compiled: CompiledFormula,
    options: InstantiateOptions,
  ): Promise<{ root: Bead; members: Map<string, Bead> }> {
    const beads = this.deps.beads;
    const found = options.pouredBy === undefined ? undefined : this.pouredRun(options.pouredBy);
    const members = new Map<string, Bead>();
    for (const bead of found ? this.members(found.id) : []) members.set(bead.metadata?.[K.STEP_REF] ?? '', bead);
    let root = found;
    if (!root) {
      root = (
        await beads.create({
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
            ...(options.pouredBy ? { [K.POURED_BY]: options.pouredBy } : {}),
          },
        })
      ).bead;
      await this.poured(options);
    } else if (madeWhole(root)) {
      return { root, members };
    }
    for (const node of compiled.nodes) {
      if (members.has(node.id)) continue;
      const needs = node.needs.map((n) => members.get(n)!.id);
      // A sequential pour: the run's first beads wait for the run before it to end.
      if (options.after && !node.needs.length) needs.push(options.after);
      const link = node.checks ?? node.waitsOn?.bond;
      const checks = link ? members.get(link)!.id : undefined;
      members.set(node.id, await this.createNode(node, root.id, options.routedTo, needs, checks));
      await this.poured(options);
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
    return { root: blocked, members };
  }

  /** A bead of a pour was made. */
  private async poured(options: InstantiateOptions): Promise<void> {
    if (options.pouredBy !== undefined) await this.deps.pourHook?.();
  }

  /** The run a bond node poured for one item, if it made it (whole or in part). */
  private pouredRun(pouredBy: string): Bead | undefined {
    return this.deps.beads.list({
      type: 'molecule',
      includeClosed: true,
      metadata: { [K.POURED_BY]: pouredBy },
      limit: 1,
    }).items[0];
  }

  private members(rootId: string): Bead[] {
    return this.deps.beads.list({
      includeClosed: true,
      metadata: { [K.ROOT_BEAD_ID]: rootId },
      limit: MEMBERS_MAX,
    }).items;
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
   * A runtime loop whose iteration is done and goes on (its `until` did not hold, its `max` not reached): the next
   * iteration's beads are made — after the last one's, with the group waiting for them too — and the loop's
   * `ctl.loop_iteration` counts it. `members` are the run's beads.
   */
  async nextIteration(root: Bead, group: Bead, members: Bead[], state: LoopState): Promise<void> {
    const n = state.iteration;
    const beadsOf = (k: number) => {
      const prefix = state.prefix(k);
      return new Map(
        members
          .filter((b) => b.metadata?.[K.STEP_REF]?.startsWith(prefix))
          .map((b) => [b.metadata![K.STEP_REF]!.slice(prefix.length), b]),
      );
    };
    const after = bodySinks(state.body).flatMap((id) => beadsOf(n).get(id)?.id ?? []);
    // Beads of the next iteration a dead controller made before counting it are kept, not made twice.
    const made = new Map([...beadsOf(n + 1)].map(([id, bead]) => [state.prefix(n + 1) + id, bead]));
    for (const { node, inner } of iterationNodes(state, n + 1)) {
      if (made.has(node.id)) continue;
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
   * knowing this run as its parent, and the bond node closed recording them; sequential, each run's first beads
   * wait for the run before it to end. A pour a dead controller cut short goes on: the runs it made whole are
   * kept, the one it was making finished, the rest made. The reason when pouring failed (a missing formula, a
   * var it refuses): the bond node is closed failed and the run fails.
   */
  async pour(root: Bead, node: Bead, byId: Map<string, Bead>): Promise<string | undefined> {
    const meta = node.metadata ?? {};
    const step = byId.get(meta[K.BOND_OF] ?? '');
    if (!step || !this.deps.bond) return undefined;
    const runVars = JSON.parse(root.metadata?.[K.VARS] ?? '{}') as Record<string, string>;
    const items = bondItems(meta[K.BOND_FOR_EACH] ?? '', step, runVars);
    const vars = JSON.parse(meta[K.BOND_VARS] ?? '{}') as Record<string, string>;
    const formula = meta[K.BOND_FORMULA] ?? '';
    const sequential = meta[K.BOND_MODE] === 'sequential';
    const poured: string[] = [];
    try {
      for (const [i, item] of items.entries()) {
        const pouredBy = `${node.id}#${i}`;
        const made = this.pouredRun(pouredBy);
        if (made && madeWhole(made)) {
          poured.push(made.id);
          continue;
        }
        const options: InstantiateOptions = {
          source: 'bond',
          routedTo: root.metadata?.[K.TARGET],
          parentRoot: root.id,
          pouredBy,
          ...(sequential && poured.length ? { after: poured.at(-1) } : {}),
        };
        poured.push(await this.deps.bond(formula, itemVars(vars, item, i), options));
      }
    } catch (err) {
      const reason = `could not pour ${formula} (item ${poured.length + 1} of ${items.length}): ${(err as Error).message}`;
      await closeNode(this.deps.beads, node, 'fail', reason);
      return reason;
    }
    await this.deps.beads.update(node.id, {
      status: 'closed',
      metadata: {
        [K.OUTCOME]: 'pass',
        [K.OUTCOME_REASON]: `poured ${poured.length} run(s) of ${formula}${sequential ? ', one after the other' : ''}`,
        [K.BONDED]: JSON.stringify(poured),
      },
    });
    return undefined;
  }
}
