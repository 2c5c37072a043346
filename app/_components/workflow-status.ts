import type { RouterOutputs } from '@/app/_trpc/types';

// A workflow's executions by status, as the overview's table and the Workflows page show them.

export type WorkflowSummary = RouterOutputs['workflows']['list'][number];
export type ExecutionStatus = keyof WorkflowSummary['executions'];

/** Columns in the order an execution lives them: active first, then how it ended. */
export const STATUS_COLUMNS: { status: ExecutionStatus; label: string; tone: string; dot: string }[] = [
  { status: 'RUNNING', label: 'Running', tone: 'text-sky-700', dot: 'bg-sky-500' },
  { status: 'WAITING', label: 'Waiting', tone: 'text-amber-700', dot: 'bg-amber-500' },
  { status: 'COMPLETED', label: 'Completed', tone: 'text-emerald-700', dot: 'bg-emerald-500' },
  { status: 'EXITED', label: 'Exited', tone: 'text-zinc-700', dot: 'bg-zinc-400' },
  { status: 'FAILED', label: 'Failed', tone: 'text-red-700 font-semibold', dot: 'bg-red-500' },
  { status: 'CANCELLED', label: 'Cancelled', tone: 'text-zinc-700', dot: 'bg-zinc-300' },
];
