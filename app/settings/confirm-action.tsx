'use client';

import { type FormEvent } from 'react';
import { dangerButtonClass, inputClass, quietButtonClass } from './controls';

/**
 * A destructive button that asks first: the button, then in its place what will happen,
 * an optional reason for the audit log, Confirm and Cancel. The parent says which row is
 * being confirmed (one at a time) and closes it when the change has settled.
 */
export function ConfirmAction({
  label,
  ariaLabel,
  confirmLabel,
  warning,
  open,
  onOpenChange,
  pending,
  onConfirm,
  askReason = true,
}: {
  /** The button, e.g. "Revoke". */
  label: string;
  /** The button's accessible name, naming its row, e.g. "Revoke shop backend". */
  ariaLabel: string;
  /** The confirming button, e.g. "Confirm revoke". */
  confirmLabel: string;
  /** What confirming does, e.g. "Programs using it stop working." */
  warning?: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  pending: boolean;
  /** The reason given (3 to 500 characters), or undefined when none was. */
  onConfirm: (reason: string | undefined) => void;
  /** Offer the audit log's reason field (only where the procedure takes one). */
  askReason?: boolean;
}) {
  if (!open) {
    return (
      <button type="button" className={dangerButtonClass} onClick={() => onOpenChange(true)} aria-label={ariaLabel}>
        {label}
      </button>
    );
  }
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const reason = String(new FormData(event.currentTarget).get('reason') ?? '').trim();
    onConfirm(reason === '' ? undefined : reason);
  }
  return (
    <form onSubmit={submit} className="inline-flex items-center gap-1.5" aria-label={ariaLabel}>
      {warning && <span className="text-xs text-zinc-600">{warning}</span>}
      {askReason && (
        <input
          name="reason"
          aria-label="Reason (optional, kept in the audit log)"
          placeholder="Reason (optional)"
          minLength={3}
          maxLength={500}
          className={`${inputClass} w-44`}
        />
      )}
      <button type="submit" disabled={pending} className={dangerButtonClass}>
        {confirmLabel}
      </button>
      <button type="button" className={quietButtonClass} onClick={() => onOpenChange(false)}>
        Cancel
      </button>
    </form>
  );
}
