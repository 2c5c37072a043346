'use client';

import { type ReactNode } from 'react';
import { Badge, StatusBadge } from './badges';
import { absoluteTime } from './time';
import { first, shortId } from './repair-outcome';
import type { Preview } from './repair-types';

// What a repair will do, as its preview says: the change, the branch, whether an email may go
// out again, and the step execution it aims at.

export function Row({ label, children, testId }: { label: string; children: ReactNode; testId?: string }) {
  return (
    <div className="grid grid-cols-[9.5rem_minmax(0,1fr)] gap-3 py-1.5" data-testid={testId}>
      <dt className="text-zinc-500">{label}</dt>
      <dd className="min-w-0">{children}</dd>
    </div>
  );
}

export function PreviewBody({
  preview: p,
  refetching,
  stale,
  children,
}: {
  preview: Preview;
  refetching: boolean;
  stale: boolean;
  /** Rows of the action's own after "Will change" (MIGRATE's move). */
  children?: ReactNode;
}) {
  const t = p.target;
  const plan = p.plan;
  const sendsAgain = plan.sideEffect.emailMayBeSent;
  const mayDuplicate = 'mayDuplicate' in plan.sideEffect && plan.sideEffect.mayDuplicate;
  return (
    <dl className={`divide-y divide-zinc-100 ${stale ? 'opacity-60' : ''}`} data-testid="repair-preview" aria-busy={refetching}>
      <Row label={stale ? 'When previewed' : 'Now'} testId="preview-now">
        <span className="inline-flex flex-wrap items-center gap-2">
          <StatusBadge status={t.kind === 'event' ? (t.deadAt ? 'dead' : t.processedAt ? 'processed' : 'pending') : t.status} />
          <span className="tabular-nums">version v{p.expectedVersion}</span>
          {t.kind === 'execution' && p.action === 'MIGRATE' && <span className="text-zinc-600">runs on workflow version {t.workflowVersionNumber}</span>}
          {t.kind === 'execution' && t.step && (
            <span className="text-zinc-600">
              at “{t.step.name}” <span className="text-[11px] text-zinc-400">{t.step.type}</span>
            </span>
          )}
          {t.kind === 'message' && <span className="text-zinc-600">“{t.subject}” to {t.to}</span>}
          {t.kind === 'event' && <code className="font-mono text-xs">{t.name}</code>}
        </span>
      </Row>
      {t.kind === 'execution' && (
        <Row label="Step execution" testId="preview-step">
          {t.stepRow ? (
            <span className="inline-flex flex-wrap items-center gap-2">
              <code className="font-mono text-xs" title={t.stepRow.id}>
                {shortId(t.stepRow.id)}
              </code>
              <StatusBadge status={t.stepRow.status} />
              <span className="text-zinc-600">attempt {t.stepRow.attempt}</span>
              {t.stepRow.dueAt && <span className="text-zinc-600">deadline {absoluteTime(t.stepRow.dueAt)}</span>}
              {t.stepRow.leaseExpiresAt && t.stepRow.status === 'RUNNING' && <span className="text-zinc-600">lease ran until {absoluteTime(t.stepRow.leaseExpiresAt)}</span>}
            </span>
          ) : (
            <span className="text-zinc-500">none: the current step has no row yet</span>
          )}
        </Row>
      )}
      {t.kind === 'message' && (
        <Row label="Email" testId="preview-step">
          <code className="font-mono text-xs" title={t.id}>
            {shortId(t.id)}
          </code>{' '}
          of step “{t.stepName}”{t.error ? <span className="text-red-700"> · last error: {t.error}</span> : null}
        </Row>
      )}
      {t.kind === 'execution' && p.action === 'FORCE_TIMEOUT' && t.inWindowEvents.length > 0 && (
        <Row label="Events in its window" testId="preview-in-window-events">
          <ul className="space-y-0.5">
            {t.inWindowEvents.map((e, i) => (
              <li key={e.id} className="flex flex-wrap items-baseline gap-2">
                <code className="font-mono text-xs">{e.name}</code>
                <code className="font-mono text-[11px] text-zinc-500" title={e.id}>
                  {shortId(e.id)}
                </code>
                <span className="text-zinc-600">accepted {absoluteTime(e.createdAt)}</span>
                {i === 0 && 'resumeEvent' in plan && (
                  <span className={plan.resumeEvent ? 'font-medium text-violet-800' : 'text-amber-800'}>
                    {plan.resumeEvent ? 'resumes the wait by EVENT, as the timer would' : 'ignored: you chose to time out anyway'}
                  </span>
                )}
              </li>
            ))}
          </ul>
          <p className="text-xs text-zinc-500">Accepted before the deadline and not yet delivered (its dispatch is late, pending or dead-lettered).</p>
        </Row>
      )}
      <Row label="Will change" testId="preview-change">
        <span className={plan.allowed ? 'font-medium' : 'text-zinc-500'}>{plan.allowed ? first(plan.change) : 'Nothing: this action is not allowed now'}</span>
      </Row>
      {children}
      {'branch' in plan && plan.allowed && p.action !== 'MIGRATE' && (
        <Row label="Branch" testId="preview-branch">
          {plan.branch ? <Badge tone="violet">{plan.branch}</Badge> : <span className="text-zinc-600">none taken</span>}
          <span className="text-zinc-600">
            {' → '}
            {plan.nextStep
              ? t.kind === 'execution' && plan.nextStep.id === t.step?.id
                ? `“${plan.nextStep.name}” again`
                : `“${plan.nextStep.name}”`
              : p.action === 'CANCEL'
                ? 'no further step'
                : 'no next step'}
          </span>
        </Row>
      )}
      {plan.allowed && p.action !== 'MIGRATE' && (
        <Row label="Email sent again?" testId="preview-email">
          {sendsAgain || mayDuplicate ? (
            <p role="note" className="rounded bg-amber-50 px-2 py-1.5 font-medium text-amber-900 ring-1 ring-amber-300">
              {mayDuplicate ? 'YES — the email goes out again.' : 'YES — an email may be sent.'}{' '}
              <span className="font-normal">{first(plan.sideEffect.note.replace(/^WARNING:\s*/, ''))}.</span>
            </p>
          ) : (
            <span>
              <span className="font-medium">No.</span> {first(plan.sideEffect.note)}.
            </span>
          )}
        </Row>
      )}
      {t.kind === 'execution' && (p.action === 'RETRY_STEP' || p.action === 'SKIP_STEP') && 'existingMessage' in plan.sideEffect && (
        <Row label="Email of this step" testId="preview-message">
          {plan.sideEffect.existingMessage ? (
            <span>
              <span className="font-medium">Already exists</span>: “{plan.sideEffect.existingMessage.subject}”, <StatusBadge status={plan.sideEffect.existingMessage.status} />
              {plan.sideEffect.existingMessage.sentAt ? <> sent {absoluteTime(plan.sideEffect.existingMessage.sentAt)}</> : null}
            </span>
          ) : t.message ? (
            <span>
              <span className="font-medium">Already exists</span>: “{t.message.subject}”, <StatusBadge status={t.message.status} />
            </span>
          ) : (
            <span>
              <span className="font-medium">None exists</span>
              {t.step?.type === 'SEND_EMAIL' ? ' yet for this step execution.' : `: “${t.step?.name ?? 'this step'}” is a ${t.step?.type ?? 'step'}, which sends no email.`}
            </span>
          )}
        </Row>
      )}
    </dl>
  );
}

