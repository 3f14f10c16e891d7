import type { Schemas } from '../api.js';
import { Dag, type DagEdge, type DagGroup, type DagNode } from './dag.js';

type Snapshot = Schemas['WorkflowSnapshotResponse'];

/**
 * A run as its formula was written (the snapshot's logical nodes): each step after the ones it waits for, a
 * step's check folded into it, and the steps of a group (a step with children, a loop) drawn inside its box.
 */
export function RunGraph({ snapshot }: { snapshot: Snapshot }) {
  const groups = new Map(snapshot.scope_groups.filter((g) => g.node_ids.length > 0).map((g) => [g.id, g]));
  const nodes: DagNode[] = snapshot.logical_nodes
    .filter((n) => !groups.has(n.id))
    .map((n) => ({
      id: n.id,
      title: n.title || n.id,
      status: n.status,
      detail: `${n.kind} · ${n.status}${n.attempt && n.attempt > 1 ? ` · try ${n.attempt}` : ''}`,
    }));
  // An edge to a group is drawn to the members that finish it: those no other member waits for.
  const ends = (id: string): string[] => {
    const group = groups.get(id);
    if (!group) return [id];
    const inner = new Set(group.node_ids);
    const waitedFor = new Set(snapshot.logical_edges.filter((e) => inner.has(e.from)).map((e) => e.to));
    return group.node_ids.filter((m) => !waitedFor.has(m)).flatMap(ends);
  };
  // A dep "from waits for to": the edge is drawn from the step that must happen first.
  const edges: DagEdge[] = snapshot.logical_edges.flatMap((e) =>
    ends(e.to).flatMap((before) => ends(e.from).map((after) => ({ from: before, to: after }))),
  );
  const boxes: DagGroup[] = [...groups.values()].map((g) => ({
    id: g.id,
    title: g.title || g.id,
    status: g.status,
    members: g.node_ids,
  }));
  return (
    <Dag
      nodes={nodes}
      edges={edges}
      groups={boxes}
      label={`The run's ${nodes.length} steps and their order`}
      caption="Each step after the ones it waits for, a group's steps inside its box; the table below lists every bead."
    />
  );
}
