'use client';

import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState } from 'react';
import { useTRPC } from '../_trpc/client';
import { type ApplyError, shortId, Refusal, ApplyErrorView } from './repair-outcome';
import { useMigrateChoices } from './repair-migrate';
import { MigrateDialogChoices, MigrationRows, migrationOf } from './repair-migrate-preview';
import { PreviewBody } from './repair-preview';
import type { Preview, RepairApplied, RepairTarget } from './repair-types';

// One repair, preview first (docs/stuck-and-repair.md, "Preview and apply"): what the action will change, which
// branch it takes, whether an email may be sent again, which step execution it aims at,
// a mandatory reason, then apply with the version and step execution the preview showed.
// Losing says who won and what the state is now; a refusal says why. Generic over the
// target (an execution, an event, an email), so any page that offers a repair uses it.


/** The API's rule for a reason (repair.schema.ts): trimmed, 3 to 500 characters. */
export const REASON_MIN = 3;
const REASON_MAX = 500;

/** Each action's name and, in a line, what it does in any state that allows it. */
export const REPAIR_ACTION_TEXT: Record<RepairTarget['action'], { label: string; does: string }> = {
  RESUME_CONTINUATION: { label: 'Resume continuation', does: 'move past a wait that was resolved but never advanced' },
  FORCE_TIMEOUT: { label: 'Force timeout', does: 'resolve the wait as the timer would: an event accepted in its window takes EVENT, else TIMEOUT' },
  DELIVER_EVENT: { label: 'Deliver event', does: 'resolve the wait as if its event arrived and take its EVENT branch' },
  RETRY_STEP: { label: 'Retry step', does: 'run the current step again as a new attempt' },
  SKIP_STEP: { label: 'Skip step', does: 'mark the current step skipped and move to the next one' },
  CANCEL: { label: 'Cancel execution', does: 'stop the execution for good: it takes no further step' },
  REDRIVE_EVENT: { label: 'Redrive event', does: 'dispatch the tracked event again now' },
  MIGRATE: { label: 'Move to version', does: 'move the execution to a later version of its workflow, at the step of the same key (or one you name)' },
  MARK_SENT: { label: 'Mark as sent', does: 'record the email as sent (the provider has it); nothing is sent' },
  RESEND: { label: 'Resend', does: 'queue the same email again; it may reach the contact twice' },
  GIVE_UP: { label: 'Give up', does: 'abandon the email: never sent, no longer listed as stuck' },
};

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
  // FORCE_TIMEOUT past an event accepted inside the wait's window: off unless the operator says so.
  const [ignoreEvents, setIgnoreEvents] = useState(false);
  // MIGRATE: the version, step map and re-send consent; each change previews again.
  const migrate = useMigrateChoices();
  const choices = target.action === 'FORCE_TIMEOUT' && ignoreEvents ? { ignoreInWindowEvents: true } : target.action === 'MIGRATE' ? migrate.input : {};
  const text = REPAIR_ACTION_TEXT[target.action];

  // Never refreshed by itself: what the operator reads is what apply sends (a choice
  // below previews again, with it).
  const preview = useQuery({
    ...trpc.repair.preview.queryOptions({ ...target, ...choices }),
    placeholderData: keepPreviousData,
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
        ...choices,
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
          <h2 id={titleId} className="shrink-0 text-[15px] font-semibold whitespace-nowrap">
            Preview: {text.label}
          </h2>
          <span className="min-w-0 text-xs text-zinc-500">{text.does}</span>
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
          {p && target.action === 'MIGRATE' && !settled && <MigrateDialogChoices preview={p} state={migrate} disabled={apply.isPending} />}
          {p && (
            <PreviewBody preview={p} refetching={preview.isFetching} stale={!!error}>
              {migrationOf(p).migration && (
                <MigrationRows
                  migration={migrationOf(p).migration!}
                  waiting={p.target.kind === 'execution' && p.target.status === 'WAITING'}
                  emailNote={p.plan.allowed ? p.plan.sideEffect.note : null}
                />
              )}
            </PreviewBody>
          )}

          {p && !p.plan.allowed && !settled && <Refusal text={p.plan.refusal ?? 'the current state does not allow it'} activeId={'conflict' in p.plan ? p.plan.conflict?.executionId : undefined} />}

          {p && p.target.kind === 'execution' && target.action === 'FORCE_TIMEOUT' && p.target.inWindowEvents.length > 0 && !settled && (
            <label className="flex items-start gap-2 rounded bg-amber-50 px-3 py-2 ring-1 ring-amber-200" data-testid="ignore-in-window-events">
              <input
                type="checkbox"
                className="mt-0.5"
                checked={ignoreEvents}
                onChange={(e) => setIgnoreEvents(e.target.checked)}
                disabled={preview.isFetching || apply.isPending}
              />
              <span>
                <span className="font-medium">Time out anyway</span>: ignore the event accepted inside the wait’s window and take the TIMEOUT branch. The
                timer would not; the audit log records that you chose to.
              </span>
            </label>
          )}

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

