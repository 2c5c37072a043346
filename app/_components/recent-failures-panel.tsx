'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { RouterOutputs } from '@/app/_trpc/types';
import { useTRPC } from '../_trpc/client';
import { RECENT_FAILURES_INPUT } from './overview-inputs';
import { Badge } from './badges';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from './panel';
import { RelativeTime } from './time';

type Failure = RouterOutputs['overview']['recentFailures'][number];


const KINDS: Record<Failure['kind'], { label: string; when: string; title: string }> = {
  EXECUTION_FAILED: { label: 'execution failed', when: 'failed', title: 'The execution FAILED: its step ran out of attempts' },
  EVENT_DEAD: { label: 'event dead', when: 'dead-lettered', title: 'The tracked event was dead-lettered after its last dispatch attempt' },
  MESSAGE_FAILED: { label: 'email failed', when: 'queued', title: 'Sending the email failed; it waits for an operator (resend, mark sent or give up)' },
};

/** Where an operator acts on it: the execution's page, or the dead letters of the events page. */
function hrefOf(f: Failure): string {
  if (f.kind === 'EVENT_DEAD') {
    const params = new URLSearchParams({ state: 'dead' });
    if (f.subject) params.set('name', f.subject);
    if (f.contactId) params.set('contact', f.contactId);
    return `/events?${params}`;
  }
  return `/executions/${f.executionId}`;
}

function FailureRow({ failure: f }: { failure: Failure }) {
  const kind = KINDS[f.kind];
  const href = hrefOf(f);
  const where =
    f.kind === 'EVENT_DEAD'
      ? `event ${f.subject ?? ''}${f.attempts ? ` · ${f.attempts} attempts` : ''}`
      : [f.workflowName, f.stepName].filter(Boolean).join(' › ');
  return (
    <li className="px-4 py-2 hover:bg-zinc-50" data-testid="failure" data-kind={f.kind}>
      <div className="flex items-baseline gap-2">
        <Badge tone="red" title={kind.title}>
          {kind.label}
        </Badge>
        <Link
          href={href}
          className="min-w-0 truncate font-medium text-zinc-800 hover:underline"
          title={f.kind === 'EVENT_DEAD' ? 'List the dead-lettered events of this contact' : 'Open the execution'}
        >
          {where || '—'}
        </Link>
        <span className="ml-auto shrink-0 text-xs text-zinc-500">
          {kind.when} <RelativeTime at={f.at} />
        </span>
      </div>
      <div className="mt-0.5 flex items-baseline gap-2 text-xs">
        <span className="shrink-0 text-zinc-500">{f.contactEmail ?? 'no contact'}</span>
        {f.kind === 'MESSAGE_FAILED' && f.subject && <span className="min-w-0 shrink truncate text-zinc-400">“{f.subject}”</span>}
        {/* The full text on hover; the row stays one line. */}
        <span className="min-w-0 flex-1 truncate font-mono text-red-700" title={f.error ?? undefined}>
          {f.error ?? <span className="font-sans text-zinc-400">no error recorded</span>}
        </span>
      </div>
    </li>
  );
}

/**
 * The latest failures (overview.recentFailures), live: FAILED executions, dead-lettered
 * events and failed emails, latest first, each linked to where an operator acts on it.
 */
export function RecentFailuresPanel() {
  const trpc = useTRPC();
  const { data, error, dataUpdatedAt, isFetching, isPending } = useQuery(
    trpc.overview.recentFailures.queryOptions(RECENT_FAILURES_INPUT, { refetchInterval: LIVE_REFRESH_MS }),
  );
  return (
    <Panel
      title="Recent failures"
      labelledBy="failures-heading"
      summary={data && data.length > 0 && <span className="text-xs text-zinc-500">latest {data.length}</span>}
      aside={
        <>
          {data && <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} />}
          <Link href="/stuck" className="font-medium text-sky-700 hover:underline">
            All stuck →
          </Link>
        </>
      }
    >
      {error && <LoadError what="the recent failures" message={error.message} />}
      {isPending && !error && <p className="px-4 py-6 text-zinc-500">Loading the latest failures…</p>}
      {data && data.length === 0 && (
        <p className="px-4 py-6 text-zinc-500" data-testid="no-failures">
          Nothing has failed: no failed execution, dead-lettered event or failed email.
        </p>
      )}
      {data && data.length > 0 && (
        <ul className="divide-y divide-zinc-100" aria-label="Latest failures, latest first">
          {data.map((f) => (
            <FailureRow key={`${f.kind}:${f.id}`} failure={f} />
          ))}
        </ul>
      )}
    </Panel>
  );
}
