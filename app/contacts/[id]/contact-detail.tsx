'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { Badge, StatusBadge } from '../../_components/badges';
import { DataTable, type Features } from '../../_components/data-table';
import { JsonView } from '../../_components/json-view';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from '../../_components/panel';
import { RelativeTime, absoluteTime, formatDuration } from '../../_components/time';
import { useTRPC } from '../../_trpc/client';
import { mayManageContacts, type ContactDetail as Detail } from '../search';
import type { Role } from '@/server/common/roles';
import { DataEditor } from './data-editor';
import { EnrollForm } from './enroll-form';
import { JourneyTimeline } from './journey-timeline';

// One contact: who they are (data, subscribed), and their journey — every execution across
// workflows on one time axis and in a compact table, the events tracked for them and the
// emails sent to them. Marketers edit the data, (un)subscribe and enroll from here;
// viewers read. Refreshed live.

type Execution = Detail['executions'][number];
type EventRow = Detail['events'][number];
type MessageRow = Detail['messages'][number];

const button = 'inline-flex h-7 items-center rounded border px-2.5 text-xs font-medium whitespace-nowrap shadow-xs disabled:cursor-not-allowed disabled:opacity-50';

const executionHelper = createColumnHelper<Features, Execution>();
const EXECUTION_COLUMNS = executionHelper.columns([
  executionHelper.accessor('workflowName', {
    header: 'Workflow',
    cell: ({ row }) => (
      <Link href={`/executions/${row.original.id}`} className="inline-flex flex-col" data-testid="journey-execution-link">
        <span className="font-medium text-sky-700 hover:underline">{row.original.workflowName}</span>
        <span className="font-mono text-[10.5px] text-zinc-400">{row.original.id.slice(0, 8)}</span>
      </Link>
    ),
  }),
  executionHelper.accessor('status', { header: 'Status', cell: (c) => <StatusBadge status={c.getValue()} /> }),
  executionHelper.display({
    id: 'step',
    header: 'Current step',
    cell: ({ row }) =>
      row.original.stepName ? (
        <span className="text-zinc-700">
          {row.original.stepName} <span className="text-[11px] text-zinc-400">{row.original.stepType?.toLowerCase().replaceAll('_', ' ')}</span>
        </span>
      ) : (
        <span className="text-zinc-400">{row.original.exitReason ?? row.original.lastError ?? '—'}</span>
      ),
  }),
  executionHelper.accessor('startedAt', { header: 'Started', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
  executionHelper.display({
    id: 'took',
    header: 'Took',
    cell: ({ row }) =>
      row.original.finishedAt ? (
        <span className="text-zinc-600 tabular-nums" title={`finished ${absoluteTime(row.original.finishedAt)}`}>
          {formatDuration(new Date(row.original.finishedAt).getTime() - new Date(row.original.startedAt).getTime())}
        </span>
      ) : (
        <span className="text-xs text-sky-800">in progress</span>
      ),
  }),
]);

const eventHelper = createColumnHelper<Features, EventRow>();
function eventColumns(contactId: string) {
  return eventHelper.columns([
    eventHelper.accessor('name', {
      header: 'Event',
      cell: ({ row }) => (
        <Link href={`/events?contact=${encodeURIComponent(contactId)}#event-${row.original.id}`} className="font-mono text-xs font-semibold text-sky-700 hover:underline">
          {row.original.name}
        </Link>
      ),
    }),
    eventHelper.accessor('createdAt', { header: 'Tracked', cell: (c) => <RelativeTime at={c.getValue()} className="text-zinc-600" /> }),
    eventHelper.accessor('state', {
      header: 'Dispatch',
      cell: ({ row }) => (
        <span className="flex flex-col gap-0.5">
          <StatusBadge status={row.original.state} />
          {row.original.lastError && row.original.state !== 'processed' && (
            <span className="block max-w-48 truncate font-mono text-[11px] text-red-700" title={row.original.lastError}>
              {row.original.lastError}
            </span>
          )}
        </span>
      ),
    }),
    eventHelper.display({ id: 'data', header: 'Data', cell: ({ row }) => <JsonView value={row.original.data} label="data" /> }),
  ]);
}

const messageHelper = createColumnHelper<Features, MessageRow>();
const MESSAGE_COLUMNS = messageHelper.columns([
  messageHelper.accessor('subject', {
    header: 'Email',
    cell: ({ row }) => (
      <span className="inline-flex flex-col">
        <span className="text-zinc-800">{row.original.subject}</span>
        <Link href={`/executions/${row.original.executionId}`} className="text-[11px] text-sky-700 hover:underline">
          {row.original.workflowName}
        </Link>
      </span>
    ),
  }),
  messageHelper.accessor('status', {
    header: 'Status',
    cell: ({ row }) => (
      <span className="flex flex-col gap-0.5">
        <StatusBadge status={row.original.status} />
        {row.original.error && (
          <span className="block max-w-48 truncate font-mono text-[11px] text-red-700" title={row.original.error}>
            {row.original.error}
          </span>
        )}
      </span>
    ),
  }),
  messageHelper.display({
    id: 'at',
    header: 'Sent',
    cell: ({ row }) =>
      row.original.sentAt ? (
        <RelativeTime at={row.original.sentAt} className="text-zinc-600" />
      ) : (
        <span className="text-xs text-zinc-500">
          queued <RelativeTime at={row.original.createdAt} />
        </span>
      ),
  }),
]);

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <dt className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">{label}</dt>
      <dd className="mt-0.5">{children}</dd>
    </div>
  );
}

function SubscribeToggle({ contactId, subscribed }: { contactId: string; subscribed: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const set = useMutation(
    trpc.contacts.setSubscribed.mutationOptions({
      onSuccess: (contact) =>
        queryClient.setQueryData(trpc.contacts.get.queryKey({ id: contactId }), (old) => old && { ...old, subscribed: contact.subscribed, updatedAt: contact.updatedAt }),
      onSettled: () => {
        void queryClient.invalidateQueries({ queryKey: trpc.contacts.get.queryKey({ id: contactId }) });
        void queryClient.invalidateQueries({ queryKey: trpc.contacts.list.queryKey() });
      },
    }),
  );
  return (
    <span className="inline-flex items-center gap-2">
      <button
        type="button"
        disabled={set.isPending}
        onClick={() => set.mutate({ id: contactId, subscribed: !subscribed })}
        className={`${button} border-zinc-300 bg-white text-zinc-700 hover:border-zinc-400`}
        title={subscribed ? 'Stop sending emails to this contact: SEND_EMAIL steps skip them' : 'Send emails to this contact again'}
      >
        {set.isPending ? 'Saving…' : subscribed ? 'Unsubscribe' : 'Subscribe'}
      </button>
      {set.error && (
        <span role="alert" className="text-xs text-red-700">
          {set.error.message}
        </span>
      )}
    </span>
  );
}

export function ContactDetail({ id, role }: { id: string; role: Role }) {
  const trpc = useTRPC();
  const { data, error, isPending, dataUpdatedAt, isFetching } = useQuery(trpc.contacts.get.queryOptions({ id }, { refetchInterval: LIVE_REFRESH_MS }));
  const mayManage = mayManageContacts(role);

  if (error && !data) {
    return error.data?.code === 'NOT_FOUND' ? (
      <div role="alert" className="rounded-md border border-zinc-200 bg-white px-4 py-6 text-zinc-600">
        No contact <span className="font-mono">{id}</span> in this project.{' '}
        <Link href="/contacts" className="text-sky-700 underline">
          Back to contacts
        </Link>
      </div>
    ) : (
      <LoadError what="this contact" message={error.message} />
    );
  }
  if (isPending || !data) {
    return (
      <p role="status" className="py-8 text-center text-zinc-500">
        Loading the contact…
      </p>
    );
  }

  const active = data.executions.filter((e) => e.status === 'RUNNING' || e.status === 'WAITING').length;
  const workflowCount = new Set(data.executions.map((e) => e.workflowId)).size;
  const more = (shown: number, total: number, what: string) => {
    const noun = total === 1 ? what.replace(/s$/, '') : what;
    return total > shown ? `latest ${shown} of ${total.toLocaleString()} ${noun}` : `${total.toLocaleString()} ${noun}`;
  };

  return (
    <>
      <header className="flex flex-wrap items-center gap-x-3 gap-y-1">
        <h1 className="text-lg font-semibold tracking-tight">{data.email}</h1>
        {data.subscribed ? <Badge tone="emerald">subscribed</Badge> : <Badge tone="zinc" title="SEND_EMAIL steps skip this contact">unsubscribed</Badge>}
        {mayManage && <SubscribeToggle contactId={data.id} subscribed={data.subscribed} />}
        <span className="ml-auto text-xs text-zinc-500">
          <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} />
        </span>
      </header>

      <dl className="flex flex-wrap gap-x-8 gap-y-2 rounded-md border border-zinc-200 bg-white px-4 py-3 shadow-xs">
        <Fact label="Contact">
          <span className="font-mono text-xs" title={data.id}>
            {data.id.slice(0, 8)}
          </span>
        </Fact>
        <Fact label="Created">
          <RelativeTime at={data.createdAt} />
        </Fact>
        <Fact label="Updated">
          <RelativeTime at={data.updatedAt} />
        </Fact>
        <Fact label="Executions">
          <Link href={`/executions?contact=${encodeURIComponent(data.id)}`} className="text-sky-700 tabular-nums hover:underline">
            {active > 0 && `${active} active · `}
            {data.executionCount.toLocaleString()} total
          </Link>
        </Fact>
        <Fact label="Events">
          <Link href={`/events?contact=${encodeURIComponent(data.id)}`} className="text-sky-700 tabular-nums hover:underline">
            {data.eventCount.toLocaleString()} tracked
          </Link>
        </Fact>
        <Fact label="Emails">
          <span className="tabular-nums">{data.messages.length.toLocaleString()}</span>
        </Fact>
      </dl>

      <Panel
        title="Journey"
        labelledBy="journey-heading"
        summary={
          <span className="text-xs text-zinc-500">
            {more(data.executions.length, data.executionCount, 'executions')} across {workflowCount} workflow{workflowCount === 1 ? '' : 's'}
          </span>
        }
      >
        <JourneyTimeline executions={data.executions} events={data.events} messages={data.messages} />
        {data.executions.length > 0 && (
          <div className="border-t border-zinc-200">
            <DataTable label="Journey executions" columns={EXECUTION_COLUMNS} rows={data.executions} rowTestId={() => 'journey-row'} empty="No executions." columnClass={{ status: 'w-28', startedAt: 'w-28 whitespace-nowrap', took: 'w-28' }} />
          </div>
        )}
      </Panel>

      <div className={`grid gap-4 ${mayManage ? 'xl:grid-cols-2' : ''}`}>
        <Panel title="Data" labelledBy="data-heading" summary={<span className="text-xs text-zinc-500">{Object.keys(data.data).length} fields</span>}>
          {mayManage ? (
            <DataEditor key={data.id} contactId={data.id} data={data.data} updatedAt={data.updatedAt} />
          ) : (
            <div className="px-4 py-3">
              <JsonView value={data.data} label="data" open />
            </div>
          )}
        </Panel>
        {mayManage && (
          <Panel title="Enroll into a workflow" labelledBy="enroll-heading">
            <EnrollForm contactId={data.id} email={data.email} />
          </Panel>
        )}
      </div>

      <div className="grid gap-4 xl:grid-cols-2">
        <Panel title="Events tracked" labelledBy="events-heading" summary={<span className="text-xs text-zinc-500">{more(data.events.length, data.eventCount, 'events')}</span>}>
          <DataTable label="Events tracked" columns={eventColumns(data.id)} rows={data.events} rowTestId={() => 'contact-event-row'} empty="No events tracked for this contact." columnClass={{ createdAt: 'w-28 whitespace-nowrap', state: 'w-32' }} />
        </Panel>
        <Panel title="Emails" labelledBy="emails-heading" summary={<span className="text-xs text-zinc-500">of the executions shown</span>}>
          <DataTable label="Emails" columns={MESSAGE_COLUMNS} rows={data.messages} rowTestId={() => 'contact-message-row'} empty="No emails sent to this contact." columnClass={{ status: 'w-32', at: 'w-32 whitespace-nowrap' }} />
        </Panel>
      </div>
    </>
  );
}
