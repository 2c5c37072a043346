'use client';

import '@xyflow/react/dist/style.css';
import { Controls, MarkerType, ReactFlow } from '@xyflow/react';
import { useMemo } from 'react';
import type { GraphStep, GraphTransition, StepCounts } from './definition';
import { BranchEdge, FIT, FitOnResize, StepNode, type BranchEdgeType, type StepNodeType } from './graph-parts';
import { layoutOf, NODE_HEIGHT, NODE_WIDTH } from './graph-layout';

// A workflow drawn as its step graph: @xyflow/react renders, dagre lays it out top to
// bottom (graph-layout.ts). The layout depends only on the definition (steps and
// transitions), never on the live counts, so refreshing the counts every few seconds
// moves nothing. The editor's canvas (edit/editable-graph.tsx) draws with the same parts.

const nodeTypes = { step: StepNode };
const edgeTypes = { branch: BranchEdge };

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
