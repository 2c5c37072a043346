import dagre from '@dagrejs/dagre';
import type { GraphStep, GraphTransition } from './definition';

// dagre's top-to-bottom layout of a step graph, shared by the read-only graph and the
// editor's canvas. It depends only on the steps' keys and the transitions, so neither a
// live count nor a renamed step moves anything.

export const NODE_WIDTH = 208;
export const NODE_HEIGHT = 78;

export type Point = { x: number; y: number };

export interface Layout {
  positions: Map<string, Point>;
  edges: { from: string; to: string; branch: string | null; points: Point[]; labelAt: Point | null }[];
  width: number;
  height: number;
}

/** The dagre edge name of a branch (graphlib drops an empty name, so the plain next needs one). */
const edgeName = (branch: string | null) => branch ?? 'next';

/** What a layout depends on: the step keys and the transitions, nothing else. */
export function layoutShape(steps: readonly { key: string }[], transitions: readonly GraphTransition[]): string {
  return JSON.stringify([steps.map((s) => s.key), transitions.map((t) => [t.from, t.to, t.branch])]);
}

export function layoutOf(steps: readonly GraphStep[], transitions: readonly GraphTransition[], options: { labelAll?: boolean } = {}): Layout {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: options.labelAll ? 48 : 36, edgesep: 20, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const s of steps) g.setNode(s.key, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const t of transitions) {
    // A labelled edge gets room for its label, placed by dagre beside the edge (the
    // editor labels every edge: its remove button sits there).
    const labelled = t.branch || options.labelAll;
    g.setEdge(t.from, t.to, labelled ? { width: 64, height: 20, labelpos: 'c' } : { width: 0, height: 0 }, edgeName(t.branch));
  }
  dagre.layout(g);
  const positions = new Map<string, Point>();
  for (const s of steps) {
    const n = g.node(s.key);
    positions.set(s.key, { x: n.x - NODE_WIDTH / 2, y: n.y - NODE_HEIGHT / 2 });
  }
  const edges = transitions.map((t) => {
    const e = g.edge({ v: t.from, w: t.to, name: edgeName(t.branch) });
    const labelled = t.branch || options.labelAll;
    return {
      from: t.from,
      to: t.to,
      branch: t.branch,
      points: e.points ?? [],
      labelAt: labelled && e.x !== undefined && e.y !== undefined ? { x: e.x, y: e.y } : null,
    };
  });
  const graph = g.graph();
  return { positions, edges, width: graph.width ?? 0, height: graph.height ?? 0 };
}

/** A smooth path through dagre's bend points. */
export function pathThrough(points: Point[]): string {
  if (points.length === 0) return '';
  let d = `M ${points[0]!.x} ${points[0]!.y}`;
  for (let i = 1; i < points.length - 1; i++) {
    const p = points[i]!;
    const next = points[i + 1]!;
    d += ` Q ${p.x} ${p.y} ${(p.x + next.x) / 2} ${(p.y + next.y) / 2}`;
  }
  const last = points[points.length - 1]!;
  return `${d} L ${last.x} ${last.y}`;
}
