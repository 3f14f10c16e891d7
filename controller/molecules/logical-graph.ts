import type { Bead } from '../../shared/dto/beads.js';
import type { WorkflowDepResponse } from '../../shared/dto/beads.js';
import type { LogicalNode, RunStepStatus, ScopeGroup } from '../../shared/dto/formulas.js';
import { ROUTED_TO } from '../beads/work-schema.js';
import * as K from './molecule-keys.js';

/**
 * A run's graph as its formula was written, from its member beads: the bead graph has the controller's own beads
 * in it (a step's check, the finalize bead, a group's edges to every member), which a person reading the run
 * does not think in. Here a check folds into its step, the finalize bead is left out, and a group's edges to its
 * own members become membership of a scope group rather than order.
 */
export function logicalGraph(
  members: Bead[],
  statusOf: (bead: Bead) => RunStepStatus,
): { nodes: LogicalNode[]; edges: WorkflowDepResponse[]; groups: ScopeGroup[] } {
  const byId = new Map(members.map((b) => [b.id, b]));
  // Which logical node each bead belongs to (its own step ref; a check's, the step it checks).
  const nodeOf = new Map<string, string>();
  const nodes = new Map<string, LogicalNode>();
  for (const bead of members) {
    const kind = bead.metadata?.[K.KIND] ?? 'step';
    const ref = bead.metadata?.[K.STEP_REF];
    if (kind === 'finalize' || kind === 'check' || !ref) continue;
    nodeOf.set(bead.id, ref);
    const assignee = bead.assignee || bead.metadata?.[ROUTED_TO];
    nodes.set(ref, {
      id: ref,
      title: bead.title,
      kind,
      status: statusOf(bead),
      bead_ids: [bead.id],
      ...(bead.metadata?.[K.ATTEMPT] ? { attempt: Number(bead.metadata[K.ATTEMPT]) } : {}),
      ...(assignee ? { assignee } : {}),
      ...(bead.metadata?.[K.SCOPE_REF] ? { scope_group: bead.metadata[K.SCOPE_REF] } : {}),
    });
  }
  for (const check of members.filter((b) => b.metadata?.[K.KIND] === 'check')) {
    const step = byId.get(check.metadata?.[K.CHECKS] ?? '');
    const ref = step && nodeOf.get(step.id);
    if (!ref) continue;
    nodeOf.set(check.id, ref);
    const node = nodes.get(ref)!;
    node.bead_ids.push(check.id);
    // The step's work is done, but the step is not until its check says so.
    if (node.status === 'completed') node.status = checkedStatus(statusOf(check));
  }

  const groups = new Map<string, ScopeGroup>();
  for (const node of nodes.values()) {
    if (node.kind !== 'group') continue;
    const parent = node.scope_group;
    groups.set(node.id, {
      id: node.id,
      title: node.title,
      status: node.status,
      node_ids: [],
      ...(parent ? { parent } : {}),
    });
  }
  for (const node of nodes.values()) {
    if (node.scope_group) groups.get(node.scope_group)?.node_ids.push(node.id);
  }

  const seen = new Set<string>();
  const edges: WorkflowDepResponse[] = [];
  for (const bead of members) {
    const from = nodeOf.get(bead.id);
    if (!from) continue;
    for (const dep of bead.dependencies ?? []) {
      const to = nodeOf.get(dep.depends_on_id);
      if (!to || to === from || inside(to, from, nodes)) continue;
      const key = `${from}\0${to}`;
      if (seen.has(key)) continue;
      seen.add(key);
      edges.push({ from, to, kind: dep.type });
    }
  }
  return { nodes: [...nodes.values()], edges, groups: [...groups.values()] };
}

/** Whether node `ref` was written inside group `group`, at any depth. */
function inside(ref: string, group: string, nodes: Map<string, LogicalNode>): boolean {
  for (let at = nodes.get(ref)?.scope_group; at; at = nodes.get(at)?.scope_group) if (at === group) return true;
  return false;
}

/** A done step's status from its check's: still running while the check is, failed when it failed. */
function checkedStatus(check: RunStepStatus): RunStepStatus {
  if (check === 'completed' || check === 'failed' || check === 'skipped' || check === 'canceled') return check;
  return 'active';
}
