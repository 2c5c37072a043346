'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { useMemo, useState } from 'react';
import { StatusBadge } from '../../../_components/badges';
import { DataTable, useHeldRows, type Features } from '../../../_components/data-table';
import { ChipGroup, FilterBar, Pager, useUrlInput } from '../../../_components/filters';
import { Freshness, LIVE_REFRESH_MS, LoadState } from '../../../_components/panel';
import { RelativeTime } from '../../../_components/time';
import { useTRPC } from '../../../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';
import { DELIVERY_LOG_SEARCH, deliveriesInputOf } from '../search';
import { DeliveryDetail } from './delivery-detail';
import { RedeliverButton } from './redeliver-button';

type Row = RouterOutputs['webhooks']['deliveries']['items'][number] & { gone: boolean };

const STATUSES = [
  { value: 'PENDING', title: 'not delivered yet: due, being tried, or waiting for its next attempt' },
  { value: 'DELIVERED', title: 'the endpoint answered 2xx' },
  { value: 'DEAD', title: 'dead-lettered after its last attempt: redeliver it by hand' },
];

const helper = createColumnHelper<Features, Row>();

export function DeliveryLog({ endpointId }: { endpointId: string }) {
  const trpc = useTRPC();
  const { input, setFilter, setPage, clear, replace } = useUrlInput(DELIVERY_LOG_SEARCH);
  const query = deliveriesInputOf(endpointId, input);
  const opened = typeof input.delivery === 'string' ? input.delivery : null;
  const list = useQuery(trpc.webhooks.deliveries.queryOptions(query, { refetchInterval: LIVE_REFRESH_MS, placeholderData: keepPreviousData }));
  const [pointerInside, setPointerInside] = useState(false);
  const held = useHeldRows<Row>(JSON.stringify(query), list.isPlaceholderData ? undefined : (list.data?.items as Row[] | undefined), pointerInside);
  const open = (id: string | null) => replace({ ...input, delivery: id ?? undefined });

  const columns = useMemo(
    () =>
      helper.columns([
        helper.accessor('createdAt', {
          header: 'Time',
          cell: ({ row }) => (
            <button
              type="button"
              onClick={() => open(row.original.id === opened ? null : row.original.id)}
              aria-pressed={row.original.id === opened}
              aria-label={`Open the ${row.original.eventType} delivery ${row.original.webhookId}`}
              className="text-left text-sky-700 hover:underline"
            >
              <RelativeTime at={row.original.createdAt} />
            </button>
          ),
        }),
        helper.accessor('eventType', {
          header: 'Event',
          cell: ({ row }) => (
            <span className="inline-flex flex-col">
              <code className="font-mono text-xs font-semibold">{row.original.eventType}</code>
              <span className="font-mono text-[10.5px] text-zinc-400">{row.original.webhookId.slice(0, 16)}…</span>
            </span>
          ),
        }),
        helper.accessor('status', { header: 'Status', cell: ({ row }) => <StatusBadge status={row.original.status} /> }),
        helper.accessor('attempts', { header: 'Attempts', cell: (c) => <span className="tabular-nums">{c.getValue()}</span> }),
        helper.display({
          id: 'response',
          header: 'Last response',
          cell: ({ row }) =>
            row.original.lastResponseStatus !== null ? (
              <span className={`font-mono text-xs ${row.original.lastResponseStatus < 300 ? 'text-emerald-800' : 'text-red-700'}`}>HTTP {row.original.lastResponseStatus}</span>
            ) : row.original.lastError ? (
              <span className="block max-w-56 truncate font-mono text-[11px] text-red-700" title={row.original.lastError}>
                {row.original.lastError}
              </span>
            ) : (
              <span className="text-xs text-zinc-400">—</span>
            ),
        }),
        helper.accessor('lastLatencyMs', {
          header: 'Latency',
          cell: (c) => (c.getValue() === null ? <span className="text-zinc-400">—</span> : <span className="tabular-nums">{c.getValue()} ms</span>),
        }),
        helper.accessor('nextAttemptAt', {
          header: 'Next attempt',
          cell: ({ row }) => (row.original.status === 'PENDING' ? <RelativeTime at={row.original.nextAttemptAt} className="text-zinc-600" /> : <span className="text-zinc-400">—</span>),
        }),
        helper.display({
          id: 'redeliver',
          header: () => <span className="sr-only">Redeliver</span>,
          cell: ({ row }) => <RedeliverButton key={`${row.original.id}-${row.original.status}`} id={row.original.id} status={row.original.status} label={`Redeliver ${row.original.webhookId}`} />,
        }),
      ]),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [opened, input],
  );

  return (
    <div>
      <section aria-label="Delivery log" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
        <header className="flex items-center gap-3 border-b border-zinc-200 px-4 py-2.5">
          <h2 className="text-[13px] font-semibold">Delivery log</h2>
          <span className="text-xs text-zinc-500">every message to this endpoint, newest first</span>
        </header>
        <FilterBar onClear={clear} active={input.status !== undefined}>
          <ChipGroup
            label="Status"
            options={STATUSES}
            selected={typeof input.status === 'string' ? [input.status] : []}
            onChange={(values) => setFilter('status', values.filter((v) => v !== input.status)[0])}
          />
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
        <LoadState what="the delivery log" loading="Loading deliveries…" error={list.error} pending={list.isPending} />
        {list.data && (
          <>
            <DataTable
              label="Deliveries"
              columns={columns}
              rows={held.rows}
              columnClass={{ createdAt: 'w-24 whitespace-nowrap', status: 'w-24', attempts: 'w-20 text-right', lastLatencyMs: 'w-20 text-right whitespace-nowrap', nextAttemptAt: 'w-28 whitespace-nowrap', redeliver: 'w-28 text-right' }}
              rowClass={(r) => (r.gone ? 'opacity-50' : r.id === opened ? 'bg-sky-50' : r.status === 'DEAD' ? 'bg-red-50/50' : '')}
              rowTestId={() => 'delivery-row'}
              onPointerInside={setPointerInside}
              empty={input.status ? `No ${String(input.status).toLowerCase()} deliveries.` : 'No deliveries yet. "Send test event" sends one now; events of the chosen types arrive as they happen.'}
            />
            <Pager
              prevCursor={null}
              nextCursor={list.data.nextCursor}
              onPage={setPage}
              count={held.rows.length}
              what={held.rows.length === 1 ? 'delivery' : 'deliveries'}
              atStart={!input.cursor}
            />
          </>
        )}
      </section>
      {opened && <DeliveryDetail id={opened} onClose={() => open(null)} />}
    </div>
  );
}
