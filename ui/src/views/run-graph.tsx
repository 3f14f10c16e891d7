import { graphlib, layout } from '@dagrejs/dagre';
import type { Schemas } from '../api.js';

type Snapshot = Schemas['WorkflowSnapshotResponse'];

interface Point {
  x: number;
  y: number;
}

const NODE_W = 170;
const NODE_H = 44;

/**
 * A run as a graph of its steps, laid out by dagre (a well-kept layered-graph layout: edges point one way,
 * crossings kept few), drawn as SVG. Colour shows status, and so does the text in each node.
 */
export function RunGraph({ snapshot, rootId }: { snapshot: Snapshot; rootId: string }) {
  const g = new graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 46, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set<string>();
  for (const b of snapshot.beads) {
    if (b.id === rootId && snapshot.beads.length > 1) continue;
    g.setNode(b.id, { width: NODE_W, height: NODE_H });
    known.add(b.id);
  }
  // An edge "from depends on to": drawn from the step that must happen first.
  for (const d of snapshot.deps) {
    if (known.has(d.from) && known.has(d.to) && d.kind !== 'parent-child') g.setEdge(d.to, d.from);
  }
  layout(g);
  const size = g.graph() as { width?: number; height?: number };
  const width = Math.max(size.width ?? 0, NODE_W);
  const height = Math.max(size.height ?? 0, NODE_H);
  const byId = new Map(snapshot.beads.map((b) => [b.id, b]));
  return (
    <figure class="graph">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label={`The run's ${known.size} steps and their order`}
      >
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
            <path d="M0,0 L10,5 L0,10 z" class="edge-head" />
          </marker>
        </defs>
        {g.edges().map((e) => {
          const points = (g.edge(e) as { points?: Point[] }).points ?? [];
          return (
            <polyline
              key={`${e.v}-${e.w}`}
              class="edge"
              points={points.map((p) => `${p.x},${p.y}`).join(' ')}
              marker-end="url(#arrow)"
            />
          );
        })}
        {g.nodes().map((id) => {
          const n = g.node(id) as Point;
          const b = byId.get(id)!;
          return (
            <g
              key={id}
              class={`node status-${b.status}`}
              transform={`translate(${n.x - NODE_W / 2},${n.y - NODE_H / 2})`}
            >
              <rect width={NODE_W} height={NODE_H} rx="6" />
              <text x="8" y="18" class="node-title">
                {(b.step_ref ?? b.title ?? id).slice(0, 22)}
              </text>
              <text x="8" y="35" class="node-status">
                {b.kind ? `${b.kind} · ` : ''}
                {b.status}
                {b.attempt && b.attempt > 1 ? ` · try ${b.attempt}` : ''}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption class="muted small">
        Each step after the ones it waits for; the table below lists them all.
      </figcaption>
    </figure>
  );
}
