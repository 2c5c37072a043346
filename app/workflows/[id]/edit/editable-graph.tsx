'use client';

import '@xyflow/react/dist/style.css';
import { Controls, MarkerType, ReactFlow, type Connection, type FinalConnectionState } from '@xyflow/react';
import { useCallback, useMemo, useState } from 'react';
import type { StepType } from '@/server/common/workflow-definition';
import type { StepCounts } from '../../_components/definition';
import { BranchEdge, branchOfHandle, EDIT_FIT, FitOnResize, StepNode, type BranchEdgeType, type StepNodeType } from '../../_components/graph-parts';
import { layoutOf, layoutShape, NODE_HEIGHT, NODE_WIDTH } from '../../_components/graph-layout';
import type { VersionDefinition } from '../../_components/versions';
import { ADDABLE, branchesOf, connectRefusal, openBranches, TYPE_LABEL } from './definition-model';
import type { EditorIssues } from './validation';

// The editor's canvas: the same dagre layout and parts as the read-only graph, with a
// handle per branch a step may leave by (drag from it onto a step, or onto the step's top
// handle, to connect that branch), a ✕ on every connection, and a type picker that adds a
// step (after the selected one, when it has a free branch). Steps are laid out, never
// dragged: the layout changes only when a step or a connection does.

const nodeTypes = { step: StepNode };
const edgeTypes = { branch: BranchEdge };
const NO_COUNTS: StepCounts = { running: 0, waiting: 0, stuck: 0, stuckReasons: {} };

export function EditableGraph({
  def,
  selected,
  onSelect,
  onConnect,
  onAdd,
  counts,
  issues,
  disabled,
}: {
  def: VersionDefinition;
  selected: string | null;
  onSelect: (key: string | null) => void;
  onConnect: (from: string, branch: string | null, to: string | null) => void;
  onAdd: (type: StepType) => void;
  /** Live counts of the version the editor started from, by step key. */
  counts: Map<string, StepCounts> | null;
  issues: EditorIssues;
  disabled: boolean;
}) {
  const [type, setType] = useState<StepType>('SEND_EMAIL');
  const [refusal, setRefusal] = useState<string | null>(null);
  const shape = layoutShape(def.steps, def.transitions);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const layout = useMemo(() => layoutOf(def.steps, def.transitions, { labelAll: true }), [shape]);
  const nameOf = useMemo(() => new Map(def.steps.map((s) => [s.key, s.name || s.key])), [def.steps]);
  // Tall enough for the starting graph at full size, then fixed: adding a step refits the
  // view inside the same box instead of pushing the page down.
  const [height] = useState(() => Math.min(Math.max(layout.height + 72, 520), 1000));
  // A step's branch handles left to right as dagre placed their targets, so no two edges cross at the step.
  const branchOrder = (key: string, type: string) => {
    const x = (b: string | null) => {
      const t = def.transitions.find((tr) => tr.from === key && tr.branch === b);
      return t ? (layout.positions.get(t.to)?.x ?? Infinity) : Infinity;
    };
    const all = branchesOf(type);
    return [...all].sort((a, b) => x(a) - x(b) || all.indexOf(a) - all.indexOf(b));
  };

  const nodes: StepNodeType[] = def.steps.map((step) => ({
    id: step.key,
    type: 'step',
    position: layout.positions.get(step.key) ?? { x: 0, y: 0 },
    width: NODE_WIDTH,
    height: NODE_HEIGHT,
    data: {
      step,
      counts: counts ? (counts.get(step.key) ?? NO_COUNTS) : null,
      selected: selected === step.key,
      onSelect,
      edit: {
        branches: branchOrder(step.key, step.type),
        connected: def.transitions.filter((t) => t.from === step.key).map((t) => t.branch),
        target: step.type !== 'TRIGGER',
        problems: issues.byStep.get(step.key)?.length ?? 0,
      },
    },
  }));
  const edges: BranchEdgeType[] = layout.edges.map((e) => ({
    id: `${e.from}->${e.to}:${e.branch ?? ''}`,
    source: e.from,
    sourceHandle: e.branch ?? 'next',
    target: e.to,
    type: 'branch',
    markerEnd: { type: MarkerType.ArrowClosed, color: '#a1a1aa', width: 18, height: 18 },
    data: {
      branch: e.branch,
      points: e.points,
      labelAt: e.labelAt,
      onRemove: disabled ? undefined : () => onConnect(e.from, e.branch, null),
      removeLabel: `Remove the connection ${nameOf.get(e.from)} → ${nameOf.get(e.to)}${e.branch ? ` (${e.branch})` : ''}`,
    },
  }));

  const connectTo = useCallback(
    (from: string, handle: string | null | undefined, to: string) => {
      const refused = connectRefusal(def, from, to);
      if (refused) return setRefusal(`Not connected: ${refused}.`);
      setRefusal(null);
      onConnect(from, branchOfHandle(handle), to);
    },
    [def, onConnect],
  );
  const valid = useCallback((c: Connection | { source: string; target: string }) => connectRefusal(def, c.source, c.target) === null, [def]);
  // A drag let go over a step's body (not its top handle) connects to that step too.
  const onConnectEnd = useCallback(
    (event: MouseEvent | TouchEvent, state: FinalConnectionState) => {
      if (state.isValid || !state.fromNode || !state.fromHandle) return;
      const point = 'changedTouches' in event ? event.changedTouches[0]! : event;
      const over = document.elementFromPoint(point.clientX, point.clientY)?.closest('[data-testid^="step-"]');
      const to = over?.getAttribute('data-testid')?.slice('step-'.length);
      if (to && to !== state.fromNode.id) connectTo(state.fromNode.id, state.fromHandle.id, to);
    },
    [connectTo],
  );

  const after = selected && openBranches(def, selected).length > 0 ? selected : null;
  return (
    <div className="flex flex-col">
      <div className="flex flex-wrap items-center gap-2 border-b border-zinc-200 bg-zinc-50 px-3 py-2 text-xs">
        <label htmlFor="new-step-type" className="font-medium text-zinc-700">
          Add a step
        </label>
        <select
          id="new-step-type"
          value={type}
          onChange={(e) => setType(e.target.value as StepType)}
          disabled={disabled}
          className="rounded border border-zinc-300 bg-white px-1.5 py-1 text-xs"
        >
          {ADDABLE.map((t) => (
            <option key={t} value={t}>
              {TYPE_LABEL[t]}
            </option>
          ))}
        </select>
        <button
          type="button"
          onClick={() => onAdd(type)}
          disabled={disabled}
          className="rounded bg-white px-2.5 py-1 font-medium text-zinc-800 ring-1 ring-zinc-300 hover:bg-zinc-100 focus-visible:outline-2 focus-visible:outline-sky-600 disabled:text-zinc-400"
        >
          Add step
        </button>
        <span className="min-w-0 truncate text-zinc-500">{after ? `after “${nameOf.get(after)}”` : 'unconnected'}</span>
        <span role="status" className={`ml-auto min-w-0 truncate ${refusal ? 'font-medium text-red-700' : 'text-zinc-400'}`}>
          {refusal ?? 'Drag a step’s bottom handle onto another step to connect it · ✕ removes a connection'}
        </span>
      </div>
      <div role="figure" aria-label="Editable step graph" className="w-full" style={{ height }} data-testid="workflow-graph" data-editing="true">
        <ReactFlow
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          fitView
          fitViewOptions={EDIT_FIT}
          minZoom={0.2}
          maxZoom={1.5}
          nodesDraggable={false}
          nodesConnectable={!disabled}
          nodesFocusable={false}
          edgesFocusable={false}
          elementsSelectable={false}
          zoomOnScroll={false}
          preventScrolling={false}
          panOnDrag
          isValidConnection={valid}
          onConnect={(c) => c.source && c.target && connectTo(c.source, c.sourceHandle, c.target)}
          onConnectEnd={onConnectEnd}
          onPaneClick={() => onSelect(null)}
          onNodeClick={(_, node) => onSelect(node.id)}
        >
          <Controls showInteractive={false} position="top-left" />
          <FitOnResize fit={EDIT_FIT} also={def.steps.length} />
        </ReactFlow>
      </div>
    </div>
  );
}
