import Link from 'next/link';
import type { ReactNode } from 'react';
import { TYPE_STYLE } from './graph-parts';
import { fieldLabel, type ConflictDiff } from './versions';

// What a publish changes, step by step (identity is the key): added, removed and changed
// steps (with the fields that changed), and how many executions stand at each removed or
// changed step right now, each count a link to those executions when the page knows the
// old version's step ids. Used by the publish dialog, its conflict, and the notice after.

export function DiffSummary({ diff }: { diff: ConflictDiff }) {
  const parts: [number, string, string][] = [
    [diff.added.length, 'added', 'text-emerald-800 bg-emerald-50 ring-emerald-200'],
    [diff.removed.length, 'removed', 'text-red-800 bg-red-50 ring-red-200'],
    [diff.changed.length, 'changed', 'text-amber-900 bg-amber-50 ring-amber-200'],
    [diff.unchanged, 'unchanged', 'text-zinc-600 bg-zinc-50 ring-zinc-200'],
  ];
  return (
    <p className="flex flex-wrap gap-1.5 text-xs" data-testid="diff-summary">
      {parts.map(([n, label, tone]) => (
        <span key={label} className={`rounded px-1.5 py-0.5 font-medium tabular-nums ring-1 ${n === 0 ? 'bg-white text-zinc-400 ring-zinc-200' : tone}`}>
          {n} {label}
        </span>
      ))}
    </p>
  );
}

function StepLabel({ step }: { step: { key: string; name: string; type: string } }) {
  return (
    <span className="min-w-0">
      <span className="font-medium text-zinc-900">{step.name}</span>{' '}
      <code className="font-mono text-[11px] text-zinc-500">{step.key}</code>{' '}
      <span className="text-[11px] tracking-wide text-zinc-400 uppercase">{TYPE_STYLE[step.type]?.label ?? step.type}</span>
    </span>
  );
}

/**
 * How many executions stand at the step now, on any version, and per version; the
 * count on the version `linkFor` knows the step ids of is a link to those executions.
 */
function Active({ n, byVersion, link }: { n: number | undefined; byVersion?: Record<number, number>; link?: { version: number; href: string | null; move: string | null } }) {
  if (n === undefined) return null;
  if (n === 0) return <span className="shrink-0 text-xs text-zinc-400 tabular-nums">none here now</span>;
  const versions = Object.entries(byVersion ?? {})
    .map(([v, count]) => [Number(v), count] as const)
    .filter(([, count]) => count > 0)
    .sort((a, b) => b[0] - a[0]);
  return (
    <span className="flex shrink-0 items-baseline gap-1.5 text-xs tabular-nums" data-testid="active-count">
      <span className="font-semibold text-amber-800">
        {n.toLocaleString()} execution{n === 1 ? '' : 's'} here now
      </span>
      {versions.map(([v, count]) =>
        link?.href && v === link.version ? (
          <span key={v} className="flex items-baseline gap-1.5">
            <Link href={link.href} className="font-medium text-sky-700 hover:underline" data-testid="active-link">
              {count.toLocaleString()} on v{v} →
            </Link>
            {link.move && (
              <Link href={link.move} className="rounded px-1 font-medium text-zinc-700 ring-1 ring-zinc-300 hover:bg-zinc-100" data-testid="move-link">
                Move…
              </Link>
            )}
          </span>
        ) : (
          <span key={v} className="text-zinc-500">
            {count.toLocaleString()} on v{v}
          </span>
        ),
      )}
    </span>
  );
}

function Section({ title, tone, children, testId }: { title: string; tone: string; children: ReactNode; testId: string }) {
  return (
    <div data-testid={testId}>
      <h3 className={`text-[11px] font-semibold tracking-wide uppercase ${tone}`}>{title}</h3>
      <ul className="mt-1 divide-y divide-zinc-100 rounded border border-zinc-200">{children}</ul>
    </div>
  );
}

/** `links`: the version whose step ids the page knows, the executions list at a step key of it, and (operators) the move of them. */
export function DiffView({ diff, links }: { diff: ConflictDiff; links?: { version: number; at: (key: string) => string | null; move?: (key: string) => string | null } }) {
  const none = diff.added.length + diff.removed.length + diff.changed.length === 0;
  return (
    <div className="space-y-3 text-[13px]">
      <DiffSummary diff={diff} />
      {none && <p className="text-zinc-500">No step changes: publishing makes a new version identical to this one.</p>}
      {diff.removed.length > 0 && (
        <Section title="Removed" tone="text-red-800" testId="diff-removed">
          {diff.removed.map((s) => (
            <li key={s.key} className="flex items-baseline gap-3 px-2.5 py-1.5" data-testid={`diff-removed-${s.key}`}>
              <StepLabel step={s} />
              <span className="ml-auto" />
              <Active n={s.active} byVersion={s.activeByVersion} link={links && { version: links.version, href: links.at(s.key), move: links.move?.(s.key) ?? null }} />
            </li>
          ))}
        </Section>
      )}
      {diff.changed.length > 0 && (
        <Section title="Changed" tone="text-amber-900" testId="diff-changed">
          {diff.changed.map((s) => (
            <li key={s.key} className="flex flex-wrap items-baseline gap-x-3 gap-y-1 px-2.5 py-1.5" data-testid={`diff-changed-${s.key}`}>
              <StepLabel step={s} />
              <span className="flex flex-wrap gap-1">
                {s.fields.map((f) => (
                  <span key={f} className="rounded bg-amber-50 px-1 font-mono text-[11px] text-amber-900 ring-1 ring-amber-200" title={f}>
                    {fieldLabel(f)}
                  </span>
                ))}
              </span>
              <span className="ml-auto" />
              <Active n={s.active} byVersion={s.activeByVersion} link={links && { version: links.version, href: links.at(s.key), move: links.move?.(s.key) ?? null }} />
            </li>
          ))}
        </Section>
      )}
      {diff.added.length > 0 && (
        <Section title="Added" tone="text-emerald-800" testId="diff-added">
          {diff.added.map((s) => (
            <li key={s.key} className="px-2.5 py-1.5" data-testid={`diff-added-${s.key}`}>
              <StepLabel step={s} />
            </li>
          ))}
        </Section>
      )}
    </div>
  );
}
