'use client';

import { useMutation, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { useTRPC } from '../_trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '@/server/trpc/root';
import { Badge, StatusBadge } from './badges';
import { absoluteTime } from './time';

// One repair, preview first (DESIGN.md section 5): what the action will change, which
// branch it takes, whether an email may be sent again, which step execution it aims at,
// a mandatory reason, then apply with the version and step execution the preview showed.
// Losing says who won and what the state is now; a refusal says why. Generic over the
// target (an execution, an event, an email), so any page that offers a repair uses it.

type RouterInputs = inferRouterInputs<AppRouter>;
type RouterOutputs = inferRouterOutputs<AppRouter>;

export type RepairTarget = Pick<RouterInputs['repair']['preview'], 'action' | 'executionId' | 'messageId' | 'eventId'>;
type Preview = RouterOutputs['repair']['preview'];
export type RepairApplied = RouterOutputs['repair']['applyOne'];

/** The API's rule for a reason (repair.schema.ts): trimmed, 3 to 500 characters. */
export const REASON_MIN = 3;
const REASON_MAX = 500;

/** Each action's name and, in a line, what it does in any state that allows it. */
export const REPAIR_ACTION_TEXT: Record<RepairTarget['action'], { label: string; does: string }> = {
  RESUME_CONTINUATION: { label: 'Resume continuation', does: 'move past a wait that was resolved but never advanced' },
  FORCE_TIMEOUT: { label: 'Force timeout', does: 'resolve the wait as timed out and take its TIMEOUT branch' },
  DELIVER_EVENT: { label: 'Deliver event', does: 'resolve the wait as if its event arrived and take its EVENT branch' },
  RETRY_STEP: { label: 'Retry step', does: 'run the current step again as a new attempt' },
  SKIP_STEP: { label: 'Skip step', does: 'mark the current step skipped and move to the next one' },
  CANCEL: { label: 'Cancel execution', does: 'stop the execution for good: it takes no further step' },
  REDRIVE_EVENT: { label: 'Redrive event', does: 'dispatch the tracked event again now' },
  MARK_SENT: { label: 'Mark as sent', does: 'record the email as sent (the provider has it); nothing is sent' },
  RESEND: { label: 'Resend', does: 'queue the same email again; it may reach the contact twice' },
  GIVE_UP: { label: 'Give up', does: 'abandon the email: never sent, no longer listed as stuck' },
};

interface Winner {
  kind: 'worker' | 'event' | 'timeout' | 'operator';
  actor: string | null;
  action: string | null;
  at: Date | null;
}

/** What the server said about a lost race or a refusal (`data.conflict`). */
interface ConflictData {
  reason: string;
  winner?: Winner;
  resolvedBy?: string;
  at?: Date | null;
  status?: string | null;
  currentVersion?: number | null;
  refusal?: string;
  executionId?: string;
}

interface ApplyError {
  message: string;
  data?: { code?: string; conflict?: ConflictData | null; zodError?: { fieldErrors?: Record<string, string[] | undefined> } | null } | null;
}

const first = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
const shortId = (id: string) => id.slice(0, 8);

function winnerText(w: Winner | undefined, labelOf: (actor: string) => string | undefined): ReactNode {
  if (!w) return 'someone else';
  const who = w.actor ? (labelOf(w.actor) ?? w.actor) : null;
  switch (w.kind) {
    case 'operator':
      return (
        <>
          another operator{who ? <>, <span className="font-semibold">{who}</span></> : null}
          {w.action ? <> ({w.action.replace(/^repair\./, '')})</> : null}
        </>
      );
    case 'event':
      return 'an event, delivered to the wait';
    case 'timeout':
      return 'the timer: a worker fired the wait’s deadline';
    case 'worker':
      return <>a worker{who ? <> ({who})</> : null}, moving the execution on</>;
  }
}

/**
 * The preview and apply dialog of one repair: a modal `<dialog>` (focus stays inside, Esc
 * closes). The preview is read once and kept as it was: apply carries exactly what the
 * operator saw, so a change since then loses instead of acting on something unseen.
 */
export function RepairDialog({
  target,
  onClose,
  onApplied,
  onSettled,
  actorLabel = () => undefined,
}: {
  target: RepairTarget;
  onClose: () => void;
  /** The repair went through: the dialog closes, the page shows what was applied. */
  onApplied: (result: RepairApplied, target: RepairTarget) => void;
  /** After any answer (applied, lost, refused): refresh what the page shows. */
  onSettled?: () => void;
  /** A readable name for an actor id ("user:…"), when the page knows one. */
  actorLabel?: (actor: string) => string | undefined;
}) {
  const trpc = useTRPC();
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const reasonId = useId();
  const [reason, setReason] = useState('');
  const text = REPAIR_ACTION_TEXT[target.action];

  // Never refreshed by itself: what the operator reads is what apply sends.
  const preview = useQuery({
    ...trpc.repair.preview.queryOptions(target),
    staleTime: Infinity,
    gcTime: 0,
    refetchOnWindowFocus: false,
    refetchOnReconnect: false,
    retry: false,
  });
  const apply = useMutation(
    trpc.repair.applyOne.mutationOptions({
      onSuccess: (result) => onApplied(result, target),
      onSettled: () => onSettled?.(),
    }),
  );

  // Opened as a modal (the page behind is inert, Esc closes). No close() on unmount: the
  // element leaves the top layer with the DOM, and a close event fired by a cleanup (React
  // runs effects twice in development) would close the dialog it just reopened.
  useEffect(() => {
    const d = dialog.current;
    if (d && !d.open) d.showModal();
  }, []);

  const p = preview.data;
  const trimmed = reason.trim();
  const reasonOk = trimmed.length >= REASON_MIN && trimmed.length <= REASON_MAX;
  const error = apply.error as ApplyError | null;
  const settled = apply.isSuccess || !!error;

  function submit() {
    if (!p || !reasonOk || apply.isPending || settled) return;
    const base = { action: target.action, expectedVersion: p.expectedVersion, reason: trimmed };
    if (p.target.kind === 'message') apply.mutate({ ...base, messageId: p.target.id });
    else if (p.target.kind === 'event') apply.mutate({ ...base, eventId: p.target.id });
    else {
      apply.mutate({
        ...base,
        executionId: p.target.id,
        expectedStepExecutionId: 'expectedStepExecutionId' in p ? p.expectedStepExecutionId : null,
        ...(target.eventId ? { eventId: target.eventId } : {}),
      });
    }
  }

  function previewAgain() {
    apply.reset();
    void preview.refetch();
  }

  return (
    <dialog
      ref={dialog}
      aria-labelledby={titleId}
      onClose={onClose}
      data-testid="repair-dialog"
      className="m-auto w-[min(44rem,calc(100vw-2rem))] rounded-lg border border-zinc-300 bg-white p-0 text-[13px] text-zinc-900 shadow-xl backdrop:bg-zinc-900/40"
    >
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <header className="flex items-baseline gap-3 border-b border-zinc-200 px-5 py-3">
          <h2 id={titleId} className="text-[15px] font-semibold">
            Preview: {text.label}
          </h2>
          <span className="text-xs text-zinc-500">{text.does}</span>
        </header>

        <div className="max-h-[70vh] space-y-3 overflow-y-auto px-5 py-4">
          {preview.isPending && (
            <p role="status" className="text-zinc-500">
              Reading the current state…
            </p>
          )}
          {preview.error && (
            <p role="alert" className="rounded bg-red-50 px-3 py-2 text-red-800 ring-1 ring-red-200">
              The preview was refused ({preview.error.data?.code ?? 'error'}): {preview.error.message}
            </p>
          )}
          {p && <PreviewBody preview={p} refetching={preview.isFetching} stale={!!error} />}

          {p && !p.plan.allowed && !settled && <Refusal text={p.plan.refusal ?? 'the current state does not allow it'} activeId={'conflict' in p.plan ? p.plan.conflict?.executionId : undefined} />}

          {p && p.plan.allowed && !settled && (
            <div>
              <label htmlFor={reasonId} className="block font-medium">
                Reason <span className="font-normal text-zinc-500">(for the audit log, at least {REASON_MIN} characters)</span>
              </label>
              <textarea
                id={reasonId}
                value={reason}
                onChange={(e) => setReason(e.target.value)}
                required
                autoFocus
                minLength={REASON_MIN}
                maxLength={REASON_MAX}
                rows={2}
                className="mt-1 w-full rounded border border-zinc-300 px-2 py-1.5 focus:border-sky-500 focus:ring-2 focus:ring-sky-200 focus:outline-none"
                placeholder="e.g. the purchase was confirmed by support; ticket #1234"
              />
              {reason.length > 0 && !reasonOk && (
                <p className="text-xs text-amber-800">
                  {trimmed.length < REASON_MIN ? `At least ${REASON_MIN} characters, please.` : `At most ${REASON_MAX} characters.`}
                </p>
              )}
            </div>
          )}

          {error && <ApplyErrorView error={error} labelOf={actorLabel} />}
        </div>

        <footer className="flex items-center gap-2 border-t border-zinc-200 bg-zinc-50 px-5 py-3">
          {p && !settled && p.plan.allowed && (
            <span className="text-xs text-zinc-500">
              Applies only if it is still v{p.expectedVersion}
              {'expectedStepExecutionId' in p && p.expectedStepExecutionId ? <> at step execution {shortId(p.expectedStepExecutionId)}</> : null}
            </span>
          )}
          <span className="ml-auto" />
          {error && (
            <button
              type="button"
              onClick={previewAgain}
              className="rounded border border-zinc-300 bg-white px-3 py-1.5 font-medium hover:bg-zinc-100 focus:ring-2 focus:ring-sky-300 focus:outline-none"
            >
              Preview again
            </button>
          )}
          <button
            type="button"
            onClick={() => dialog.current?.close()}
            className="rounded border border-zinc-300 bg-white px-3 py-1.5 hover:bg-zinc-100 focus:ring-2 focus:ring-sky-300 focus:outline-none"
          >
            {settled ? 'Close' : 'Cancel'}
          </button>
          {p && p.plan.allowed && !settled && (
            <button
              type="submit"
              disabled={!reasonOk || apply.isPending || preview.isFetching}
              className="rounded bg-zinc-900 px-3 py-1.5 font-medium text-white hover:bg-zinc-700 focus:ring-2 focus:ring-sky-300 focus:outline-none disabled:cursor-not-allowed disabled:bg-zinc-400"
            >
              {apply.isPending ? 'Applying…' : `Apply ${text.label.toLowerCase()}`}
            </button>
          )}
        </footer>
      </form>
    </dialog>
  );
}

function Row({ label, children, testId }: { label: string; children: ReactNode; testId?: string }) {
  return (
    <div className="grid grid-cols-[9.5rem_minmax(0,1fr)] gap-3 py-1.5" data-testid={testId}>
      <dt className="text-zinc-500">{label}</dt>
      <dd className="min-w-0">{children}</dd>
    </div>
  );
}

function PreviewBody({ preview: p, refetching, stale }: { preview: Preview; refetching: boolean; stale: boolean }) {
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
      <Row label="Will change" testId="preview-change">
        <span className={plan.allowed ? 'font-medium' : 'text-zinc-500'}>{plan.allowed ? first(plan.change) : 'Nothing: this action is not allowed now'}</span>
      </Row>
      {'branch' in plan && plan.allowed && (
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
      {plan.allowed && (
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

function Refusal({ text, activeId }: { text: string; activeId?: string | undefined }) {
  return (
    <div role="alert" className="rounded bg-zinc-100 px-3 py-2 text-zinc-800 ring-1 ring-zinc-300" data-testid="repair-refusal">
      <p>
        <span className="font-semibold">Not allowed now:</span> {text}.
      </p>
      {activeId && (
        <p className="mt-1">
          <Link href={`/executions/${activeId}`} className="text-sky-700 underline">
            Open the active execution {shortId(activeId)}
          </Link>
        </p>
      )}
    </div>
  );
}

function ApplyErrorView({ error, labelOf }: { error: ApplyError; labelOf: (actor: string) => string | undefined }) {
  const code = error.data?.code;
  const c = error.data?.conflict ?? null;
  if (code === 'CONFLICT' && c) {
    const at = c.winner?.at ?? c.at ?? null;
    return (
      <div role="alert" className="rounded bg-amber-50 px-3 py-2 text-amber-950 ring-1 ring-amber-300" data-testid="repair-lost">
        <p className="font-semibold">Lost: nothing was changed. Someone got there first.</p>
        <p className="mt-1" data-testid="repair-winner">
          Won by {winnerText(c.winner, labelOf)}
          {at ? <> at {absoluteTime(at)}</> : null}
          {c.reason === 'WAIT_RESOLVED' && c.resolvedBy ? <> — the wait was resolved by {c.resolvedBy}</> : null}.
        </p>
        <p className="mt-1" data-testid="repair-fresh-state">
          Now: {c.status ? <StatusBadge status={c.status} /> : 'unknown status'}
          {c.currentVersion != null ? <span className="tabular-nums"> at version v{c.currentVersion}</span> : null}
          <span className="text-xs text-amber-800"> ({c.reason}; the page shows the fresh state)</span>
        </p>
        <p className="mt-1 text-xs">Preview again to see what the action would do now.</p>
      </div>
    );
  }
  if (code === 'PRECONDITION_FAILED') {
    return <Refusal text={(c?.refusal ?? error.message).replace(/\.$/, '')} activeId={c?.reason === 'ACTIVE_EXECUTION' ? c.executionId : undefined} />;
  }
  const fields = error.data?.zodError?.fieldErrors;
  const detail = fields ? Object.entries(fields).map(([k, v]) => `${k}: ${(v ?? []).join(', ')}`).join('; ') : '';
  return (
    <p role="alert" className="rounded bg-red-50 px-3 py-2 text-red-800 ring-1 ring-red-200">
      Not applied ({code ?? 'no answer'}): {detail || error.message}
    </p>
  );
}
