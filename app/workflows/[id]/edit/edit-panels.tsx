'use client';

import { useState } from 'react';
import { absoluteTime, RelativeTime } from '../../../_components/time';
import { formatPath, type VersionDefinition } from '../../_components/versions';
import { friendly } from './fields';
import type { EditorIssues } from './validation';
import type { DraftStatus, Saved } from './use-draft';

// Around the canvas: what is wrong (each problem a button to its step), the edits kept
// aside when another version was loaded, and what the draft's state is.

export function ProblemsPanel({ def, issues, onSelect }: { def: VersionDefinition; issues: EditorIssues; onSelect: (key: string) => void }) {
  const nameOf = new Map(def.steps.map((s) => [s.key, s.name || s.key]));
  const rows = [
    ...issues.general.map((g) => ({ key: null as string | null, where: g.path === '(definition)' ? 'definition' : formatPath(g.path), message: g.message })),
    ...[...issues.byStep].flatMap(([key, list]) =>
      list.map((i) => ({ key, where: `${nameOf.get(key) ?? key}${i.field ? ` › ${i.field.replace(/^config\./, '').replace(/^goes\./, 'goes to ')}` : ''}`, message: i.message })),
    ),
  ];
  return (
    <section aria-labelledby="problems-heading" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <header className="flex items-center gap-3 border-b border-zinc-200 px-4 py-2">
        <h2 id="problems-heading" className="text-[13px] font-semibold">
          Problems
        </h2>
        <span data-testid="problem-count" className={`text-xs ${rows.length ? 'text-red-700' : 'text-emerald-700'}`}>
          {rows.length ? `${rows.length} to fix before publishing` : 'none: this version can be published'}
        </span>
      </header>
      {rows.length > 0 && (
        <ul className="max-h-44 divide-y divide-zinc-100 overflow-auto text-xs">
          {rows.map((r, n) => (
            <li key={`${r.where}:${r.message}:${n}`} className="flex gap-2 px-4 py-1.5" data-testid="editor-problem">
              {r.key ? (
                <button type="button" onClick={() => onSelect(r.key!)} className="shrink-0 font-semibold text-red-800 underline decoration-red-300 hover:decoration-red-800">
                  {r.where}
                </button>
              ) : (
                <code className="shrink-0 font-mono font-semibold text-red-800">{r.where}</code>
              )}
              <span className="text-zinc-700">{friendly(r.message)}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

export interface Kept {
  def: VersionDefinition;
  basedOn: number;
  /** The version loaded over them. */
  replacedBy: number;
}

export function KeptEdits({ kept, onRestore, onDismiss }: { kept: Kept; onRestore: () => void; onDismiss: () => void }) {
  const [copied, setCopied] = useState(false);
  const json = JSON.stringify(kept.def, null, 2);
  return (
    <section aria-label="Your earlier edits" data-testid="kept-edits" className="rounded-md border border-sky-200 bg-sky-50 px-4 py-2.5 text-sky-950">
      <div className="flex flex-wrap items-center gap-x-3 gap-y-1.5">
        <p className="min-w-0">
          <span className="font-semibold">Your edits are kept here.</span> Version {kept.replacedBy} is loaded in the editor; your {kept.def.steps.length}-step edit of version{' '}
          {kept.basedOn} was not published.
        </p>
        <div className="ml-auto flex shrink-0 gap-2">
          <button type="button" onClick={onRestore} className="rounded bg-white px-2.5 py-1 text-xs font-medium ring-1 ring-sky-300 hover:bg-sky-100">
            Put my edits back (on version {kept.replacedBy})
          </button>
          <button
            type="button"
            onClick={() => void navigator.clipboard?.writeText(json).then(() => setCopied(true))}
            className="rounded bg-white px-2.5 py-1 text-xs font-medium ring-1 ring-sky-300 hover:bg-sky-100"
          >
            {copied ? 'Copied' : 'Copy as JSON'}
          </button>
          <button type="button" onClick={onDismiss} className="rounded px-2 py-1 text-xs text-sky-800 hover:bg-sky-100" aria-label="Dismiss your earlier edits">
            Dismiss
          </button>
        </div>
      </div>
      <details className="mt-1.5">
        <summary className="cursor-pointer text-xs text-sky-800">Show them</summary>
        <textarea readOnly value={json} rows={8} aria-label="Your earlier edits (JSON)" className="mt-1 w-full rounded border border-sky-200 bg-white p-2 font-mono text-[11.5px]" />
      </details>
    </section>
  );
}

export function DraftState({ status, saved, onRetry }: { status: DraftStatus; saved: Saved; onRetry: () => void }) {
  const at = saved.at;
  switch (status.kind) {
    case 'saving':
      return <span className="text-zinc-500">saving the draft…</span>;
    case 'dirty':
      return <span className="text-zinc-600">unsaved changes, saving in a moment</span>;
    case 'unsavable':
      return <span className="text-amber-800">not saved yet: {status.reason}</span>;
    case 'failed':
      return (
        <span className="text-red-700">
          Could not save the draft: {status.reason}{' '}
          <button type="button" onClick={onRetry} className="font-medium underline">
            Retry
          </button>
        </span>
      );
    case 'saved':
      return (
        <span className="text-zinc-600" data-testid="draft-saved">
          draft saved at{' '}
          <time dateTime={at!.toISOString()} title={absoluteTime(at!)} suppressHydrationWarning>
            {at!.toLocaleTimeString()}
          </time>{' '}
          by {saved.by ?? 'someone'} (<RelativeTime at={at} />)
        </span>
      );
    case 'clean':
      return <span className="text-zinc-500">no draft yet: changes are saved as a draft as you go (executions never see a draft)</span>;
  }
}
