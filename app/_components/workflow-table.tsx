'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useTRPC } from '../_trpc/client';
import { STATUS_COLUMNS, type ExecutionStatus, type WorkflowSummary } from './workflow-status';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from './panel';

function useWorkflows() {
  const trpc = useTRPC();
  return useQuery(trpc.workflows.list.queryOptions(undefined, { refetchInterval: LIVE_REFRESH_MS }));
}

function sum(workflows: WorkflowSummary[], status: ExecutionStatus): number {
  return workflows.reduce((total, w) => total + w.executions[status], 0);
}

/** Headline numbers across every workflow. */
export function ExecutionTotals() {
  const { data } = useWorkflows();
  if (!data) return null;
  const tiles = [
    { label: 'Workflows', value: data.length, detail: `${data.filter((w) => w.enabled).length} enabled` },
    { label: 'Running', value: sum(data, 'RUNNING'), detail: 'claimed or ready for a worker' },
    { label: 'Waiting', value: sum(data, 'WAITING'), detail: 'on a delay or an event' },
    { label: 'Failed', value: sum(data, 'FAILED'), detail: 'need an operator', alarm: sum(data, 'FAILED') > 0 },
  ];
  return (
    <dl className="grid grid-cols-2 gap-3 lg:grid-cols-4">
      {tiles.map((tile) => (
        <div key={tile.label} className="rounded-md border border-zinc-200 bg-white px-4 py-3 shadow-xs">
          <dt className="text-[11px] font-medium uppercase tracking-wide text-zinc-500">{tile.label}</dt>
          <dd className={`mt-1 text-2xl font-semibold tabular-nums ${tile.alarm ? 'text-red-600' : ''}`}>
            {tile.value.toLocaleString()}
          </dd>
          <dd className="text-xs text-zinc-500">{tile.detail}</dd>
        </div>
      ))}
    </dl>
  );
}

export function WorkflowTable() {
  const { data, error, dataUpdatedAt, isFetching } = useWorkflows();
  return (
    <Panel
      title="Workflows"
      labelledBy="workflows-heading"
      summary={data && <span className="text-xs text-zinc-500">{data.length.toLocaleString()}</span>}
      aside={data && <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} asOf={data[0]?.countsAsOf} />}
    >
      {error && <LoadError what="the workflows" message={error.message} />}
      {data && data.length === 0 && (
        <p className="px-4 py-6 text-zinc-500">
          No workflows yet. Workflows created through the API appear here; <code className="font-mono">SEED_DEMO=1 npm start</code>{' '}
          seeds a demo project.
        </p>
      )}
      {data && data.length > 0 && (
        <div className="overflow-x-auto">
          <table className="w-full text-left">
            <thead className="bg-zinc-50 text-[11px] font-medium uppercase tracking-wide whitespace-nowrap text-zinc-500">
              <tr>
                <th scope="col" className="px-4 py-1.5 font-medium">
                  Workflow
                </th>
                <th scope="col" className="px-2 py-1.5 font-medium">
                  Trigger
                </th>
                <th scope="col" className="px-2 py-1.5 font-medium">
                  Re-entry
                </th>
                <th scope="col" className="px-2 py-1.5 text-right font-medium">
                  Steps
                </th>
                {STATUS_COLUMNS.map((column) => (
                  <th key={column.status} scope="col" className="px-2 py-1.5 text-right font-medium">
                    <span className="inline-flex items-center gap-1.5">
                      <span className={`size-1.5 rounded-full ${column.dot}`} aria-hidden />
                      {column.label}
                    </span>
                  </th>
                ))}
                <th scope="col" className="px-4 py-1.5 text-right font-medium">
                  Total
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100">
              {data.map((workflow) => (
                <WorkflowRow key={workflow.id} workflow={workflow} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Panel>
  );
}

function WorkflowRow({ workflow }: { workflow: WorkflowSummary }) {
  const total = STATUS_COLUMNS.reduce((n, column) => n + workflow.executions[column.status], 0);
  return (
    <tr className="hover:bg-zinc-50">
      <td className="px-4 py-2">
        <Link href={`/workflows/${workflow.id}`} className="font-medium hover:text-sky-700 hover:underline">
          {workflow.name}
        </Link>
        {!workflow.enabled && (
          <span className="ml-2 rounded bg-zinc-100 px-1.5 py-0.5 text-[11px] font-medium text-zinc-500 ring-1 ring-zinc-200 ring-inset">
            disabled
          </span>
        )}
      </td>
      <td className="px-2 py-2 whitespace-nowrap">
        {workflow.trigger === 'EVENT' ? (
          <span className="text-zinc-600">
            on event <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono text-xs text-zinc-800">{workflow.triggerEvent}</code>
          </span>
        ) : (
          <span className="text-zinc-600">manual</span>
        )}
      </td>
      <td className="px-2 py-2 whitespace-nowrap text-zinc-600">{workflow.allowReentry ? 'allowed' : 'once per contact'}</td>
      <td className="px-2 py-2 text-right tabular-nums text-zinc-600">{workflow.stepCount}</td>
      {STATUS_COLUMNS.map((column) => {
        const count = workflow.executions[column.status];
        return (
          <td key={column.status} className={`px-2 py-2 text-right tabular-nums ${count > 0 ? column.tone : 'text-zinc-300'}`}>
            {count.toLocaleString()}
          </td>
        );
      })}
      <td className="px-4 py-2 text-right font-medium tabular-nums">{total.toLocaleString()}</td>
    </tr>
  );
}
