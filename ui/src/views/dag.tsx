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

/** A box drawn around nodes: a group of a run's steps (a step with children, a loop). */
export interface DagGroup {
  id: string;
  title: string;
  status: string;
  /** The nodes and groups inside it. */
  members: string[];
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
export function Dag(props: {
  nodes: DagNode[];
  edges: DagEdge[];
  groups?: DagGroup[];
  label: string;
  caption: string;
}) {
  const groups = props.groups ?? [];
  // A compound graph lays a group's members out together, inside a box dagre sizes to fit them.
  const g = new graphlib.Graph({ compound: groups.length > 0 });
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 46, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const byId = new Map(props.nodes.map((n) => [n.id, n]));
  const groupById = new Map(groups.map((gr) => [gr.id, gr]));
  for (const n of props.nodes) g.setNode(n.id, { width: NODE_W, height: NODE_H });
  for (const gr of groups) g.setNode(gr.id, { label: gr.title, paddingTop: 22 });
  for (const gr of groups) for (const m of gr.members) if (byId.has(m) || groupById.has(m)) g.setParent(m, gr.id);
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
        {groups.map((gr) => {
          const box = g.node(gr.id) as Point & { width: number; height: number };
          return (
            <g
              key={gr.id}
              class={`group status-${gr.status}`}
              transform={`translate(${box.x - box.width / 2},${box.y - box.height / 2})`}
            >
              <rect width={box.width} height={box.height} rx="8" />
              <text x="8" y="15" class="group-title">
                {gr.title.slice(0, 40)} · {gr.status}
              </text>
            </g>
          );
        })}
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
        {g
          .nodes()
          .filter((id) => byId.has(id))
          .map((id) => {
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
