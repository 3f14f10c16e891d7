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
    },
  ) {}

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
   * A runtime loop whose iteration is done and goes on (its `until` did not hold, its `max` not reached): the next
   * iteration's beads are made — after the last one's, with the group waiting for them too — and the loop's
   * `ctl.loop_iteration` counts it.
   */
  async nextIteration(root: Bead, group: Bead, iteration: Map<string, Bead>, state: LoopState): Promise<void> {
    const n = state.iteration;
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
   * knowing this run as its parent, and the bond node closed recording them. The reason when pouring failed (a
   * missing formula, a var it refuses): the bond node is closed failed and the run fails.
   */
  async pour(root: Bead, node: Bead, byId: Map<string, Bead>): Promise<string | undefined> {
    const meta = node.metadata ?? {};
    const step = byId.get(meta[K.BOND_OF] ?? '');
    if (!step || !this.deps.bond) return undefined;
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
      await closeNode(this.deps.beads, node, 'fail', reason);
      return reason;
    }
    await this.deps.beads.update(node.id, {
      status: 'closed',
      metadata: {
        [K.OUTCOME]: 'pass',
        [K.OUTCOME_REASON]: `poured ${poured.length} run(s) of ${formula}`,
        [K.BONDED]: JSON.stringify(poured),
      },
    });
    return undefined;
  }
}
