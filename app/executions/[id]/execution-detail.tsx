'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { STUCK_DESCRIPTIONS, SELF_HEALING, type StuckReason } from '@/server/repair/stuck-reasons';
import { Badge, StatusBadge, StuckBadge } from '../../_components/badges';
import { JsonView } from '../../_components/json-view';
import { Freshness, LIVE_REFRESH_MS, LoadError, Panel } from '../../_components/panel';
import { Age, Countdown, RelativeTime, absoluteTime, formatDuration, useNow } from '../../_components/time';
import { useTRPC } from '../../_trpc/client';
import type { RouterOutputs } from '../search';
import { RepairPanel } from './repair-panel';

type Detail = RouterOutputs['executions']['get'];
type Step = Detail['steps'][number];
type Message = Detail['messages'][number];
type Role = 'VIEWER' | 'MARKETER' | 'OPERATOR' | 'OWNER';

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
        <Fact label="Version">
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
            A worker holds “{next.stepName}” (attempt {next.attempt}) until <span className="font-semibold">{absoluteTime(next.until)}</span> (
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
            The worker&apos;s lease on “{next.stepName}” ran out <Age since={next.until} /> ago: the worker died. A running worker re-claims it as attempt{' '}
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

// ---------------------------------------------------------------------------
// The timeline

function Timeline({ data }: { data: Detail }) {
  const messagesByStep = new Map<string, Message[]>();
  for (const m of data.messages) messagesByStep.set(m.stepExecutionId, [...(messagesByStep.get(m.stepExecutionId) ?? []), m]);
  const ended = data.finishedAt && ['COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'].includes(data.status);
  return (
    <Panel title="Timeline" labelledBy="timeline-heading" summary={<span className="text-xs text-zinc-500">oldest first</span>}>
      <ol className="relative px-4 py-3" data-testid="timeline">
        <Entry at={data.startedAt} dot="bg-zinc-400" title="Enrolled" testId="timeline-enrolled">
          <Enrollment data={data} />
        </Entry>
        {data.steps.map((step) => (
          <StepEntry key={step.id} step={step} messages={messagesByStep.get(step.id) ?? []} events={data.events} />
        ))}
        {data.steps.length === 0 && !ended && (
          <li className="pb-3 pl-6 text-zinc-500">No step has started yet.</li>
        )}
        {ended && (
          <Entry
            at={data.finishedAt!}
            dot={data.status === 'FAILED' ? 'bg-red-500' : data.status === 'COMPLETED' ? 'bg-emerald-500' : 'bg-zinc-400'}
            title={`Ended: ${data.status.toLowerCase()}`}
            last
          >
            {data.exitReason && <p className="text-zinc-600">Exit reason: {data.exitReason}</p>}
            {data.lastError &&
              (data.steps.some((st) => st.error === data.lastError) ? (
                <p className="text-zinc-600">with the error of its failed step, above</p>
              ) : (
                <ErrorText text={data.lastError} />
              ))}
          </Entry>
        )}
      </ol>
    </Panel>
  );
}

function Entry({ at, dot, title, aside, children, last, testId }: { at: Date; dot: string; title: ReactNode; aside?: ReactNode; children?: ReactNode; last?: boolean; testId?: string }) {
  return (
    <li className="relative pb-4 pl-6" data-testid={testId ?? 'timeline-entry'}>
      {!last && <span className="absolute top-3 bottom-0 left-[5px] w-px bg-zinc-200" aria-hidden />}
      <span className={`absolute top-1.5 left-0 size-[11px] rounded-full ring-2 ring-white ${dot}`} aria-hidden />
      <div className="flex flex-wrap items-baseline gap-x-2">
        <span className="font-medium">{title}</span>
        {aside}
        <span className="ml-auto text-xs text-zinc-500">
          <RelativeTime at={at} />
        </span>
      </div>
      <div className="mt-0.5 space-y-1">{children}</div>
    </li>
  );
}

function Enrollment({ data }: { data: Detail }) {
  const by = data.enrolledBy;
  if (by.kind === 'event') {
    return (
      <p className="text-zinc-600">
        by the event{' '}
        <a href={`#event-${by.eventId}`} className="font-mono text-xs text-sky-700 hover:underline">
          {by.eventName}
        </a>{' '}
        of {data.contactEmail}
      </p>
    );
  }
  if (by.kind === 'actor') {
    return (
      <p className="text-zinc-600">
        by <span className="font-medium text-zinc-800">{by.actorLabel ?? by.actor}</span> (enrollments.enroll)
      </p>
    );
  }
  return <p className="text-zinc-600">by the engine directly (the demo seed, the CLI or a bulk import: see the audit log)</p>;
}

const STEP_DOT: Record<string, string> = {
  COMPLETED: 'bg-emerald-500',
  RUNNING: 'bg-sky-500',
  WAITING: 'bg-amber-500',
  FAILED: 'bg-red-500',
  SKIPPED: 'bg-zinc-300',
  PENDING: 'bg-zinc-300',
};

function configOf(step: Step): Record<string, unknown> {
  return step.stepConfig && typeof step.stepConfig === 'object' ? (step.stepConfig as Record<string, unknown>) : {};
}

function StepEntry({ step, messages, events }: { step: Step; messages: Message[]; events: Detail['events'] }) {
  const now = useNow(1_000);
  const config = configOf(step);
  const resumer = step.resumeEventId ? events.find((e) => e.id === step.resumeEventId) : undefined;
  const parked = step.status === 'WAITING' && !step.resolvedBy;
  return (
    <Entry
      at={step.startedAt}
      dot={STEP_DOT[step.status] ?? 'bg-zinc-300'}
      title={
        <>
          {step.stepName} <span className="text-[11px] font-normal text-zinc-400">{step.stepType}</span>
        </>
      }
      aside={
        <>
          <StatusBadge status={step.status} />
          {step.attempt > 1 && <Badge tone="violet">attempt {step.attempt}</Badge>}
        </>
      }
    >
      <p className="text-xs text-zinc-500">
        claimed {absoluteTime(step.startedAt)}
        {step.finishedAt && <> · finished {absoluteTime(step.finishedAt)}</>}
      </p>
      {step.status === 'RUNNING' && step.leaseExpiresAt && (
        <p className="text-zinc-700">
          {new Date(step.leaseExpiresAt).getTime() > now ? (
            <>
              A worker holds it until {absoluteTime(step.leaseExpiresAt)} (<Countdown to={step.leaseExpiresAt} />)
            </>
          ) : (
            <span className="text-amber-800">
              Its worker&apos;s lease expired <Age since={step.leaseExpiresAt} /> ago
            </span>
          )}
        </p>
      )}
      {step.dueAt && (
        <p className="text-zinc-700">
          {step.stepType === 'WAIT_FOR_EVENT' ? (
            <>
              Waits for <code className="rounded bg-zinc-100 px-1 font-mono text-xs">{String(config.eventName ?? 'an event')}</code> until{' '}
            </>
          ) : (
            <>Wakes at </>
          )}
          <span title={absoluteTime(step.dueAt)}>{absoluteTime(step.dueAt)}</span>
          {parked && (
            <>
              {' '}
              — <Countdown to={step.dueAt} className={new Date(step.dueAt).getTime() < now ? 'font-medium text-amber-800' : 'font-medium'} />
            </>
          )}
        </p>
      )}
      {step.resolvedBy && (
        <p className="text-zinc-700" data-testid="resolution">
          Resolved by <Badge tone={step.resolvedBy === 'OPERATOR' ? 'violet' : step.resolvedBy === 'EVENT' ? 'sky' : 'amber'}>{step.resolvedBy}</Badge>
          {step.resolvedAt && <> at {absoluteTime(step.resolvedAt)}</>}
          {step.resolvedBranch && (
            <>
              {' '}
              → took the <span className="font-semibold">{step.resolvedBranch}</span> branch
            </>
          )}
          {resumer && (
            <>
              {' '}
              · resumed by{' '}
              <a href={`#event-${resumer.id}`} className="font-mono text-xs text-sky-700 hover:underline">
                {resumer.name}
              </a>
            </>
          )}
        </p>
      )}
      {messages.map((m) => (
        <div key={m.id} className="flex flex-wrap items-baseline gap-x-2 rounded bg-zinc-50 px-2 py-1 ring-1 ring-zinc-200" data-testid="message">
          <span className="text-xs text-zinc-500">email</span>
          <StatusBadge status={m.status} />
          <span className="min-w-0 truncate">
            “{m.subject}” to {m.to}
          </span>
          <span className="ml-auto text-xs text-zinc-500">{m.sentAt ? <>sent <RelativeTime at={m.sentAt} /></> : <>queued <RelativeTime at={m.createdAt} /></>}</span>
          {m.error && <ErrorText text={m.error} />}
        </div>
      ))}
      {step.error && <ErrorText text={step.error} />}
      {step.output !== null && step.output !== undefined && <JsonView value={step.output} label="output" />}
    </Entry>
  );
}

/** An error; a long one (a validation report) opens from its first line. */
function ErrorText({ text }: { text: string }) {
  const box = 'w-full overflow-x-auto rounded bg-red-50 px-2 py-1 font-mono text-[11.5px] whitespace-pre-wrap text-red-800 ring-1 ring-red-200';
  const lines = text.split('\n');
  if (lines.length <= 4 && text.length <= 400) return <pre className={box}>{text}</pre>;
  return (
    <details className="w-full">
      <summary className="cursor-pointer truncate font-mono text-[11.5px] text-red-800">
        {lines[0]} <span className="font-sans text-zinc-500">({lines.length} lines)</span>
      </summary>
      <pre className={`${box} mt-1 max-h-64 overflow-y-auto`}>{text}</pre>
    </details>
  );
}

// ---------------------------------------------------------------------------
// Events and audit

function EventsPanel({ data }: { data: Detail }) {
  return (
    <Panel title="Events" labelledBy="events-heading" summary={<span className="text-xs text-zinc-500">{data.events.length}</span>}>
      {data.events.length === 0 ? (
        <p className="px-4 py-3 text-zinc-500">No tracked event started or resumed it.</p>
      ) : (
        <ul className="divide-y divide-zinc-100">
          {data.events.map((ev) => {
            const state = ev.processedAt ? 'processed' : ev.deadAt ? 'dead' : ev.dispatchAttempts > 0 ? 'retrying' : 'pending';
            return (
              <li key={ev.id} id={`event-${ev.id}`} className="space-y-1 px-4 py-2 target:bg-sky-50">
                <div className="flex flex-wrap items-baseline gap-x-2">
                  <code className="font-mono text-xs font-semibold">{ev.name}</code>
                  <span className="text-xs text-zinc-500">{ev.role === 'source' ? 'enrolled it' : 'resumed a wait'}</span>
                  <StatusBadge status={state} />
                  <span className="ml-auto text-xs text-zinc-500">
                    accepted <RelativeTime at={ev.createdAt} />
                  </span>
                </div>
                {ev.lastError && <ErrorText text={ev.lastError} />}
                <div className="flex gap-3">
                  <JsonView value={ev.data} label="data" />
                  <Link href={`/events?name=${encodeURIComponent(ev.name)}&contact=${data.contactId}`} className="ml-auto shrink-0 text-xs text-sky-700 hover:underline">
                    on the events page
                  </Link>
                </div>
              </li>
            );
          })}
        </ul>
      )}
    </Panel>
  );
}

function AuditPanel({ data }: { data: Detail }) {
  return (
    <Panel
      title="Audit"
      labelledBy="audit-heading"
      summary={<span className="text-xs text-zinc-500">{data.audit.length}</span>}
      aside={
        <Link href={`/audit?targetId=${data.id}`} className="text-sky-700 hover:underline">
          in the audit log
        </Link>
      }
    >
      {data.audit.length === 0 ? (
        <p className="px-4 py-3 text-zinc-500">Nobody has acted on this execution by hand.</p>
      ) : (
        <ul className="divide-y divide-zinc-100" data-testid="execution-audit">
          {data.audit.map((a) => (
            <li key={a.id} className="space-y-0.5 px-4 py-2">
              <div className="flex items-baseline gap-x-2">
                <code className="font-mono text-xs font-semibold">{a.action}</code>
                <StatusBadge status={a.outcome} />
                <span className="min-w-0 flex-1 truncate text-xs text-zinc-600" title={a.actor}>
                  {a.actorLabel ?? a.actor}
                </span>
                <span className="text-xs whitespace-nowrap text-zinc-500">
                  <RelativeTime at={a.at} />
                </span>
              </div>
              {a.reason && <p className="text-zinc-700">“{a.reason}”</p>}
            </li>
          ))}
        </ul>
      )}
    </Panel>
  );
}
