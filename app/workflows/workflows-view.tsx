'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useMemo } from 'react';
import { DataTable, type Columns } from '../_components/data-table';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from '../_components/panel';
import { useTRPC } from '../_trpc/client';
import { STATUS_COLUMNS, type WorkflowSummary } from '../_components/workflow-status';
import { EnabledSwitch } from './_components/enabled-switch';

function columnsFor(mayWrite: boolean): Columns<WorkflowSummary> {
  const columns: Columns<WorkflowSummary> = [
    {
      id: 'name',
      header: 'Workflow',
      cell: ({ row }) => (
        <div className="min-w-0">
          <Link href={`/workflows/${row.original.id}`} className="font-medium text-zinc-900 hover:underline">
            {row.original.name}
          </Link>
          {row.original.description && (
            <p className="max-w-[10rem] truncate text-xs text-zinc-500" title={row.original.description}>
              {row.original.description}
            </p>
          )}
        </div>
      ),
    },
    {
      id: 'enabled',
      header: 'Enabled',
      cell: ({ row }) => <EnabledSwitch id={row.original.id} name={row.original.name} enabled={row.original.enabled} mayWrite={mayWrite} compact />,
    },
    {
      id: 'trigger',
      header: 'Trigger',
      cell: ({ row }) => (
        <div className="whitespace-nowrap">
          {row.original.trigger === 'EVENT' ? (
            <span className="text-zinc-700">
              on event <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono text-xs text-zinc-800">{row.original.triggerEvent}</code>
            </span>
          ) : (
            <span className="text-zinc-700">manual</span>
          )}
          <p className="text-xs text-zinc-500">
            {row.original.stepCount} steps · {row.original.allowReentry ? 're-entry allowed' : 'once per contact'}
          </p>
        </div>
      ),
    },
    ...STATUS_COLUMNS.map(
      (column): Columns<WorkflowSummary>[number] => ({
        id: column.status,
        header: () => (
          <span className="inline-flex items-center gap-1.5">
            <span className={`size-1.5 rounded-full ${column.dot}`} aria-hidden />
            {column.label}
          </span>
        ),
        cell: ({ row }) => {
          const count = row.original.executions[column.status];
          if (count === 0) return <span className="text-zinc-300 tabular-nums">0</span>;
          return (
            <Link
              href={`/executions?workflowId=${row.original.id}&status=${column.status}`}
              className={`tabular-nums hover:underline ${column.tone}`}
              title={`${column.label} executions of ${row.original.name}`}
            >
              {count.toLocaleString()}
            </Link>
          );
        },
      }),
    ),
  ];
  if (mayWrite) {
    columns.push({
      id: 'actions',
      header: () => <span className="sr-only">Actions</span>,
      cell: ({ row }) => (
        <Link
          href={`/workflows/new?from=${row.original.id}`}
          className="rounded px-1.5 py-0.5 text-[11px] font-medium text-zinc-700 ring-1 ring-zinc-300 hover:bg-zinc-100"
          aria-label={`Duplicate ${row.original.name}`}
        >
          Duplicate
        </Link>
      ),
    });
  }
  return columns;
}

const COLUMN_CLASS: Record<string, string> = {
  enabled: 'whitespace-nowrap',
  ...Object.fromEntries(STATUS_COLUMNS.map((c) => [c.status, 'text-right whitespace-nowrap'])),
  actions: 'text-right',
};

export function WorkflowsView({ mayWrite }: { mayWrite: boolean }) {
  const trpc = useTRPC();
  const { data, error, dataUpdatedAt, isFetching, isPending } = useQuery(trpc.workflows.list.queryOptions(undefined, { refetchInterval: LIVE_REFRESH_MS }));
  const columns = useMemo(() => columnsFor(mayWrite), [mayWrite]);
  return (
    <Panel
      title="Workflows"
      labelledBy="workflows-heading"
      summary={data && <span className="text-xs text-zinc-500">{data.length.toLocaleString()}</span>}
      aside={data && <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} asOf={data[0]?.countsAsOf} />}
    >
      {error && <LoadError what="the workflows" message={error.message} />}
      {isPending && (
        <p role="status" className="px-4 py-6 text-zinc-500">
          Loading workflows…
        </p>
      )}
      {data && (
        <DataTable
          label="Workflows"
          columns={columns}
          rows={data}
          columnClass={COLUMN_CLASS}
          rowTestId={(w) => `workflow-row-${w.name}`}
          empty={
            mayWrite ? (
              <>
                No workflows yet.{' '}
                <Link href="/workflows/new" className="font-medium text-zinc-900 underline">
                  Create the first one
                </Link>
                .
              </>
            ) : (
              'No workflows yet.'
            )
          }
        />
      )}
    </Panel>
  );
}
