'use client';

import { useState, type FormEvent } from 'react';
import { WEBHOOK_EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '@/server/common/webhook-events';
import { buttonClass, inputClass, quietButtonClass } from './controls';

// An endpoint's settings as a form: Settings' "Add endpoint" and an endpoint's page's Edit.
// The server checks everything again (the URL against the address policy too); its field
// errors are shown at their field.

export interface EndpointValues {
  url: string;
  description: string;
  eventTypes: WebhookEventType[];
  stuckThreshold: number;
  /** Shown and typed in minutes; sent in seconds. */
  stuckIntervalSeconds: number;
}

export const NEW_ENDPOINT: EndpointValues = { url: '', description: '', eventTypes: [], stuckThreshold: 1, stuckIntervalSeconds: 3600 };

/** A tRPC error's message per input field (data.zodError.fieldErrors), and its message. */
export interface FormError {
  message: string;
  data?: { zodError?: { fieldErrors?: Record<string, string[] | undefined> } | null } | null;
}

function FieldError({ error, field }: { error: FormError | null; field: string }) {
  const messages = error?.data?.zodError?.fieldErrors?.[field];
  if (!messages?.length) return null;
  return (
    <span role="alert" className="text-xs text-red-700">
      {messages.join('; ')}
    </span>
  );
}

export function EndpointForm({
  initial,
  submitLabel,
  pendingLabel,
  pending,
  error,
  onSubmit,
  onCancel,
}: {
  initial: EndpointValues;
  submitLabel: string;
  pendingLabel: string;
  pending: boolean;
  error: FormError | null;
  onSubmit: (values: EndpointValues) => void;
  onCancel?: () => void;
}) {
  const [types, setTypes] = useState<WebhookEventType[]>(initial.eventTypes);
  const stuck = types.includes('execution.stuck');

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    onSubmit({
      url: String(form.get('url') ?? '').trim(),
      description: String(form.get('description') ?? '').trim(),
      eventTypes: types,
      stuckThreshold: stuck ? Number(form.get('stuckThreshold')) : initial.stuckThreshold,
      stuckIntervalSeconds: stuck ? Math.round(Number(form.get('stuckIntervalMinutes')) * 60) : initial.stuckIntervalSeconds,
    });
  }

  const fieldErrors = error?.data?.zodError?.fieldErrors ?? {};
  const otherFields = Object.keys(fieldErrors).some((f) => !['url', 'description', 'eventTypes', 'stuckThreshold', 'stuckIntervalSeconds'].includes(f));
  return (
    <form onSubmit={submit} aria-label={submitLabel} className="space-y-3 px-4 py-3">
      <div className="flex flex-wrap gap-3">
        <label className="flex flex-col gap-1">
          <span className="text-xs font-medium text-zinc-600">URL</span>
          <input
            name="url"
            type="url"
            required
            maxLength={2048}
            defaultValue={initial.url}
            placeholder="https://example.com/hooks/waypost"
            className={`${inputClass} w-[28rem] font-mono text-[12px]`}
          />
          <FieldError error={error} field="url" />
        </label>
        <label className="flex flex-col gap-1">
          <span className="text-xs font-medium text-zinc-600">Description (optional)</span>
          <input name="description" maxLength={500} defaultValue={initial.description} placeholder="e.g. on-call pager" className={`${inputClass} w-64`} />
          <FieldError error={error} field="description" />
        </label>
      </div>
      <fieldset>
        <legend className="text-xs font-medium text-zinc-600">Events</legend>
        <div className="mt-1 grid grid-cols-1 gap-x-6 gap-y-1 lg:grid-cols-2">
          {WEBHOOK_EVENT_TYPES.map((type) => (
            <label key={type} className="flex items-baseline gap-2">
              <input
                type="checkbox"
                name="eventTypes"
                value={type}
                checked={types.includes(type)}
                onChange={(e) => setTypes(e.target.checked ? [...types, type] : types.filter((t) => t !== type))}
                className="translate-y-px"
              />
              <span>
                <code className="font-mono text-[12px] font-semibold">{type}</code> <span className="text-zinc-500">{WEBHOOK_EVENT_DESCRIPTIONS[type]}</span>
              </span>
            </label>
          ))}
        </div>
        <FieldError error={error} field="eventTypes" />
      </fieldset>
      {stuck && (
        <div className="flex flex-wrap items-end gap-3 rounded border border-amber-200 bg-amber-50/60 px-3 py-2" data-testid="stuck-settings">
          <label className="flex flex-col gap-1">
            <span className="text-xs font-medium text-zinc-600">Notify when a stuck group reaches</span>
            <span className="flex items-center gap-1.5">
              <input name="stuckThreshold" type="number" min={1} max={1_000_000} step={1} required defaultValue={initial.stuckThreshold} className={`${inputClass} w-24 tabular-nums`} />
              <span className="text-zinc-600">items</span>
            </span>
            <FieldError error={error} field="stuckThreshold" />
          </label>
          <label className="flex flex-col gap-1">
            <span className="text-xs font-medium text-zinc-600">At most once per group every</span>
            <span className="flex items-center gap-1.5">
              <input
                name="stuckIntervalMinutes"
                type="number"
                min={1}
                max={7 * 24 * 60}
                step={1}
                required
                defaultValue={Math.round(initial.stuckIntervalSeconds / 60)}
                className={`${inputClass} w-24 tabular-nums`}
              />
              <span className="text-zinc-600">minutes</span>
            </span>
            <FieldError error={error} field="stuckIntervalSeconds" />
          </label>
          <p className="basis-full text-xs text-zinc-600">Notices are per stuck group (one cause, as on the Stuck page), never one per execution: a group that reaches the count is announced, then at most once per interval while it stays or grows.</p>
        </div>
      )}
      <div className="flex items-center gap-2">
        <button type="submit" disabled={pending || types.length === 0} className={buttonClass}>
          {pending ? pendingLabel : submitLabel}
        </button>
        {onCancel && (
          <button type="button" className={quietButtonClass} onClick={onCancel}>
            Cancel
          </button>
        )}
        {types.length === 0 && <span className="text-xs text-zinc-500">Choose at least one event.</span>}
      </div>
      {error && (otherFields || !Object.keys(fieldErrors).length) && (
        <p role="alert" className="text-red-700">
          {error.message}
        </p>
      )}
    </form>
  );
}
