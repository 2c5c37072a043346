'use client';

import Link from 'next/link';
import { type ReactNode } from 'react';
import { StatusBadge } from './badges';
import { absoluteTime } from './time';

// How an applied repair ended when it did not apply: who won the race and what the state is
// now (a lost CAS), or why it was refused.

export interface Winner {
  kind: 'worker' | 'event' | 'timeout' | 'operator';
  actor: string | null;
  action: string | null;
  at: Date | null;
}

/** What the server said about a lost race or a refusal (`data.conflict`). */
export interface ConflictData {
  reason: string;
  winner?: Winner;
  resolvedBy?: string;
  at?: Date | null;
  status?: string | null;
  currentVersion?: number | null;
  refusal?: string;
  executionId?: string;
}

export interface ApplyError {
  message: string;
  data?: { code?: string; conflict?: ConflictData | null; zodError?: { fieldErrors?: Record<string, string[] | undefined> } | null } | null;
}

export const first = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
export const shortId = (id: string) => id.slice(0, 8);

export function winnerText(w: Winner | undefined, labelOf: (actor: string) => string | undefined): ReactNode {
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
export function Refusal({ text, activeId }: { text: string; activeId?: string | undefined }) {
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

export function ApplyErrorView({ error, labelOf }: { error: ApplyError; labelOf: (actor: string) => string | undefined }) {
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

