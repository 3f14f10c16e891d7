import { graphlib, layout } from '@dagrejs/dagre';

export interface DagNode {
  id: string;
  /** The first line of the box. */
  title: string;
  /** Its status: the box's colour (`status-<status>`), and words on its second line. */
  status: string;
  /** The second line (the status when absent). */
  detail?: string;
  /** The node the graph is about: drawn with a heavier border. */
  current?: boolean;
}

export interface DagEdge {
  /** What must come first. */
  from: string;
  to: string;
  /** A parent-child edge is drawn dashed. */
  dashed?: boolean;
}

interface Point {
  x: number;
  y: number;
}

const NODE_W = 170;
const NODE_H = 44;

/**
 * Nodes and their order, laid out by dagre (a well-kept layered-graph layout: edges point one way, crossings kept
 * few) and drawn as SVG. Colour shows status, and so does the text in each node. Used for a run's steps and for a
 * bead's dependencies.
 */
export function Dag(props: { nodes: DagNode[]; edges: DagEdge[]; label: string; caption: string }) {
  const g = new graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 46, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const byId = new Map(props.nodes.map((n) => [n.id, n]));
  for (const n of props.nodes) g.setNode(n.id, { width: NODE_W, height: NODE_H });
  for (const e of props.edges) if (byId.has(e.from) && byId.has(e.to)) g.setEdge(e.from, e.to, { dashed: e.dashed });
  layout(g);
  const size = g.graph() as { width?: number; height?: number };
  const width = Math.max(size.width ?? 0, NODE_W);
  const height = Math.max(size.height ?? 0, NODE_H);
  return (
    <figure class="graph">
      <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={props.label}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
            <path d="M0,0 L10,5 L0,10 z" class="edge-head" />
          </marker>
        </defs>
        {g.edges().map((e) => {
          const edge = g.edge(e) as { points?: Point[]; dashed?: boolean };
          return (
            <polyline
              key={`${e.v}-${e.w}`}
              class={edge.dashed ? 'edge edge-dashed' : 'edge'}
              points={(edge.points ?? []).map((p) => `${p.x},${p.y}`).join(' ')}
              marker-end="url(#arrow)"
            />
          );
        })}
        {g.nodes().map((id) => {
          const at = g.node(id) as Point;
          const n = byId.get(id)!;
          return (
            <g
              key={id}
              class={`node status-${n.status}${n.current ? ' node-current' : ''}`}
              transform={`translate(${at.x - NODE_W / 2},${at.y - NODE_H / 2})`}
            >
              <rect width={NODE_W} height={NODE_H} rx="6" />
              <text x="8" y="18" class="node-title">
                {n.title.slice(0, 22)}
              </text>
              <text x="8" y="35" class="node-status">
                {n.detail ?? n.status}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption class="muted small">{props.caption}</figcaption>
    </figure>
  );
}
