'use client';

import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useMemo, useState } from 'react';
import { Badge } from '../_components/badges';
import { DataTable, useHeldRows, type Features } from '../_components/data-table';
import { Field, FilterBar, INPUT_CLASS, Pager, TextFilter, useUrlInput } from '../_components/filters';
import { useHydrated } from '../_components/hydrated';
import { JsonObjectField, issuesUnder, parseJsonObject } from '../_components/json-object-field';
import { Freshness, LIVE_REFRESH_MS, LoadState } from '../_components/panel';
import { RelativeTime } from '../_components/time';
import { useTRPC } from '../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';
import { CONTACT_SEARCH, mayManageContacts, type ListContactsInput } from './search';
import type { Role } from '@/server/common/roles';

type Row = RouterOutputs['contacts']['list']['items'][number] & { gone: boolean };

/** How many of a contact's data fields the table shows; the rest are counted. */
const DATA_KEYS_SHOWN = 3;

function scalarText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const button =
  'inline-flex h-7 items-center rounded border px-2.5 text-xs font-medium whitespace-nowrap shadow-xs disabled:cursor-not-allowed disabled:opacity-50';

/** Search by one data field: key and value applied together (Enter or Search), both in the URL. */
function DataFilter({
  dataKey,
  dataValue,
  onApply,
}: {
  dataKey: string | undefined;
  dataValue: string | undefined;
  onApply: (key: string | undefined, value: string | undefined) => void;
}) {
  const [key, setKey] = useState(dataKey ?? '');
  const [value, setValue] = useState(dataValue ?? '');
  useEffect(() => {
    setKey(dataKey ?? '');
    setValue(dataValue ?? '');
  }, [dataKey, dataValue]);
  const half = (key.trim() === '') !== (value.trim() === '');
  // It writes the URL: live only once the page is (see useUrlInput).
  const hydrated = useHydrated();
  return (
    <form
      role="group"
      aria-label="Search by a data field"
      className="flex items-end gap-1.5"
      onSubmit={(e) => {
        e.preventDefault();
        if (half) return;
        onApply(key.trim() || undefined, value.trim() || undefined);
      }}
    >
      <Field label="Data field" htmlFor="filter-data-key">
        <input id="filter-data-key" disabled={!hydrated} value={key} onChange={(e) => setKey(e.target.value)} placeholder="key, e.g. plan" className={`${INPUT_CLASS} w-32`} />
      </Field>
      <span className="pb-1 text-zinc-400">=</span>
      <Field label="Value" htmlFor="filter-data-value">
        <input id="filter-data-value" disabled={!hydrated} value={value} onChange={(e) => setValue(e.target.value)} placeholder="e.g. pro" className={`${INPUT_CLASS} w-32`} />
      </Field>
      <button type="submit" disabled={!hydrated || half} className={`${button} border-zinc-300 bg-white text-zinc-700 hover:border-zinc-400`} title={half ? 'Give both a key and a value' : undefined}>
        Search
      </button>
    </form>
  );
}

/** Create a contact, or merge data into the one with this email (contacts.upsert). */
function AddContact({ onClose }: { onClose: () => void }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [dataText, setDataText] = useState('{\n  \n}');
  const parsed = parseJsonObject(dataText, { emptyIsObject: true });
  const upsert = useMutation(
    trpc.contacts.upsert.mutationOptions({
      onSuccess: (contact) => {
        void queryClient.invalidateQueries({ queryKey: trpc.contacts.list.queryKey() });
        router.push(`/contacts/${contact.id}`);
      },
    }),
  );
  const issues = upsert.error?.data?.zodError?.issues;
  const emailIssues = issuesUnder('email', issues);
  return (
    <form
      aria-label="Add a contact"
      className="grid grid-cols-[minmax(0,18rem)_minmax(0,28rem)_auto] items-start gap-3 border-b border-zinc-200 bg-zinc-50/60 px-4 py-3"
      onSubmit={(e) => {
        e.preventDefault();
        if (!parsed.ok) return;
        upsert.mutate({ email: email.trim(), data: parsed.value });
      }}
    >
      <div className="flex flex-col gap-0.5">
        <label htmlFor="new-contact-email" className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">
          Email
        </label>
        <input
          id="new-contact-email"
          type="email"
          required
          value={email}
          onChange={(e) => setEmail(e.target.value)}
          aria-invalid={emailIssues.length > 0}
          placeholder="ada@example.com"
          className={`${INPUT_CLASS} w-full`}
        />
        {emailIssues.map((i) => (
          <p key={i} role="alert" className="font-mono text-[11.5px] text-red-700">
            {i}
          </p>
        ))}
        <p className="text-[11px] text-zinc-500">An existing email (any case) gets this data merged in.</p>
      </div>
      <JsonObjectField label="Data (JSON object, optional)" value={dataText} onChange={setDataText} parse={parsed} serverIssues={issuesUnder('data', issues)} rows={3} />
      <div className="flex gap-1.5 pt-4">
        <button type="submit" disabled={!parsed.ok || upsert.isPending} className={`${button} border-sky-700 bg-sky-600 text-white hover:bg-sky-700`}>
          {upsert.isPending ? 'Saving…' : 'Save contact'}
        </button>
        <button type="button" onClick={onClose} className={`${button} border-zinc-300 bg-white text-zinc-700`}>
          Cancel
        </button>
      </div>
      {upsert.error && !issues?.length && (
        <p role="alert" className="col-span-3 text-xs text-red-700">
          Could not save: {upsert.error.message}
        </p>
      )}
    </form>
  );
}

const helper = createColumnHelper<Features, Row>();

export function ContactsView({ role }: { role: Role }) {
  const trpc = useTRPC();
  const { input, setFilter, setPage, clear, replace } = useUrlInput(CONTACT_SEARCH);
  const list = useQuery(trpc.contacts.list.queryOptions(input as ListContactsInput, { refetchInterval: LIVE_REFRESH_MS, placeholderData: keepPreviousData }));
  const [pointerInside, setPointerInside] = useState(false);
  const held = useHeldRows<Row>(JSON.stringify(input), list.isPlaceholderData ? undefined : (list.data?.items as Row[] | undefined), pointerInside);
  const [adding, setAdding] = useState(false);
  const filtered = Object.keys(input).some((k) => k !== 'cursor' && k !== 'before');
  const mayManage = mayManageContacts(role);

  const applyData = useMemo(
    () => (key: string | undefined, value: string | undefined) => {
      const { cursor: _c, before: _b, ...rest } = input;
      replace({ ...rest, dataKey: key, dataValue: value });
    },
    [input, replace],
  );

  const columns = useMemo(
    () =>
      helper.columns([
        helper.accessor('email', {
          header: 'Contact',
          cell: ({ row }) => (
            <span className="flex max-w-72 flex-col">
              <Link href={`/contacts/${row.original.id}`} title={row.original.email} className="truncate font-medium text-sky-700 hover:underline">
                {row.original.email}
              </Link>
              <span className="font-mono text-[10.5px] text-zinc-400" title={row.original.id}>
                {row.original.id.slice(0, 8)}
              </span>
            </span>
          ),
        }),
        helper.accessor('subscribed', {
          header: 'Subscribed',
          cell: (c) => (c.getValue() ? <Badge tone="emerald">subscribed</Badge> : <Badge tone="zinc" title="Emails to this contact are skipped">unsubscribed</Badge>),
        }),
        helper.display({
          id: 'data',
          header: 'Data',
          cell: ({ row }) => {
            const entries = Object.entries(row.original.data ?? {});
            if (entries.length === 0) return <span className="text-xs text-zinc-400">no data</span>;
            return (
              <span className="flex flex-wrap items-center gap-1">
                {entries.slice(0, DATA_KEYS_SHOWN).map(([key, value]) => {
                  const scalar = value === null || typeof value !== 'object';
                  const text = scalar ? scalarText(value) : Array.isArray(value) ? `[${value.length}]` : '{…}';
                  return scalar ? (
                    <button
                      key={key}
                      type="button"
                      title={`Contacts whose ${key} is ${text}`}
                      onClick={() => applyData(key, text)}
                      className="max-w-48 truncate rounded bg-zinc-100 px-1.5 py-px font-mono text-[11px] text-zinc-700 hover:bg-sky-100 hover:text-sky-900"
                    >
                      <span className="text-zinc-500">{key}:</span> {text}
                    </button>
                  ) : (
                    <span key={key} className="rounded bg-zinc-100 px-1.5 py-px font-mono text-[11px] text-zinc-500">
                      {key}: {text}
                    </span>
                  );
                })}
                {entries.length > DATA_KEYS_SHOWN && <span className="text-[11px] text-zinc-400">+{entries.length - DATA_KEYS_SHOWN} more</span>}
              </span>
            );
          },
        }),
        helper.display({
          id: 'executions',
          header: 'Executions',
          cell: ({ row }) =>
            row.original.executionCount === 0 ? (
              <span className="text-xs text-zinc-400">none</span>
            ) : (
              <Link
                href={`/executions?contact=${encodeURIComponent(row.original.id)}`}
                className="text-xs text-zinc-700 tabular-nums hover:text-sky-700 hover:underline"
                title="This contact's executions"
              >
                {row.original.activeCount > 0 && <span className="font-medium text-sky-800">{row.original.activeCount} active · </span>}
                {row.original.executionCount} total
              </Link>
            ),
        }),
        helper.accessor('createdAt', { header: 'Created', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
        helper.accessor('updatedAt', { header: 'Updated', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
      ]),
    [applyData],
  );

  return (
    <section aria-label="Contacts" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <FilterBar onClear={clear} active={filtered}>
        <TextFilter
          id="filter-email"
          label="Email starts with"
          value={input.search as string | undefined}
          onApply={(v) => setFilter('search', v)}
          placeholder="e.g. ada@ or ada@example"
          width="w-56"
        />
        <DataFilter dataKey={input.dataKey as string | undefined} dataValue={input.dataValue as string | undefined} onApply={applyData} />
        {mayManage && (
          <div className="ml-auto flex gap-1.5 self-end">
            {/* Not prefetched: a CSV import is an occasional errand, not the next click. */}
            <Link href="/enroll" prefetch={false} className={`${button} border-zinc-300 bg-white text-zinc-700 hover:border-zinc-400`}>
              Import CSV
            </Link>
            <button
              type="button"
              aria-expanded={adding}
              onClick={() => setAdding(!adding)}
              className={`${button} border-sky-700 bg-sky-600 text-white hover:bg-sky-700`}
            >
              Add contact
            </button>
          </div>
        )}
      </FilterBar>
      {adding && mayManage && <AddContact onClose={() => setAdding(false)} />}
      <div className="flex h-8 items-center gap-3 px-4 text-xs text-zinc-500" aria-live="polite">
        {held.arrived > 0 && (
          <button type="button" onClick={held.showLatest} className="rounded-full bg-sky-600 px-2.5 py-0.5 font-medium text-white shadow-xs hover:bg-sky-700">
            {held.arrived} new or changed — show
          </button>
        )}
        {pointerInside && <span className="text-zinc-400">Paused while the pointer is over the rows</span>}
        <span className="ml-auto">{list.data && <Freshness updatedAt={list.dataUpdatedAt} fetching={list.isFetching} />}</span>
      </div>
      <LoadState what="the contacts" loading="Loading contacts…" error={list.error} pending={list.isPending} />
      {list.data && (
        <>
          <DataTable
            label="Contacts"
            columns={columns}
            rows={held.rows}
            columnClass={{ email: 'w-72', subscribed: 'w-28', executions: 'w-36 whitespace-nowrap', createdAt: 'w-28 whitespace-nowrap', updatedAt: 'w-28 whitespace-nowrap' }}
            rowClass={(r) => (r.gone ? 'opacity-50' : '')}
            rowTestId={() => 'contact-row'}
            onPointerInside={setPointerInside}
            empty={
              filtered
                ? 'No contacts match this search.'
                : mayManage
                  ? 'No contacts yet. Add one, import a CSV, or enroll by email through the API.'
                  : 'No contacts yet.'
            }
          />
          <Pager
            prevCursor={list.data.prevCursor}
            nextCursor={list.data.nextCursor}
            onPage={setPage}
            count={held.rows.length}
            what="contacts"
            atStart={!input.cursor && !input.before}
          />
        </>
      )}
    </section>
  );
}
