'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { JsonObjectField, issuesUnder, parseJsonObject } from '../../_components/json-object-field';
import { absoluteTime } from '../../_components/time';
import { useTRPC } from '../../_trpc/client';

// The contact's data as JSON, edited in place: parsed as it is typed (a syntax error at
// its line and column, a non-object refused), saved as a whole with contacts.update
// carrying the updatedAt the editor started from, so a save over a change made meanwhile
// (an UPDATE_CONTACT step, the API, a colleague) is refused and says so instead of
// silently wiping it.

const button = 'inline-flex h-7 items-center rounded border px-2.5 text-xs font-medium shadow-xs disabled:cursor-not-allowed disabled:opacity-50';

const pretty = (data: unknown) => JSON.stringify(data, null, 2);

export function DataEditor({ contactId, data, updatedAt }: { contactId: string; data: Record<string, unknown>; updatedAt: Date }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  /** The text being edited and the version of the contact it started from; null while not editing. */
  const [draft, setDraft] = useState<{ text: string; from: Date } | null>(null);
  const [saved, setSaved] = useState<Date | null>(null);
  const update = useMutation(
    trpc.contacts.update.mutationOptions({
      onSuccess: (contact) => {
        // Show what was saved at once, not the data from before until the refetch lands.
        queryClient.setQueryData(trpc.contacts.get.queryKey({ id: contactId }), (old) => old && { ...old, data: contact.data, updatedAt: contact.updatedAt });
        setDraft(null);
        setSaved(contact.updatedAt);
        void queryClient.invalidateQueries({ queryKey: trpc.contacts.get.queryKey({ id: contactId }) });
        void queryClient.invalidateQueries({ queryKey: trpc.contacts.list.queryKey() });
      },
    }),
  );
  const text = draft?.text ?? pretty(data);
  const parsed = parseJsonObject(text);
  const dirty = draft !== null && draft.text !== pretty(data);
  const conflict = update.error?.data?.conflict?.reason === 'CONTACT_CHANGED';
  const issues = update.error?.data?.zodError?.issues;
  const changedUnderneath = draft !== null && draft.from.getTime() !== new Date(updatedAt).getTime();

  return (
    <form
      aria-label="Contact data"
      className="space-y-2 px-4 py-3"
      onSubmit={(e) => {
        e.preventDefault();
        if (!parsed.ok || !draft) return;
        update.mutate({ id: contactId, data: parsed.value, expectedUpdatedAt: draft.from });
      }}
    >
      <JsonObjectField
        label="Data (JSON object: replaces all of the contact's data)"
        value={text}
        rows={Math.min(16, Math.max(5, text.split('\n').length + 1))}
        onChange={(next) => {
          update.reset();
          setSaved(null);
          setDraft({ text: next, from: draft?.from ?? new Date(updatedAt) });
        }}
        parse={parsed}
        serverIssues={issuesUnder('data', issues)}
        hint="Steps read these as contact.data.<key>; an UPDATE_CONTACT step may change them."
      />
      {conflict && (
        <div role="alert" className="rounded border border-amber-300 bg-amber-50 px-2.5 py-1.5 text-xs text-amber-900">
          Not saved: the contact changed since you started editing (now at {absoluteTime(updatedAt)}). Your text is kept; load the current data to start again from it.
        </div>
      )}
      {!conflict && changedUnderneath && (
        <p className="text-xs text-amber-800">The contact changed while you were editing; saving will be refused. Load the current data first.</p>
      )}
      {update.error && !conflict && !issues?.length && (
        <p role="alert" className="text-xs text-red-700">
          Could not save: {update.error.message}
        </p>
      )}
      <div className="flex items-center gap-2">
        <button type="submit" disabled={!dirty || !parsed.ok || update.isPending} className={`${button} border-sky-700 bg-sky-600 text-white hover:bg-sky-700`}>
          {update.isPending ? 'Saving…' : 'Save data'}
        </button>
        <button
          type="button"
          disabled={draft === null}
          onClick={() => {
            update.reset();
            setDraft(null);
          }}
          className={`${button} border-zinc-300 bg-white text-zinc-700`}
        >
          {conflict || changedUnderneath ? 'Load the current data' : 'Discard changes'}
        </button>
        {saved && !draft && (
          <span role="status" className="text-xs text-emerald-700">
            Saved at {absoluteTime(saved)}.
          </span>
        )}
      </div>
    </form>
  );
}
