'use client';

import Link from 'next/link';
import { StatusBadge } from '../../_components/badges';
import { JsonView } from '../../_components/json-view';
import { Panel } from '../../_components/panel';
import { RelativeTime } from '../../_components/time';
import { ErrorText, type Detail } from './parts';

// The execution page's side panels: the contact's events that touched this execution, and
// the audit entries about it.

export function EventsPanel({ data }: { data: Detail }) {
  return (
    <Panel title="Events" labelledBy="events-heading" summary={<span className="text-xs text-zinc-500">{data.events.length}</span>}>
      {data.events.length === 0 ? (
        <p className="px-4 py-3 text-zinc-500">No tracked event started or resumed it.</p>
      ) : (
        <ul className="divide-y divide-zinc-100">
          {data.events.map((ev) => {
            const state = ev.processedAt ? 'processed' : ev.deadAt ? 'dead' : ev.dispatchAttempts > 0 ? 'retrying' : 'pending';
            return (
              <li key={ev.id} id={`event-${ev.id}`} className="space-y-1 px-4 py-2 target:bg-sky-50">
                <div className="flex flex-wrap items-baseline gap-x-2">
                  <code className="font-mono text-xs font-semibold">{ev.name}</code>
                  <span className="text-xs text-zinc-500">{ev.role === 'source' ? 'enrolled it' : 'resumed a wait'}</span>
                  <StatusBadge status={state} />
                  <span className="ml-auto text-xs text-zinc-500">
                    accepted <RelativeTime at={ev.createdAt} />
                  </span>
                </div>
                {ev.lastError && <ErrorText text={ev.lastError} />}
                <div className="flex gap-3">
                  <JsonView value={ev.data} label="data" />
                  <Link href={`/events?name=${encodeURIComponent(ev.name)}&contact=${data.contactId}`} className="ml-auto shrink-0 text-xs text-sky-700 hover:underline">
                    on the events page
                  </Link>
                </div>
              </li>
            );
          })}
        </ul>
      )}
    </Panel>
  );
}

export function AuditPanel({ data }: { data: Detail }) {
  return (
    <Panel
      title="Audit"
      labelledBy="audit-heading"
      summary={<span className="text-xs text-zinc-500">{data.audit.length}</span>}
      aside={
        <Link href={`/audit?targetId=${data.id}`} className="text-sky-700 hover:underline">
          in the audit log
        </Link>
      }
    >
      {data.audit.length === 0 ? (
        <p className="px-4 py-3 text-zinc-500">Nobody has acted on this execution by hand.</p>
      ) : (
        <ul className="divide-y divide-zinc-100" data-testid="execution-audit">
          {data.audit.map((a) => (
            <li key={a.id} className="space-y-0.5 px-4 py-2">
              <div className="flex items-baseline gap-x-2">
                <code className="font-mono text-xs font-semibold">{a.action}</code>
                <StatusBadge status={a.outcome} />
                <span className="min-w-0 flex-1 truncate text-xs text-zinc-600" title={a.actor}>
                  {a.actorLabel ?? a.actor}
                </span>
                <span className="text-xs whitespace-nowrap text-zinc-500">
                  <RelativeTime at={a.at} />
                </span>
              </div>
              {a.reason && <p className="text-zinc-700">“{a.reason}”</p>}
            </li>
          ))}
        </ul>
      )}
    </Panel>
  );
}
