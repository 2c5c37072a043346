'use client';

import '@xyflow/react/dist/style.css';
import dagre from '@dagrejs/dagre';
import {
  BaseEdge,
  Controls,
  EdgeLabelRenderer,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  type Edge,
  type EdgeProps,
  type Node,
  type NodeProps,
  useReactFlow,
  useStore,
} from '@xyflow/react';
import { useEffect, useMemo } from 'react';
import type { GraphStep, GraphTransition, StepCounts } from './definition';

// A workflow drawn as its step graph: @xyflow/react renders, dagre lays it out top to
// bottom. The layout depends only on the definition (steps and transitions), never on
// the live counts, so refreshing the counts every few seconds moves nothing.

const NODE_WIDTH = 208;
const NODE_HEIGHT = 78;

const TYPE_STYLE: Record<string, { label: string; accent: string }> = {
  TRIGGER: { label: 'Trigger', accent: 'border-l-violet-500' },
  SEND_EMAIL: { label: 'Send email', accent: 'border-l-sky-500' },
  DELAY: { label: 'Delay', accent: 'border-l-amber-400' },
  WAIT_FOR_EVENT: { label: 'Wait for event', accent: 'border-l-amber-500' },
  CONDITION: { label: 'Condition', accent: 'border-l-indigo-500' },
  UPDATE_CONTACT: { label: 'Update contact', accent: 'border-l-teal-500' },
  EXIT: { label: 'Exit', accent: 'border-l-zinc-400' },
};

const BRANCH_STYLE: Record<string, string> = {
  yes: 'bg-emerald-50 text-emerald-800 ring-emerald-300',
  EVENT: 'bg-emerald-50 text-emerald-800 ring-emerald-300',
  no: 'bg-rose-50 text-rose-800 ring-rose-300',
  TIMEOUT: 'bg-amber-50 text-amber-800 ring-amber-300',
};

type StepNodeData = {
  step: GraphStep;
  counts: StepCounts | null;
  selected: boolean;
  onSelect?: (key: string) => void;
};
type StepNodeType = Node<StepNodeData, 'step'>;

type BranchEdgeData = { branch: string | null; points: { x: number; y: number }[]; labelAt: { x: number; y: number } | null };
type BranchEdgeType = Edge<BranchEdgeData, 'branch'>;

function Count({ n, label, tone }: { n: number; label: string; tone: string }) {
  return (
    <span className={`tabular-nums ${n > 0 ? tone : 'text-zinc-300'}`} data-count={label}>
      <span className="font-semibold">{n.toLocaleString()}</span> {label}
    </span>
  );
}

function StepNode({ data }: NodeProps<StepNodeType>) {
  const { step, counts, selected, onSelect } = data;
  const style = TYPE_STYLE[step.type] ?? { label: step.type, accent: 'border-l-zinc-300' };
  const body = (
    <>
      <span className="flex items-center gap-2">
        <span className="truncate text-[13px] font-semibold text-zinc-900" title={step.name}>
          {step.name}
        </span>
      </span>
      <span className="mt-0.5 flex min-w-0 items-center gap-1.5 text-[11px] text-zinc-500">
        <span className="shrink-0 font-medium tracking-wide whitespace-nowrap uppercase">{style.label}</span>
        <code className="min-w-0 truncate font-mono text-zinc-400" title={step.key}>
          {step.key}
        </code>
      </span>
      {counts && (
        <span className="mt-1.5 flex gap-2.5 text-[11px] whitespace-nowrap">
          <Count n={counts.running} label="running" tone="text-sky-700" />
          <Count n={counts.waiting} label="waiting" tone="text-amber-700" />
          <Count n={counts.stuck} label="stuck" tone="text-red-700" />
        </span>
      )}
    </>
  );
  const frame = `flex h-full w-full flex-col justify-center rounded-md border border-l-4 bg-white px-3 text-left shadow-xs ${style.accent} ${
    selected ? 'border-zinc-900 ring-2 ring-zinc-900/15' : 'border-zinc-300'
  }`;
  return (
    <div style={{ width: NODE_WIDTH, height: NODE_HEIGHT }} data-testid={`step-${step.key}`} data-step-type={step.type}>
      <Handle type="target" position={Position.Top} isConnectable={false} className="!opacity-0" />
      {onSelect ? (
        <button
          type="button"
          onClick={() => onSelect(step.key)}
          aria-pressed={selected}
          aria-label={`${step.name} (${style.label})${counts ? `: ${counts.running} running, ${counts.waiting} waiting, ${counts.stuck} stuck` : ''}`}
          className={`${frame} cursor-pointer hover:border-zinc-500 focus-visible:outline-2 focus-visible:outline-sky-600`}
        >
          {body}
        </button>
      ) : (
        <div className={frame}>{body}</div>
      )}
      <Handle type="source" position={Position.Bottom} isConnectable={false} className="!opacity-0" />
    </div>
  );
}

/** A smooth path through dagre's bend points. */
function pathThrough(points: { x: number; y: number }[]): string {
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

function BranchEdge({ id, data, markerEnd }: EdgeProps<BranchEdgeType>) {
  if (!data) return null;
  return (
    <>
      <BaseEdge id={id} path={pathThrough(data.points)} markerEnd={markerEnd} style={{ stroke: '#a1a1aa', strokeWidth: 1.5 }} />
      {data.branch && data.labelAt && (
        <EdgeLabelRenderer>
          <span
            data-testid="branch-label"
            className={`nodrag nopan pointer-events-none absolute rounded px-1.5 py-px font-mono text-[11px] font-semibold ring-1 ${BRANCH_STYLE[data.branch] ?? 'bg-zinc-50 text-zinc-700 ring-zinc-300'}`}
            style={{ transform: `translate(-50%, -50%) translate(${data.labelAt.x}px, ${data.labelAt.y}px)` }}
          >
            {data.branch}
          </span>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

/** Fitting leaves a strip on the left for the zoom controls, so they never cover a step. */
const FIT = { padding: { top: '16px', right: '16px', bottom: '16px', left: '60px' }, maxZoom: 1 } as const;

/** Refit the graph when its box changes size (a narrower window, a side panel opening). */
function FitOnResize() {
  const { fitView } = useReactFlow();
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  useEffect(() => {
    if (width > 0 && height > 0) void fitView(FIT);
  }, [width, height, fitView]);
  return null;
}

const nodeTypes = { step: StepNode };
const edgeTypes = { branch: BranchEdge };

interface Layout {
  positions: Map<string, { x: number; y: number }>;
  edges: { from: string; to: string; branch: string | null; points: { x: number; y: number }[]; labelAt: { x: number; y: number } | null }[];
  width: number;
  height: number;
}

/** The dagre edge name of a branch (graphlib drops an empty name, so the plain next needs one). */
const edgeName = (branch: string | null) => branch ?? 'next';

function layoutOf(steps: GraphStep[], transitions: GraphTransition[]): Layout {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 36, edgesep: 20, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const s of steps) g.setNode(s.key, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const t of transitions) {
    // A labelled edge gets room for its label, placed by dagre beside the edge.
    g.setEdge(t.from, t.to, t.branch ? { width: 64, height: 20, labelpos: 'c' } : { width: 0, height: 0 }, edgeName(t.branch));
  }
  dagre.layout(g);
  const positions = new Map<string, { x: number; y: number }>();
  for (const s of steps) {
    const n = g.node(s.key);
    positions.set(s.key, { x: n.x - NODE_WIDTH / 2, y: n.y - NODE_HEIGHT / 2 });
  }
  const edges = transitions.map((t) => {
    const e = g.edge({ v: t.from, w: t.to, name: edgeName(t.branch) });
    return {
      ...t,
      points: e.points ?? [],
      labelAt: t.branch && e.x !== undefined && e.y !== undefined ? { x: e.x, y: e.y } : null,
    };
  });
  const graph = g.graph();
  return { positions, edges, width: graph.width ?? 0, height: graph.height ?? 0 };
}

/**
 * The step graph. `counts` by step key (absent: a preview, no counts shown); `onSelect`
 * makes steps buttons (keyboard: Tab to a step, Enter opens it).
 */
export function WorkflowGraph({
  steps,
  transitions,
  counts,
  selected,
  onSelect,
  label,
}: {
  steps: GraphStep[];
  transitions: GraphTransition[];
  counts?: Map<string, StepCounts>;
  selected?: string | null;
  onSelect?: (key: string) => void;
  label: string;
}) {
  // The layout's identity is the definition's shape alone.
  const shape = JSON.stringify([steps.map((s) => [s.key, s.type, s.name]), transitions.map((t) => [t.from, t.to, t.branch])]);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const layout = useMemo(() => layoutOf(steps, transitions), [shape]);

  const nodes: StepNodeType[] = steps.map((step) => ({
    id: step.key,
    type: 'step',
    position: layout.positions.get(step.key) ?? { x: 0, y: 0 },
    width: NODE_WIDTH,
    height: NODE_HEIGHT,
    data: {
      step,
      counts: counts ? (counts.get(step.key) ?? { running: 0, waiting: 0, stuck: 0, stuckReasons: {} }) : null,
      selected: selected === step.key,
      onSelect,
    },
  }));
  const edges: BranchEdgeType[] = layout.edges.map((e) => ({
    id: `${e.from}->${e.to}:${e.branch ?? ''}`,
    source: e.from,
    target: e.to,
    type: 'branch',
    markerEnd: { type: MarkerType.ArrowClosed, color: '#a1a1aa', width: 18, height: 18 },
    data: { branch: e.branch, points: e.points, labelAt: e.labelAt },
  }));

  // Tall enough for the whole graph at full size, within reason; wider graphs are fitted.
  const height = Math.min(Math.max(layout.height + 32, 260), 1100);
  return (
    <div role="figure" aria-label={label} className="w-full" style={{ height }} data-testid="workflow-graph">
      <ReactFlow
        key={shape}
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        fitView
        fitViewOptions={FIT}
        minZoom={0.2}
        maxZoom={1.5}
        nodesDraggable={false}
        nodesConnectable={false}
        nodesFocusable={false}
        edgesFocusable={false}
        elementsSelectable={false}
        zoomOnScroll={false}
        preventScrolling={false}
        panOnDrag
        // A node takes the pointer only when it reacts to it; the step's button does the rest.
        onNodeClick={onSelect ? (_, node) => onSelect(node.id) : undefined}
      >
        <Controls showInteractive={false} position="top-left" />
        <FitOnResize />
      </ReactFlow>
    </div>
  );
}
