'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import Link from 'next/link';
import { useMemo, useState } from 'react';
import { StatusBadge } from '../_components/badges';
import { DataTable, useHeldRows, type Features } from '../_components/data-table';
import { ChipGroup, FilterBar, Pager, TextFilter, TimeRange, useUrlInput } from '../_components/filters';
import { useHydrated } from '../_components/hydrated';
import { JsonView } from '../_components/json-view';
import { Freshness, LIVE_REFRESH_MS, LoadState } from '../_components/panel';
import { RelativeTime } from '../_components/time';
import { useTRPC } from '../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';
import { AUDIT_SEARCH, type ListAuditInput } from './search';

type Row = RouterOutputs['audit']['list']['items'][number] & { gone: boolean };

/** Procedures that write audit entries (a suggestion list; any action can be typed). */
const KNOWN_ACTIONS = [
  'enrollments.enroll',
  'enrollments.enrollMany',
  'enrollments.importCsv',
  'events.track',
  'waits.resolve',
  'contacts.upsert',
  'workflows.create',
  'workflows.setEnabled',
  'repair.applyMany',
  'repair.RESUME_CONTINUATION',
  'repair.FORCE_TIMEOUT',
  'repair.DELIVER_EVENT',
  'repair.RETRY_STEP',
  'repair.SKIP_STEP',
  'repair.CANCEL',
  'repair.REDRIVE_EVENT',
  'repair.MARK_SENT',
  'repair.RESEND',
  'repair.GIVE_UP',
  'sender.lateDelivery',
];

const OUTCOMES = [
  { value: 'APPLIED', title: 'the change was made' },
  { value: 'LOST', title: 'a compare-and-swap lost: something else changed it first' },
  { value: 'REJECTED', title: 'refused: the input or the state did not allow it' },
  { value: 'FAILED', title: 'an error stopped it; nothing changed' },
];

/** Where a target lives in the console. */
function targetHref(type: string, id: string): string | null {
  switch (type) {
    case 'execution':
      return `/executions/${id}`;
    case 'workflow':
      return `/executions?workflowId=${id}`;
    case 'contact':
      return `/executions?contact=${id}`;
    case 'event':
      return `/events#event-${id}`;
    default:
      return null;
  }
}

const helper = createColumnHelper<Features, Row>();

/** The columns; clicking an actor, action or target narrows the log to it. */
function columnsFor(setFilter: (key: string, value: string | undefined) => void, hydrated: boolean) {
  return helper.columns([
    helper.accessor('at', { header: 'When', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
    helper.accessor('actor', {
      header: 'Actor',
      cell: ({ row }) => (
        <button
          type="button"
          disabled={!hydrated}
          onClick={() => setFilter('actor', row.original.actor)}
          title={`${row.original.actor} — show only this actor's entries`}
          className="max-w-48 truncate text-left text-zinc-800 hover:text-sky-700 hover:underline"
        >
          {row.original.actorLabel ?? row.original.actor}
        </button>
      ),
    }),
    helper.accessor('action', {
      header: 'Action',
      cell: ({ row }) => (
        <button type="button" disabled={!hydrated} onClick={() => setFilter('action', row.original.action)} title="Show only this action" className="font-mono text-xs hover:text-sky-700 hover:underline">
          {row.original.action}
        </button>
      ),
    }),
    helper.display({
      id: 'target',
      header: 'Target',
      cell: ({ row }) => {
        const { targetType, targetId } = row.original;
        const href = targetHref(targetType, targetId);
        return (
          <span className="flex flex-wrap items-baseline gap-x-1.5 whitespace-nowrap">
            <span className="text-[11px] text-zinc-400">{targetType}</span>
            {href ? (
              <Link href={href} className="font-mono text-xs text-sky-700 hover:underline" title={targetId}>
                {targetId.slice(0, 8)}
              </Link>
            ) : (
              <span className="font-mono text-xs" title={targetId}>
                {targetId.slice(0, 24)}
              </span>
            )}
            <button
              type="button"
              disabled={!hydrated}
              onClick={() => setFilter('targetId', targetId)}
              className="basis-full text-left text-[11px] text-zinc-400 hover:text-sky-700"
              title="Show only the entries about this target"
              aria-label={`Entries about ${targetType} ${targetId}`}
            >
              all entries
            </button>
          </span>
        );
      },
    }),
    helper.accessor('outcome', { header: 'Outcome', cell: (c) => <StatusBadge status={c.getValue()} /> }),
    helper.accessor('reason', {
      header: 'Reason',
      cell: (c) => (c.getValue() ? <span className="text-zinc-700">“{c.getValue()}”</span> : <span className="text-zinc-300">—</span>),
    }),
    helper.display({
      id: 'change',
      header: 'Before / after',
      cell: ({ row }) => (
        <div className="flex max-w-56 min-w-0 flex-col gap-0.5">
          {row.original.before !== null && <JsonView value={row.original.before} label="before" />}
          {row.original.after !== null && <JsonView value={row.original.after} label="after" />}
        </div>
      ),
    }),
  ]);
}

export function AuditView() {
  const trpc = useTRPC();
  const { input, setFilter, setPage, clear, replace } = useUrlInput(AUDIT_SEARCH);
  const list = useQuery(trpc.audit.list.queryOptions(input as ListAuditInput, { refetchInterval: LIVE_REFRESH_MS, placeholderData: keepPreviousData }));
  const [pointerInside, setPointerInside] = useState(false);
  const held = useHeldRows<Row>(JSON.stringify(input), list.isPlaceholderData ? undefined : (list.data?.items as Row[] | undefined), pointerInside);
  const filtered = Object.keys(input).some((k) => k !== 'cursor' && k !== 'before');

  // The narrowing buttons write the URL: live only once the page is (see useUrlInput).
  const hydrated = useHydrated();
  const columns = useMemo(() => columnsFor(setFilter, hydrated), [setFilter, hydrated]);

  return (
    <section aria-label="Audit entries" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <FilterBar onClear={clear} active={filtered}>
        <TextFilter id="filter-actor" label="Actor" value={input.actor as string | undefined} onApply={(v) => setFilter('actor', v)} placeholder="user:… or apikey:…" width="w-56" />
        <TextFilter id="filter-action" label="Action" value={input.action as string | undefined} onApply={(v) => setFilter('action', v)} placeholder="e.g. repair.CANCEL" list="known-actions" />
        <datalist id="known-actions">
          {KNOWN_ACTIONS.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
        <TextFilter id="filter-target" label="Target id" value={input.targetId as string | undefined} onApply={(v) => setFilter('targetId', v)} placeholder="an execution, event… id" width="w-72" />
        <TimeRange
          label="At"
          since={input.since as string | undefined}
          until={input.until as string | undefined}
          onChange={(range) => {
            const { cursor: _c, before: _b, since: _s, until: _u, ...rest } = input;
            replace({ ...rest, ...range });
          }}
        />
        <ChipGroup label="Outcome" options={OUTCOMES} selected={(input.outcome as string[] | undefined) ?? []} onChange={(v) => setFilter('outcome', v)} />
      </FilterBar>
      <div className="flex h-8 items-center gap-3 px-4 text-xs text-zinc-500" aria-live="polite">
        {held.arrived > 0 && (
          <button type="button" onClick={held.showLatest} className="rounded-full bg-sky-600 px-2.5 py-0.5 font-medium text-white shadow-xs hover:bg-sky-700">
            {held.arrived} new — show
          </button>
        )}
        {pointerInside && <span className="text-zinc-400">Paused while the pointer is over the rows</span>}
        <span className="ml-auto">{list.data && <Freshness updatedAt={list.dataUpdatedAt} fetching={list.isFetching} />}</span>
      </div>
      <LoadState what="the audit log" loading="Loading the audit log…" error={list.error} pending={list.isPending} />
      {list.data && (
        <>
          <DataTable
            label="Audit entries"
            columns={columns}
            rows={held.rows}
            columnClass={{ at: 'w-20 whitespace-nowrap', outcome: 'w-20', change: 'w-56' }}
            rowClass={(r) => (r.gone ? 'opacity-50' : r.outcome === 'LOST' || r.outcome === 'FAILED' ? 'bg-amber-50/40' : '')}
            rowTestId={() => 'audit-row'}
            onPointerInside={setPointerInside}
            empty={filtered ? 'No audit entries match these filters.' : 'Nothing has been changed yet.'}
          />
          <Pager
            prevCursor={list.data.prevCursor}
            nextCursor={list.data.nextCursor}
            onPage={setPage}
            count={held.rows.length}
            what="entries"
            atStart={!input.cursor && !input.before}
          />
        </>
      )}
    </section>
  );
}
