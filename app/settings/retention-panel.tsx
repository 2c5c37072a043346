'use client';

import { useQuery } from '@tanstack/react-query';
import { LoadError, Panel } from '../_components/panel';
import { formatDuration, localDateTime, RelativeTime } from '../_components/time';
import { useTRPC } from '../_trpc/client';
import type { RouterOutputs } from '@/app/_trpc/types';

// Settings → Retention (docs/deploy.md, "Retention"): how long this project's history is
// kept, the last sweep and what it removed here, and what is never removed. Read-only:
// the policy is the deployment's environment (RETENTION_DAYS, AUDIT_RETENTION_DAYS).

type Status = RouterOutputs['retention']['status'];
type Kind = Status['history'];

/** The rows each kind counts, in the words of the page. */
const COUNTED: Record<Kind['kind'], [key: string, label: string][]> = {
  history: [
    ['executions', 'executions'],
    ['executionsReduced', 'once-only executions reduced to their row'],
    ['steps', 'step rows'],
    ['emails', 'emails'],
    ['events', 'events'],
    ['webhookMessages', 'webhook messages'],
    ['webhookAttempts', 'webhook attempts'],
  ],
  audit: [['auditEntries', 'audit entries']],
};

const TITLES: Record<Kind['kind'], { title: string; what: string }> = {
  history: { title: 'Execution history', what: 'Finished executions with their steps and emails, processed events, delivered webhook messages' },
  audit: { title: 'Audit log', what: 'Audit entries' },
};

function Policy({ kind }: { kind: Kind }) {
  if (kind.days === null) {
    return (
      <p data-testid={`retention-${kind.kind}-policy`}>
        <span className="font-medium">Off</span>: nothing is removed.{' '}
        <span className="text-zinc-500">
          Set <code className="font-mono text-[12px]">{kind.variable}</code> to a number of days to turn it on.
        </span>
      </p>
    );
  }
  return (
    <p data-testid={`retention-${kind.kind}-policy`}>
      Kept <span className="font-medium">{kind.days} days</span>{' '}
      <span className="text-zinc-500">
        (<code className="font-mono text-[12px]">
          {kind.variable}={kind.days}
        </code>
        ), then removed by the workers in small batches.
      </span>
    </p>
  );
}

function LastSweep({ kind }: { kind: Kind }) {
  const last = kind.last;
  return (
    <div className="space-y-1" data-testid={`retention-${kind.kind}-last`}>
      {kind.runningSince && (
        <p className="text-sky-800">
          Sweeping now, since <RelativeTime at={kind.runningSince} />.
        </p>
      )}
      {!last && !kind.runningSince && <p className="text-zinc-500">Never swept.</p>}
      {last && (
        <p>
          Last sweep{' '}
          <span suppressHydrationWarning className="tabular-nums">
            {localDateTime(last.finishedAt)}
          </span>{' '}
          <span className="text-zinc-500">
            (<RelativeTime at={last.finishedAt} />
            {last.durationMs !== null && `, took ${last.durationMs < 1000 ? `${last.durationMs} ms` : formatDuration(last.durationMs)}`})
          </span>
          {last.outcome !== 'COMPLETED' && <span className={last.outcome === 'FAILED' ? 'ml-1 text-red-700' : 'ml-1 text-amber-800'}>{last.outcome?.toLowerCase()}</span>}
        </p>
      )}
      {last?.error && <p className="text-xs text-red-700">{last.error}</p>}
      {last && last.days !== null && last.days !== kind.days && (
        <p className="text-xs text-amber-800">
          The workers swept with {kind.variable}={last.days}: give every process the same value.
        </p>
      )}
    </div>
  );
}

function Removed({ kind }: { kind: Kind }) {
  const project = kind.project;
  if (!project) return null;
  const counts = project.removed as Record<string, number | undefined>;
  return (
    <div>
      <p className="text-xs text-zinc-500">
        Removed from this project by that sweep (older than{' '}
        <span suppressHydrationWarning className="tabular-nums">
          {localDateTime(project.cutoff)}
        </span>
        ):
      </p>
      <dl className="mt-1 grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-[13px]" data-testid={`retention-${kind.kind}-removed`}>
        {COUNTED[kind.kind].map(([key, label]) => (
          <div key={key} className="contents">
            <dt className={`text-right tabular-nums ${counts[key] ? 'font-medium' : 'text-zinc-400'}`}>{(counts[key] ?? 0).toLocaleString('en')}</dt>
            <dd className={counts[key] ? undefined : 'text-zinc-400'}>{label}</dd>
          </div>
        ))}
      </dl>
    </div>
  );
}

function KindColumn({ kind }: { kind: Kind }) {
  const { title, what } = TITLES[kind.kind];
  return (
    <div className="space-y-2 px-4 py-3" aria-label={title} role="group">
      <div>
        <h3 className="text-[13px] font-semibold">{title}</h3>
        <p className="text-xs text-zinc-500">{what}</p>
      </div>
      <Policy kind={kind} />
      <LastSweep kind={kind} />
      <Removed kind={kind} />
    </div>
  );
}

export function RetentionPanel() {
  const trpc = useTRPC();
  const status = useQuery(trpc.retention.status.queryOptions());
  return (
    <Panel title="Retention" labelledBy="retention-heading" summary={<span className="text-xs text-zinc-500">set by the environment, read-only</span>}>
      {status.error && <LoadError what="the retention policy" message={status.error.message} />}
      {status.data && (
        <>
          <div className="grid divide-y divide-zinc-200 md:grid-cols-2 md:divide-x md:divide-y-0">
            <KindColumn kind={status.data.history} />
            <KindColumn kind={status.data.audit} />
          </div>
          <div className="border-t border-zinc-200 px-4 py-3">
            <h3 className="text-[13px] font-semibold">Never removed, whatever its age</h3>
            <ul className="mt-1 list-disc space-y-0.5 pl-5 text-[13px] text-zinc-700" data-testid="retention-never-removed">
              {status.data.neverRemoved.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          </div>
        </>
      )}
    </Panel>
  );
}
