'use client';

import type { ReactNode } from 'react';
import { Badge, StatusBadge } from '../../_components/badges';
import { JsonView } from '../../_components/json-view';
import { Panel } from '../../_components/panel';
import { Age, Countdown, RelativeTime, absoluteTime, useNow } from '../../_components/time';
import { ErrorText, LeaseHolder, type Detail, type Message, type Step } from './parts';

// The execution's story oldest first: how it was enrolled, then each step with its attempts,
// lease, wait, resolution, emails and errors.

export function Timeline({ data }: { data: Detail }) {
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
        {step.leaseOwner && step.status !== 'RUNNING' && (
          <>
            {' '}
            · last run by <LeaseHolder owner={step.leaseOwner} />
          </>
        )}
      </p>
      {step.status === 'RUNNING' && step.leaseExpiresAt && (
        <p className="text-zinc-700">
          {new Date(step.leaseExpiresAt).getTime() > now ? (
            <>
              {step.leaseOwner ? <LeaseHolder owner={step.leaseOwner} /> : 'A worker'} holds it until {absoluteTime(step.leaseExpiresAt)} (
              <Countdown to={step.leaseExpiresAt} />)
            </>
          ) : (
            <span className="text-amber-800">
              The lease of {step.leaseOwner ? <LeaseHolder owner={step.leaseOwner} /> : 'its worker'} expired <Age since={step.leaseExpiresAt} /> ago
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
