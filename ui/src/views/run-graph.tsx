import type { Schemas } from '../api.js';
import { Dag, type DagEdge, type DagNode } from './dag.js';

type Snapshot = Schemas['WorkflowSnapshotResponse'];

/** A run as a graph of its steps (the root left out when it has steps), each after the ones it waits for. */
export function RunGraph({ snapshot, rootId }: { snapshot: Snapshot; rootId: string }) {
  const nodes: DagNode[] = snapshot.beads
    .filter((b) => !(b.id === rootId && snapshot.beads.length > 1))
    .map((b) => ({
      id: b.id,
      title: b.step_ref ?? b.title ?? b.id,
      status: b.status,
      detail: `${b.kind ? `${b.kind} · ` : ''}${b.status}${b.attempt && b.attempt > 1 ? ` · try ${b.attempt}` : ''}`,
    }));
  // A dep "from depends on to": the edge is drawn from the step that must happen first.
  const edges: DagEdge[] = snapshot.deps
    .filter((d) => d.kind !== 'parent-child')
    .map((d) => ({ from: d.to, to: d.from }));
  return (
    <Dag
      nodes={nodes}
      edges={edges}
      label={`The run's ${nodes.length} steps and their order`}
      caption="Each step after the ones it waits for; the table below lists them all."
    />
  );
}
