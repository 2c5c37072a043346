'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { SELF_HEALING, STUCK_DESCRIPTIONS, type StuckReason } from '@/server/common/stuck-reasons';
import { Badge, StatusBadge, StuckBadge } from '../../_components/badges';
import { JsonView } from '../../_components/json-view';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from '../../_components/panel';
import { Age, Countdown, RelativeTime, absoluteTime, formatDuration, useNow } from '../../_components/time';
import { useTRPC } from '../../_trpc/client';
import { RepairPanel } from './repair-panel';
import { LeaseHolder, type Detail } from './parts';
import { Timeline } from './timeline';
import { AuditPanel, EventsPanel } from './side-panels';
import { type Role } from '@/server/common/roles';


/**
 * One execution's story (Temporal's event history, for a marketing journey): how it was
 * enrolled, each step oldest first with its attempts, leases, waits and who resolved them,
 * its emails and errors; then why it is stuck now, what happens next, its data, its events
 * and the audit entries about it. Refreshed live; countdowns tick every second.
 */
export function ExecutionDetail({ id, role }: { id: string; role: Role }) {
  const trpc = useTRPC();
  const { data, error, isPending, dataUpdatedAt, isFetching } = useQuery(trpc.executions.get.queryOptions({ id }, { refetchInterval: LIVE_REFRESH_MS }));

  if (error && !data) {
    return error.data?.code === 'NOT_FOUND' ? (
      <div role="alert" className="rounded-md border border-zinc-200 bg-white px-4 py-6 text-zinc-600">
        No execution <span className="font-mono">{id}</span> in this project. <Link href="/executions" className="text-sky-700 underline">Back to executions</Link>
      </div>
    ) : (
      <LoadError what="this execution" message={error.message} />
    );
  }
  if (isPending || !data) {
    return (
      <p role="status" className="py-8 text-center text-zinc-500">
        Loading the execution…
      </p>
    );
  }

  return (
    <>
      <header className="flex flex-wrap items-center gap-x-3 gap-y-1">
        <h1 className="text-lg font-semibold tracking-tight">
          {data.workflowName} <span className="font-normal text-zinc-400">·</span> {data.contactEmail}
        </h1>
        <StatusBadge status={data.status} />
        {data.stuck.map((s) => (
          <StuckBadge key={s.reason + s.itemId} reason={`stuck: ${s.reason}`} title={STUCK_DESCRIPTIONS[s.reason]} />
        ))}
        <span className="ml-auto text-xs text-zinc-500">
          <Freshness updatedAt={dataUpdatedAt} fetching={isFetching} />
        </span>
      </header>

      <dl className="flex flex-wrap gap-x-8 gap-y-2 rounded-md border border-zinc-200 bg-white px-4 py-3 shadow-xs">
        <Fact label="Execution">
          <span className="font-mono text-xs" title={data.id}>
            {data.id.slice(0, 8)}
          </span>
        </Fact>
        <Fact label="State version">
          <span className="tabular-nums" title="The compare-and-swap fence: every state change increments it">
            v{data.version}
          </span>
        </Fact>
        <Fact label="Current step">{data.stepName ?? <span className="text-zinc-400">none</span>}</Fact>
        <Fact label="Contact">
          <Link href={`/executions?contact=${encodeURIComponent(data.contactId)}`} className="text-sky-700 hover:underline" title="All executions of this contact">
            {data.contactEmail}
          </Link>
        </Fact>
        <Fact label="Workflow">
          <Link href={`/executions?workflowId=${data.workflowId}`} className="text-sky-700 hover:underline" title="All executions of this workflow">
            {data.workflowName}
          </Link>
        </Fact>
        <Fact label="Runs on">
          <Link
            href={`/workflows/${data.workflowId}?version=${data.workflowVersion}`}
            className="text-sky-700 tabular-nums hover:underline"
            data-testid="execution-workflow-version"
            title={`The graph this execution follows: version ${data.workflowVersion} of the workflow (docs/versions.md)`}
          >
            version {data.workflowVersion} of {data.latestVersion}
          </Link>
          {data.workflowVersion < data.latestVersion && (
            <span className="ml-1.5 text-[11px] text-amber-800" title="A later version exists; an operator may move the execution to it (Repair → Move to version)">
              not the latest
            </span>
          )}
        </Fact>
        <Fact label="Started">
          <RelativeTime at={data.startedAt} />
        </Fact>
        <Fact label="Updated">
          <RelativeTime at={data.updatedAt} />
        </Fact>
        <Fact label="Finished">
          <RelativeTime at={data.finishedAt} />
        </Fact>
      </dl>

      <div className="grid items-start gap-4 lg:grid-cols-2 xl:grid-cols-[minmax(0,1fr)_minmax(0,1fr)_minmax(0,1.5fr)]">
        <StuckNow data={data} />
        <NextUp data={data} />
        <RepairPanel executionId={data.id} version={data.version} role={role} actorLabel={(actor) => data.audit.find((a) => a.actor === actor)?.actorLabel ?? undefined} />
      </div>

      <div className="grid items-start gap-4 xl:grid-cols-[minmax(0,3fr)_minmax(0,2fr)]">
        <Timeline data={data} />
        <div className="space-y-4">
          <Panel title="Context" labelledBy="context-heading" summary={<span className="text-xs text-zinc-500">the data its steps read and wrote</span>}>
            <div className="px-4 py-3">
              <JsonView value={data.context} label="context" open />
            </div>
          </Panel>
          <EventsPanel data={data} />
          <AuditPanel data={data} />
        </div>
      </div>
    </>
  );
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="min-w-0">
      <dt className="text-[10.5px] font-medium tracking-wide text-zinc-500 uppercase">{label}</dt>
      <dd className="whitespace-nowrap">{children}</dd>
    </div>
  );
}

function StuckNow({ data }: { data: Detail }) {
  // A poison step (LEASE_EXPIRED on its last attempt) is left to an operator, as "what happens next" says.
  const poisoned = data.next.kind === 'lease' && data.next.attempt >= data.next.maxAttempts;
  return (
    <Panel
      title="Why it is stuck"
      labelledBy="stuck-now-heading"
      summary={
        data.stuck.length === 0 ? (
          <Badge tone="emerald">not stuck</Badge>
        ) : (
          <Badge tone="amber">{data.stuck.length === 1 ? '1 reason' : `${data.stuck.length} reasons`}</Badge>
        )
      }
    >
      <div className="px-4 py-3" data-testid="stuck-now">
        {data.stuck.length === 0 ? (
          <p className="text-zinc-500">
            {['COMPLETED', 'EXITED', 'CANCELLED'].includes(data.status)
              ? 'Nothing holds it up: it has ended.'
              : `Not stuck right now. A state counts as stuck once it lasts past the ${formatDuration(data.graceSeconds * 1000)} grace period.`}
          </p>
        ) : (
          <ul className="space-y-2">
            {data.stuck.map((s) => (
              <li key={s.reason + s.itemId}>
                <div className="flex items-center gap-2">
                  <StuckBadge reason={s.reason} />
                  <span className="text-xs text-amber-800">
                    for <Age since={s.since} />
                  </span>
                </div>
                <p className="mt-0.5 text-zinc-700 first-letter:uppercase">{STUCK_DESCRIPTIONS[s.reason as StuckReason]}.</p>
                <p className="text-xs text-zinc-500">
                  Cleared by{' '}
                  {poisoned && s.reason === 'LEASE_EXPIRED'
                    ? 'an operator: the lease ran out on every attempt, so the workers no longer retry it'
                    : SELF_HEALING.includes(s.reason as StuckReason)
                      ? 'the workers, once running'
                      : 'an operator'}
                  .
                </p>
              </li>
            ))}
          </ul>
        )}
      </div>
    </Panel>
  );
}

function NextUp({ data }: { data: Detail }) {
  const now = useNow(1_000);
  const next = data.next;
  let body: ReactNode;
  switch (next.kind) {
    case 'timer': {
      const overdue = new Date(next.at).getTime() < now;
      const subject = next.stepType === 'DELAY' ? `The delay “${next.stepName}”` : `The timeout of “${next.stepName}”`;
      body = overdue ? (
        <p>
          {subject} was due at {absoluteTime(next.at)}, <Age since={next.at} className="font-medium text-amber-800" /> ago, and no timer has fired
          it: a running worker fires it on its next pass.
        </p>
      ) : (
        <p>
          {subject} {next.stepType === 'DELAY' ? 'ends' : 'fires'} <Countdown to={next.at} className="font-semibold" />{' '}
          <span className="text-zinc-500">({absoluteTime(next.at)})</span>
          {next.stepType === 'DELAY' ? '.' : ', unless the event arrives first.'}
        </p>
      );
      break;
    }
    case 'lease':
      body =
        new Date(next.until).getTime() > now ? (
          <p>
            {next.owner ? <LeaseHolder owner={next.owner} /> : 'A worker'} holds “{next.stepName}” (attempt {next.attempt}) until <span className="font-semibold">{absoluteTime(next.until)}</span> (
            <Countdown to={next.until} />
            ). Until then nobody else runs it.
          </p>
        ) : next.attempt >= next.maxAttempts ? (
          <p>
            Nothing, by itself: the lease on “{next.stepName}” ran out on all {next.attempt} attempts (a step that kills its worker), so the workers
            no longer retry it. An operator decides.
          </p>
        ) : (
          <p>
            The lease of {next.owner ? <LeaseHolder owner={next.owner} /> : 'its worker'} on “{next.stepName}” ran out <Age since={next.until} /> ago: the worker died or stalled. A running worker re-claims it as attempt{' '}
            {next.attempt + 1}.
          </p>
        );
      break;
    case 'worker':
      body =
        next.at && new Date(next.at).getTime() > now ? (
          <p>
            A worker retries “{next.stepName}” <Countdown to={next.at} className="font-semibold" />.
          </p>
        ) : (
          <p>
            Ready for a worker{next.at ? (
              <>
                {' '}
                since <RelativeTime at={next.at} everyMs={1_000} />
              </>
            ) : null}
            : the next free worker runs “{next.stepName ?? 'its next step'}”.
          </p>
        );
      break;
    case 'continuation':
      body = (
        <p>
          Its wait “{next.stepName}” was resolved{next.since ? <> <RelativeTime at={next.since} /></> : null}; a worker moves it past the wait.
        </p>
      );
      break;
    case 'operator':
      body = <p>Nothing, by itself: it is {next.why}. An operator decides.</p>;
      break;
    case 'done':
      body = (
        <p>
          Nothing more: it {next.status.toLowerCase()} {next.at ? <RelativeTime at={next.at} /> : null}
          {next.exitReason ? <> ({next.exitReason})</> : null}.
        </p>
      );
      break;
  }
  return (
    <Panel title="What happens next" labelledBy="next-heading">
      <div className="px-4 py-3 text-zinc-800" data-testid="next-up">
        {body}
      </div>
    </Panel>
  );
}

