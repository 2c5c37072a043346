'use client';

import { BaseEdge, EdgeLabelRenderer, Handle, Position, useReactFlow, useStore, type Edge, type EdgeProps, type Node, type NodeProps } from '@xyflow/react';
import { useEffect } from 'react';
import type { GraphStep, StepCounts } from './definition';
import { NODE_HEIGHT, NODE_WIDTH, pathThrough, type Point } from './graph-layout';

// The pieces both graphs draw with: a step's node, an edge labelled with its branch, the
// fit that keeps the zoom controls clear of the steps. The editor's variant of each adds
// handles to connect from (one per branch the step may leave by) and a remove button on
// each edge.

export const TYPE_STYLE: Record<string, { label: string; accent: string }> = {
  TRIGGER: { label: 'Trigger', accent: 'border-l-violet-500' },
  SEND_EMAIL: { label: 'Send email', accent: 'border-l-sky-500' },
  DELAY: { label: 'Delay', accent: 'border-l-amber-400' },
  WAIT_FOR_EVENT: { label: 'Wait for event', accent: 'border-l-amber-500' },
  CONDITION: { label: 'Condition', accent: 'border-l-indigo-500' },
  UPDATE_CONTACT: { label: 'Update contact', accent: 'border-l-teal-500' },
  EXIT: { label: 'Exit', accent: 'border-l-zinc-400' },
};

export const BRANCH_STYLE: Record<string, string> = {
  yes: 'bg-emerald-50 text-emerald-800 ring-emerald-300',
  EVENT: 'bg-emerald-50 text-emerald-800 ring-emerald-300',
  no: 'bg-rose-50 text-rose-800 ring-rose-300',
  TIMEOUT: 'bg-amber-50 text-amber-800 ring-amber-300',
};

/** A source handle's id: its branch, or "next" for the plain one. */
export const handleId = (branch: string | null) => branch ?? 'next';
export const branchOfHandle = (id: string | null | undefined) => (!id || id === 'next' ? null : id);

/** Where along the bottom edge each of a step's source handles sits (fraction of the width). */
export function handleFractions(count: number): number[] {
  return count === 1 ? [0.5] : count === 2 ? [0.28, 0.72] : Array.from({ length: count }, (_, i) => (i + 1) / (count + 1));
}

export interface EditNodeExtras {
  /** The branches the step may leave by (null: the plain next), each a handle, left to right as their targets are laid out. */
  branches: readonly (string | null)[];
  /** The branches already connected: their edge carries the label, so the handle does not repeat it. */
  connected: readonly (string | null)[];
  /** May anything lead into it (every step but the trigger). */
  target: boolean;
  /** How many problems the step has (its config, its name, its transitions). */
  problems: number;
}

export type StepNodeData = {
  step: GraphStep;
  counts: StepCounts | null;
  selected: boolean;
  onSelect?: (key: string) => void;
  edit?: EditNodeExtras;
};
export type StepNodeType = Node<StepNodeData, 'step'>;

export type BranchEdgeData = {
  branch: string | null;
  points: Point[];
  labelAt: Point | null;
  /** The editor's remove button; its label names the connection. */
  onRemove?: () => void;
  removeLabel?: string;
};
export type BranchEdgeType = Edge<BranchEdgeData, 'branch'>;

function Count({ n, label, tone }: { n: number; label: string; tone: string }) {
  return (
    <span className={`tabular-nums ${n > 0 ? tone : 'text-zinc-300'}`} data-count={label}>
      <span className="font-semibold">{n.toLocaleString()}</span> {label}
    </span>
  );
}

const HANDLE = '!h-3 !w-3 !border-2 !border-white !bg-zinc-500 hover:!bg-sky-600';

export function StepNode({ data }: NodeProps<StepNodeType>) {
  const { step, counts, selected, onSelect, edit } = data;
  const style = TYPE_STYLE[step.type] ?? { label: step.type, accent: 'border-l-zinc-300' };
  const problems = edit?.problems ?? 0;
  const body = (
    <>
      <span className="flex min-w-0 items-center gap-2">
        <span className="truncate text-[13px] font-semibold text-zinc-900" title={step.name}>
          {step.name || <span className="text-zinc-400 italic">unnamed</span>}
        </span>
        {problems > 0 && (
          <span data-testid="node-problems" className="ml-auto shrink-0 rounded-full bg-red-100 px-1.5 text-[10.5px] font-semibold text-red-800 ring-1 ring-red-300">
            {problems} problem{problems === 1 ? '' : 's'}
          </span>
        )}
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
  const ring = selected ? 'border-zinc-900 ring-2 ring-zinc-900/15' : problems > 0 ? 'border-red-400' : 'border-zinc-300';
  const frame = `flex h-full w-full flex-col justify-center rounded-md border border-l-4 bg-white px-3 text-left shadow-xs ${style.accent} ${ring}`;
  const branches = edit?.branches ?? [null];
  const fractions = handleFractions(branches.length);
  return (
    <div style={{ width: NODE_WIDTH, height: NODE_HEIGHT }} data-testid={`step-${step.key}`} data-step-type={step.type}>
      {edit ? (
        edit.target && <Handle type="target" position={Position.Top} className={HANDLE} data-testid={`target-${step.key}`} />
      ) : (
        <Handle type="target" position={Position.Top} isConnectable={false} className="!opacity-0" />
      )}
      {onSelect ? (
        <button
          type="button"
          onClick={() => onSelect(step.key)}
          aria-pressed={selected}
          aria-label={`${step.name} (${style.label})${counts ? `: ${counts.running} running, ${counts.waiting} waiting, ${counts.stuck} stuck` : ''}${problems ? `, ${problems} problems` : ''}`}
          className={`${frame} cursor-pointer hover:border-zinc-500 focus-visible:outline-2 focus-visible:outline-sky-600`}
        >
          {body}
        </button>
      ) : (
        <div className={frame}>{body}</div>
      )}
      {edit
        ? branches.map((branch, i) => (
            <Handle
              key={handleId(branch)}
              id={handleId(branch)}
              type="source"
              position={Position.Bottom}
              style={{ left: `${fractions[i]! * 100}%` }}
              className={HANDLE}
              data-testid={`handle-${step.key}-${handleId(branch)}`}
              title={branch ? `Drag to connect the ${branch} branch` : 'Drag to connect the next step'}
            >
              {branch && !edit.connected.includes(branch) && (
                <span
                  className={`pointer-events-none absolute top-2.5 left-1/2 -translate-x-1/2 rounded px-1 font-mono text-[10px] leading-4 font-semibold ring-1 ${BRANCH_STYLE[branch] ?? ''}`}
                >
                  {branch}
                </span>
              )}
            </Handle>
          ))
        : <Handle type="source" position={Position.Bottom} isConnectable={false} className="!opacity-0" />}
    </div>
  );
}

export function BranchEdge({ id, data, markerEnd, sourceX, sourceY, targetX, targetY }: EdgeProps<BranchEdgeType>) {
  if (!data) return null;
  // The editor's edges leave from their branch's handle: the first and last points are
  // the handles' own, the bends dagre's.
  const points =
    data.onRemove && data.points.length >= 2 ? [{ x: sourceX, y: sourceY }, ...data.points.slice(1, -1), { x: targetX, y: targetY }] : data.points;
  const branchClass = data.branch ? (BRANCH_STYLE[data.branch] ?? 'bg-zinc-50 text-zinc-700 ring-zinc-300') : 'bg-white/90 text-zinc-400 ring-zinc-200';
  return (
    <>
      <BaseEdge id={id} path={pathThrough(points)} markerEnd={markerEnd} style={{ stroke: '#a1a1aa', strokeWidth: 1.5 }} />
      {data.labelAt && (data.branch || data.onRemove) && (
        <EdgeLabelRenderer>
          <span
            className={`nodrag nopan absolute flex items-center rounded font-mono text-[11px] font-semibold ring-1 ${branchClass} ${data.onRemove ? 'pointer-events-auto' : 'pointer-events-none'}`}
            style={{ transform: `translate(-50%, -50%) translate(${data.labelAt.x}px, ${data.labelAt.y}px)` }}
          >
            {data.branch && (
              <span data-testid="branch-label" className="px-1.5 py-px">
                {data.branch}
              </span>
            )}
            {data.onRemove && (
              <button
                type="button"
                onClick={data.onRemove}
                aria-label={data.removeLabel ?? 'Remove this connection'}
                title={data.removeLabel ?? 'Remove this connection'}
                data-testid="remove-edge"
                className="rounded px-1 py-px text-[10px] leading-3.5 opacity-70 hover:bg-red-100 hover:text-red-800 hover:opacity-100 focus-visible:outline-2 focus-visible:outline-sky-600"
              >
                ✕
              </button>
            )}
          </span>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

/** Fitting leaves a strip on the left for the zoom controls, so they never cover a step. */
export const FIT = { padding: { top: '16px', right: '16px', bottom: '16px', left: '60px' }, maxZoom: 1 } as const;
/** The editor's: room below the last steps for their handles' branch labels. */
export const EDIT_FIT = { padding: { top: '24px', right: '24px', bottom: '36px', left: '60px' }, maxZoom: 1 } as const;

/** Refit the graph when its box changes size (a narrower window, a side panel opening) or `also` changes. */
export function FitOnResize({ also, fit = FIT }: { also?: unknown; fit?: typeof FIT | typeof EDIT_FIT }) {
  const { fitView } = useReactFlow();
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  useEffect(() => {
    if (width > 0 && height > 0) void fitView(fit);
  }, [width, height, fitView, also, fit]);
  return null;
}
