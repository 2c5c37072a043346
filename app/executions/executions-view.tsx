'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import Link from 'next/link';
import { useSearchParams } from 'next/navigation';
import { useEffect, useState } from 'react';
import { EXECUTION_STATUSES } from '@/server/common/execution-status';
import { STUCK_DESCRIPTIONS, type StuckReason } from '@/server/common/stuck-reasons';
import { StatusBadge, StuckBadge } from '../_components/badges';
import { BulkRepair } from '../_components/bulk-repair';
import { DataTable, useHeldRows, type Features } from '../_components/data-table';
import { ChipGroup, Field, FilterBar, INPUT_CLASS, Pager, TextFilter, TimeRange, useUrlInput } from '../_components/filters';
import { useHydrated } from '../_components/hydrated';
import { Freshness, LIVE_REFRESH_MS, LoadState } from '../_components/panel';
import { actionsForExecutions, withMigrate, type BulkActionName } from '../_components/stuck-actions';
import { Age, RelativeTime } from '../_components/time';
import { useTRPC } from '../_trpc/client';
import { EXECUTION_SEARCH, REPAIR_PARAM, type ListExecutionsInput } from './search';
import { StepSelect, useStepOptions } from './step-options';
import type { RouterOutputs } from '@/app/_trpc/types';
import { atLeast, type Role } from '@/server/common/roles';

type Row = RouterOutputs['executions']['list']['items'][number] & { gone: boolean };


const helper = createColumnHelper<Features, Row>();
const COLUMNS = helper.columns([
  helper.display({
    id: 'execution',
    header: 'Execution',
    cell: ({ row }) => (
      <Link
        href={`/executions/${row.original.id}`}
        className="font-mono text-xs text-sky-700 underline-offset-2 hover:underline focus-visible:outline-2 focus-visible:outline-sky-600"
        title={row.original.id}
      >
        {row.original.id.slice(0, 8)}
      </Link>
    ),
  }),
  helper.accessor('workflowName', {
    header: 'Workflow',
    cell: ({ row }) => {
      const { workflowName, workflowVersion, latestVersion } = row.original;
      const older = workflowVersion < latestVersion;
      return (
        <span className="inline-flex items-baseline gap-1.5">
          <span className="font-medium">{workflowName}</span>
          <span
            data-testid="execution-workflow-version"
            title={older ? `Runs on version ${workflowVersion}; the workflow's latest is ${latestVersion}` : `Runs on version ${workflowVersion}, the latest`}
            className={`rounded px-1 text-[11px] tabular-nums ring-1 ring-inset ${older ? 'bg-amber-50 text-amber-800 ring-amber-200' : 'text-zinc-500 ring-zinc-200'}`}
          >
            v{workflowVersion}
          </span>
        </span>
      );
    },
  }),
  helper.accessor('contactEmail', { header: 'Contact', cell: (c) => <span className="text-zinc-700">{c.getValue()}</span> }),
  helper.accessor('status', {
    header: 'Status',
    cell: ({ row }) => (
      <span className="inline-flex items-center gap-1.5">
        <StatusBadge status={row.original.status} />
        {row.original.gone && (
          <span className="text-[11px] text-zinc-400" title="No longer matches these filters; shown as last seen until you refresh the view">
            changed
          </span>
        )}
      </span>
    ),
  }),
  helper.display({
    id: 'step',
    header: 'Current step',
    cell: ({ row }) =>
      row.original.stepName ? (
        <span title={row.original.stepKey ?? undefined}>
          {row.original.stepName} <span className="text-[11px] text-zinc-400">{row.original.stepType}</span>
        </span>
      ) : (
        <span className="text-zinc-400">{row.original.exitReason ?? '—'}</span>
      ),
  }),
  helper.display({
    id: 'stuck',
    header: 'Stuck',
    cell: ({ row }) =>
      row.original.stuck.length === 0 ? (
        <span className="text-zinc-300">—</span>
      ) : (
        <span className="flex flex-wrap gap-1">
          {row.original.stuck.map((s) => (
            <span key={s.reason} className="inline-flex items-center gap-1 whitespace-nowrap">
              <StuckBadge reason={s.reason} title={STUCK_DESCRIPTIONS[s.reason as StuckReason]} />
              <Age since={s.since} className="text-xs text-amber-800 tabular-nums" />
            </span>
          ))}
        </span>
      ),
  }),
  helper.accessor('version', {
    header: () => <span title="State version: the compare-and-swap fence every change increments (not the workflow's version)">Rev.</span>,
    cell: (c) => <span className="tabular-nums text-zinc-500">{c.getValue()}</span>,
  }),
  helper.accessor('startedAt', { header: 'Started', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
  helper.accessor('updatedAt', { header: 'Updated', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
]);

const COLUMN_CLASS: Record<string, string> = {
  execution: 'w-24',
  workflowName: 'whitespace-nowrap',
  contactEmail: 'whitespace-nowrap',
  status: 'w-32 whitespace-nowrap',
  version: 'w-14 text-right',
  startedAt: 'w-28 whitespace-nowrap',
  updatedAt: 'w-28 whitespace-nowrap',
};


export function ExecutionsView({ executionReasons, role }: { executionReasons: StuckReason[]; role: Role }) {
  const trpc = useTRPC();
  const { input, setFilter, setPage, clear, replace } = useUrlInput(EXECUTION_SEARCH);
  // The selects write the URL too: disabled until the page is hydrated (see useUrlInput).
  const hydrated = useHydrated();
  const listInput = input as ListExecutionsInput;
  const workflowId = typeof input.workflowId === 'string' ? input.workflowId : undefined;
  const status = (input.status as string[] | undefined) ?? [];
  const stuck = (input.stuck as string[] | undefined) ?? [];

  const list = useQuery(trpc.executions.list.queryOptions(listInput, { refetchInterval: LIVE_REFRESH_MS, placeholderData: keepPreviousData }));
  const stats = useQuery(trpc.executions.stats.queryOptions(workflowId ? { workflowId } : {}, { refetchInterval: LIVE_REFRESH_MS }));
  const workflows = useQuery(trpc.workflows.list.queryOptions());
  // The step filter lists the latest version's steps and those of older versions still in use.
  const stepOptions = useStepOptions(workflowId);

  const [pointerInside, setPointerInside] = useState(false);
  const viewKey = JSON.stringify(input);
  const held = useHeldRows<Row>(viewKey, list.isPlaceholderData ? undefined : (list.data?.items as Row[] | undefined), pointerInside);
  const filtered = Object.keys(input).some((k) => k !== 'cursor' && k !== 'before');
  const atStart = !input.cursor && !input.before;
  const mayRepair = atLeast(role, 'OPERATOR');
  // Bulk repair of what these filters select (all pages, not just this one), opened for the filters it was opened with.
  const [bulkFor, setBulkFor] = useState<string | null>(null);
  // ?repair=MIGRATE (the publish dialog's link): open the bulk repair on these filters with MIGRATE chosen, once.
  const searchParams = useSearchParams();
  const [preselect, setPreselect] = useState<BulkActionName | null>(null);
  const asked = searchParams.get(REPAIR_PARAM);
  useEffect(() => {
    if (!hydrated || asked !== 'MIGRATE' || !mayRepair || !filtered) return;
    setPreselect('MIGRATE');
    setBulkFor(viewKey);
    replace(input);
  }, [hydrated, asked, mayRepair, filtered, viewKey, replace, input]);
  const { cursor: _cursor, before: _before, limit: _limit, ...selection } = (listInput ?? {}) as Exclude<ListExecutionsInput, void>;
  const onlyReason = stuck.length === 1 ? (stuck[0] as StuckReason) : null;
  const atStep = stepOptions.find(input.stepId);
  const stepType = atStep?.type ?? null;
  const bulkActions = workflowId ? withMigrate(actionsForExecutions(onlyReason, stepType), stepOptions.latestVersion, onlyReason) : actionsForExecutions(onlyReason, stepType);

  return (
    <section aria-label="Executions" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <FilterBar onClear={clear} active={filtered}>
        <Field label="Workflow" htmlFor="filter-workflow">
          <select
            id="filter-workflow"
            value={workflowId ?? ''}
            disabled={!hydrated}
            onChange={(e) => {
              const { cursor: _c, before: _b, stepId: _s, ...rest } = input;
              replace({ ...rest, workflowId: e.target.value || undefined });
            }}
            className={`${INPUT_CLASS} w-44`}
          >
            <option value="">All workflows</option>
            {workflows.data?.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Current step" htmlFor="filter-step">
          <StepSelect
            id="filter-step"
            value={typeof input.stepId === 'string' ? input.stepId : ''}
            groups={stepOptions.groups}
            disabled={!hydrated || !workflowId}
            title={workflowId ? undefined : 'Choose a workflow first'}
            fallbackName={held.rows.find((r) => r.currentStepId === input.stepId)?.stepName ?? null}
            onChange={(stepId) => setFilter('stepId', stepId)}
          />
        </Field>
        <TextFilter
          id="filter-contact"
          label="Contact"
          value={typeof input.contact === 'string' ? input.contact : undefined}
          onApply={(v) => setFilter('contact', v)}
          placeholder="email starts with…"
        />
        <TimeRange
          since={typeof input.since === 'string' ? input.since : undefined}
          until={typeof input.until === 'string' ? input.until : undefined}
          onChange={(range) => {
            const { cursor: _c, before: _b, since: _s, until: _u, ...rest } = input;
            replace({ ...rest, ...range });
          }}
        />
      </FilterBar>
      <div className="flex flex-wrap gap-x-6 gap-y-2 border-b border-zinc-200 px-4 py-2.5">
        <ChipGroup
          label="Status"
          options={EXECUTION_STATUSES.map((s) => ({ value: s, label: s.toLowerCase(), count: stats.data?.byStatus[s] }))}
          selected={status}
          onChange={(values) => setFilter('status', values)}
        />
        <ChipGroup
          label="Stuck because"
          options={executionReasons.map((r) => ({ value: r, count: stats.data?.byStuckReason[r], title: STUCK_DESCRIPTIONS[r] }))}
          selected={stuck}
          onChange={(values) => setFilter('stuck', values)}
        />
      </div>

      <div className="flex h-8 items-center gap-3 px-4 text-xs text-zinc-500" aria-live="polite">
        {stats.data && (
          <span className="tabular-nums" title="The status and stuck counts above are of the whole project (or the chosen workflow), whatever the other filters">
            {stats.data.total.toLocaleString()} executions in {workflowId ? 'this workflow' : 'the project'}
            {stats.data.asOf && (
              <span suppressHydrationWarning data-testid="figures-as-of" className="text-amber-800">
                {' '}
                (counts as of {stats.data.asOf.toLocaleTimeString()})
              </span>
            )}
          </span>
        )}
        {held.arrived > 0 && (
          <button
            type="button"
            onClick={held.showLatest}
            className="rounded-full bg-sky-600 px-2.5 py-0.5 text-xs font-medium text-white shadow-xs hover:bg-sky-700"
          >
            {held.arrived} new or changed — show
          </button>
        )}
        {pointerInside && <span className="text-zinc-400">Paused while the pointer is over the rows</span>}
        <span className="ml-auto">{list.data && <Freshness updatedAt={list.dataUpdatedAt} fetching={list.isFetching} />}</span>
        {mayRepair && (
          <button
            type="button"
            disabled={!filtered || bulkFor === viewKey || (list.data?.items.length ?? 0) === 0}
            title={filtered ? 'Repair every execution these filters select, on every page: a count first, then a reason' : 'Filter first: a bulk repair acts on what the filters select'}
            onClick={() => setBulkFor(viewKey)}
            className="inline-flex h-6 items-center rounded border border-zinc-300 bg-white px-2 text-xs font-medium text-zinc-700 shadow-xs hover:border-zinc-400 disabled:cursor-not-allowed disabled:opacity-50"
          >
            Repair matching…
          </button>
        )}
      </div>

      {mayRepair && bulkFor !== null && (
        <div className="border-y border-zinc-200 bg-zinc-50 p-3">
          {bulkFor === viewKey ? (
            <BulkRepair
              key={bulkFor}
              filter={{ executions: selection }}
              reason={onlyReason}
              stepType={stepType}
              actions={bulkActions}
              initialAction={preselect && bulkActions.includes(preselect) ? preselect : undefined}
              workflowId={workflowId ?? null}
              title={`executions matching: ${describeSelection(selection, workflows.data ?? [], atStep ? [{ id: atStep.id, name: `${atStep.name} (v${atStep.version})` }] : [])}`}
              onClose={() => {
                setBulkFor(null);
                setPreselect(null);
              }}
            />
          ) : (
            <p className="text-xs text-zinc-600">
              The filters changed, so the bulk repair you opened was closed.{' '}
              <button type="button" className="text-sky-700 underline" onClick={() => setBulkFor(viewKey)}>
                Open it for these filters
              </button>
            </p>
          )}
        </div>
      )}

      <LoadState what="the executions" loading="Loading executions…" error={list.error} pending={list.isPending} />
      {list.data && (
        <>
          <DataTable
            label="Executions"
            columns={COLUMNS}
            rows={held.rows}
            columnClass={COLUMN_CLASS}
            rowClass={(r) => (r.gone ? 'opacity-50' : r.stuck.length ? 'bg-amber-50/40' : '')}
            rowTestId={() => 'execution-row'}
            onPointerInside={setPointerInside}
            empty={
              filtered ? (
                <>
                  No executions match these filters.{' '}
                  <button type="button" onClick={clear} className="text-sky-700 underline">
                    Clear filters
                  </button>
                </>
              ) : (
                'No executions yet. Enroll a contact in a workflow and it shows up here.'
              )
            }
          />
          <Pager
            prevCursor={list.data.prevCursor}
            nextCursor={list.data.nextCursor}
            onPage={setPage}
            count={held.rows.length}
            what="executions"
            atStart={atStart}
          />
        </>
      )}
    </section>
  );
}

/** The filters in words, for the bulk repair's title ("Welcome series · WAITING · stuck WAIT_OVERDUE · contact ann…"). */
function describeSelection(
  f: Omit<Exclude<ListExecutionsInput, void>, 'cursor' | 'before' | 'limit'>,
  workflows: { id: string; name: string }[],
  steps: { id: string; name: string }[],
): string {
  const parts = [
    f.workflowId ? (workflows.find((w) => w.id === f.workflowId)?.name ?? 'a workflow') : null,
    f.stepId ? `at ${steps.find((s) => s.id === f.stepId)?.name ?? 'a step'}` : null,
    f.status?.length ? f.status.join('/') : null,
    f.stuck?.length ? `stuck ${f.stuck.join('/')}` : null,
    f.contact ? `contact ${f.contact}…` : null,
    f.since ? `since ${String(f.since)}` : null,
    f.until ? `until ${String(f.until)}` : null,
  ];
  return parts.filter(Boolean).join(' · ');
}
