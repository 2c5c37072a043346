'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import Link from 'next/link';
import { useMemo, useState } from 'react';
import { StatusBadge } from '../_components/badges';
import { DataTable, useHeldRows, type Features } from '../_components/data-table';
import { ChipGroup, FilterBar, Pager, TextFilter, useUrlInput } from '../_components/filters';
import { JsonView } from '../_components/json-view';
import { Freshness, LIVE_REFRESH_MS, LoadState } from '../_components/panel';
import { RelativeTime } from '../_components/time';
import { useTRPC } from '../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';
import { RedriveEvent } from './redrive-event';
import { EVENT_SEARCH, type ListEventsInput } from './search';
import { atLeast, type Role } from '@/server/common/roles';

type Row = RouterOutputs['events']['list']['items'][number] & { gone: boolean };

const STATES = [
  { value: 'processed', title: 'dispatched: its enrollments and resumed waits are done' },
  { value: 'pending', title: 'accepted, not dispatched yet' },
  { value: 'retrying', title: 'a dispatch failed; the sweeper tries again with backoff' },
  { value: 'dead', title: 'dead-lettered after its last attempt: waits for an operator' },
];

function Dispatch({ row }: { row: Row }) {
  switch (row.state) {
    case 'processed':
      return (
        <span className="text-xs text-zinc-500">
          <RelativeTime at={row.processedAt} />
          {row.dispatchAttempts > 1 && <> · {row.dispatchAttempts} attempts</>}
        </span>
      );
    case 'pending':
      return (
        <span className="text-xs text-zinc-500">
          first attempt <RelativeTime at={row.nextDispatchAt} />
        </span>
      );
    case 'retrying':
      return (
        <span className="text-xs text-amber-800">
          {row.dispatchAttempts} failed · next <RelativeTime at={row.nextDispatchAt} />
        </span>
      );
    default:
      return (
        <span className="text-xs text-red-800">
          <RelativeTime at={row.deadAt} /> after {row.dispatchAttempts} attempts
        </span>
      );
  }
}

const helper = createColumnHelper<Features, Row>();
const COLUMNS = helper.columns([
  helper.accessor('name', {
    header: 'Event',
    cell: ({ row }) => (
      <span id={`event-${row.original.id}`} className="inline-flex flex-col">
        <code className="font-mono text-xs font-semibold">{row.original.name}</code>
        <span className="font-mono text-[10.5px] text-zinc-400" title={row.original.id}>
          {row.original.id.slice(0, 8)}
          {row.original.idempotencyKey && <> · key {row.original.idempotencyKey}</>}
        </span>
      </span>
    ),
  }),
  helper.accessor('contactEmail', {
    header: 'Contact',
    cell: ({ row }) => (row.original.contactEmail ? <span className="text-zinc-700">{row.original.contactEmail}</span> : <span className="text-zinc-400">anonymous</span>),
  }),
  helper.accessor('createdAt', { header: 'Accepted', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
  helper.display({
    id: 'dispatch',
    header: 'Dispatch',
    cell: ({ row }) => (
      <div className="flex flex-col gap-0.5">
        <span className="flex items-baseline gap-1.5">
          <StatusBadge status={row.original.state} />
          <Dispatch row={row.original} />
        </span>
        {row.original.lastError && row.original.state !== 'processed' && (
          <span className="block max-w-64 truncate font-mono text-[11px] text-red-700" title={row.original.lastError}>
            {row.original.lastError}
          </span>
        )}
      </div>
    ),
  }),
  helper.display({
    id: 'effects',
    header: 'Started / resumed',
    cell: ({ row }) => {
      const { started, resumed } = row.original;
      if (started.length === 0 && resumed.length === 0) return <span className="text-xs text-zinc-400">nothing</span>;
      return (
        <ul className="space-y-0.5 text-xs">
          {started.map((s) => (
            <li key={s.executionId}>
              started{' '}
              <Link href={`/executions/${s.executionId}`} className="text-sky-700 hover:underline">
                {s.workflowName}
              </Link>{' '}
              <span className="text-zinc-400">{s.status.toLowerCase()}</span>
            </li>
          ))}
          {resumed.map((r) => (
            <li key={r.stepExecutionId}>
              resumed{' '}
              <Link href={`/executions/${r.executionId}`} className="text-sky-700 hover:underline">
                {r.workflowName} · {r.stepName}
              </Link>
              {r.branch && <span className="text-zinc-400"> → {r.branch}</span>}
            </li>
          ))}
        </ul>
      );
    },
  }),
  helper.display({
    id: 'data',
    header: 'Data',
    cell: ({ row }) => (
      <div className="max-w-56 min-w-0">
        <JsonView value={row.original.data} label="data" />
      </div>
    ),
  }),
]);

const COLUMN_CLASS: Record<string, string> = {
  name: 'w-44',
  createdAt: 'w-24 whitespace-nowrap',
  dispatch: 'w-64',
  effects: 'w-80',
  data: 'w-56',
  repair: 'w-24 text-right',
};


export function EventsView({ role }: { role: Role }) {
  const trpc = useTRPC();
  const mayRepair = atLeast(role, 'OPERATOR');
  const [redriving, setRedriving] = useState<{ id: string; name: string; contact: string | null } | null>(null);
  const columns = useMemo(
    () =>
      mayRepair
        ? [
            ...COLUMNS,
            helper.display({
              id: 'repair',
              header: () => <span className="sr-only">Repair</span>,
              cell: ({ row }) =>
                row.original.state === 'dead' ? (
                  <button
                    type="button"
                    aria-pressed={redriving?.id === row.original.id}
                    onClick={() => setRedriving(redriving?.id === row.original.id ? null : { id: row.original.id, name: row.original.name, contact: row.original.contactEmail })}
                    className="inline-flex h-7 items-center rounded border border-zinc-300 bg-white px-2.5 text-xs font-medium whitespace-nowrap text-zinc-700 shadow-xs hover:border-zinc-400"
                  >
                    Redrive…
                  </button>
                ) : null,
            }),
          ]
        : COLUMNS,
    [mayRepair, redriving],
  );
  const { input, setFilter, setPage, clear } = useUrlInput(EVENT_SEARCH);
  const list = useQuery(trpc.events.list.queryOptions(input as ListEventsInput, { refetchInterval: LIVE_REFRESH_MS, placeholderData: keepPreviousData }));
  const [pointerInside, setPointerInside] = useState(false);
  const held = useHeldRows<Row>(JSON.stringify(input), list.isPlaceholderData ? undefined : (list.data?.items as Row[] | undefined), pointerInside);
  const filtered = Object.keys(input).some((k) => k !== 'cursor' && k !== 'before');

  return (
    <section aria-label="Events" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <FilterBar onClear={clear} active={filtered}>
        <TextFilter id="filter-name" label="Name" value={input.name as string | undefined} onApply={(v) => setFilter('name', v)} placeholder="exact, e.g. purchase" />
        <TextFilter
          id="filter-contact"
          label="Contact"
          value={input.contact as string | undefined}
          onApply={(v) => setFilter('contact', v)}
          placeholder="email or contact id"
          width="w-56"
        />
        <ChipGroup label="Dispatch" options={STATES} selected={(input.state as string[] | undefined) ?? []} onChange={(v) => setFilter('state', v)} />
      </FilterBar>
      <div className="flex h-8 items-center gap-3 px-4 text-xs text-zinc-500" aria-live="polite">
        {held.arrived > 0 && (
          <button type="button" onClick={held.showLatest} className="rounded-full bg-sky-600 px-2.5 py-0.5 font-medium text-white shadow-xs hover:bg-sky-700">
            {held.arrived} new or changed — show
          </button>
        )}
        {pointerInside && <span className="text-zinc-400">Paused while the pointer is over the rows</span>}
        <span className="ml-auto">{list.data && <Freshness updatedAt={list.dataUpdatedAt} fetching={list.isFetching} />}</span>
      </div>
      {redriving && (
        <div className="border-b border-zinc-200 px-4 py-2.5">
          <p className="text-[13px] font-semibold">
            Redrive the dead-lettered event <code className="font-mono text-xs">{redriving.name}</code>
            {redriving.contact && <span className="font-normal text-zinc-600"> of {redriving.contact}</span>}
            <span className="font-mono text-[11px] font-normal text-zinc-400"> · {redriving.id.slice(0, 8)}</span>
          </p>
          <RedriveEvent key={redriving.id} eventId={redriving.id} name={redriving.name} onClose={() => setRedriving(null)} />
        </div>
      )}
      <LoadState what="the events" loading="Loading events…" error={list.error} pending={list.isPending} />
      {list.data && (
        <>
          <DataTable
            label="Events"
            columns={columns}
            rows={held.rows}
            columnClass={COLUMN_CLASS}
            rowClass={(r) => (r.gone ? 'opacity-50' : r.state === 'dead' ? 'bg-red-50/50' : r.state === 'retrying' ? 'bg-amber-50/40' : '')}
            rowTestId={() => 'event-row'}
            onPointerInside={setPointerInside}
            empty={filtered ? 'No events match these filters.' : 'No events tracked yet. events.track (or POST /api/v1/events) records one.'}
          />
          <Pager
            prevCursor={list.data.prevCursor}
            nextCursor={list.data.nextCursor}
            onPage={setPage}
            count={held.rows.length}
            what="events"
            atStart={!input.cursor && !input.before}
          />
        </>
      )}
    </section>
  );
}
