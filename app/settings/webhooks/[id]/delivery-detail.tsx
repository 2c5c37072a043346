'use client';

import { useQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import { StatusBadge } from '../../../_components/badges';
import { LIVE_REFRESH_MS } from '../../../_components/panel';
import { absoluteTime, RelativeTime } from '../../../_components/time';
import { useTRPC } from '../../../_trpc/client';
import { RedeliverButton } from './redeliver-button';

/** One delivery beside the log: what was sent (pretty-printed), and each attempt with what the endpoint answered. */
export function DeliveryDetail({ id, onClose }: { id: string; onClose: () => void }) {
  const trpc = useTRPC();
  const delivery = useQuery(
    trpc.webhooks.delivery.queryOptions({ id }, { refetchInterval: (query) => (query.state.data?.status === 'PENDING' ? LIVE_REFRESH_MS : false) }),
  );
  const d = delivery.data;
  useEffect(() => {
    const closeOnEscape = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', closeOnEscape);
    return () => window.removeEventListener('keydown', closeOnEscape);
  }, [onClose]);
  return (
    // A drawer over the log's right side: the log keeps its width (and its rows their place).
    <section aria-label="Delivery" className="fixed top-14 right-4 bottom-4 z-20 flex w-[min(30rem,calc(100vw-2rem))] flex-col overflow-hidden rounded-md border border-zinc-300 bg-white shadow-xl">
      <header className="flex shrink-0 items-center gap-2 border-b border-zinc-200 px-4 py-2.5">
        <h2 className="text-[13px] font-semibold">Delivery</h2>
        {d && <StatusBadge status={d.status} />}
        {d && <code className="truncate font-mono text-[11px] text-zinc-500">{d.webhookId}</code>}
        <button type="button" onClick={onClose} className="ml-auto rounded px-1.5 text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900" aria-label="Close the delivery" title="Close (Esc)">
          ✕
        </button>
      </header>
      {delivery.error && (
        <p role="alert" className="px-4 py-3 text-red-700">
          {delivery.error.data?.code === 'NOT_FOUND' ? 'No such delivery for this project (it may have been deleted with its endpoint).' : `Could not load the delivery: ${delivery.error.message}`}
        </p>
      )}
      {delivery.isPending && (
        <p role="status" className="px-4 py-6 text-zinc-500">
          Loading the delivery…
        </p>
      )}
      {d && (
        <div className="min-h-0 flex-1 space-y-3 overflow-y-auto px-4 py-3">
          <dl className="grid grid-cols-[8rem_minmax(0,1fr)] gap-x-3 gap-y-1 text-[13px]">
            <dt className="text-xs font-medium text-zinc-500">Event</dt>
            <dd>
              <code className="font-mono text-xs font-semibold">{d.eventType}</code>
            </dd>
            <dt className="text-xs font-medium text-zinc-500">Created</dt>
            <dd className="tabular-nums">{absoluteTime(d.createdAt)}</dd>
            <dt className="text-xs font-medium text-zinc-500">Attempts</dt>
            <dd className="tabular-nums">
              {d.attempts}
              {d.status === 'PENDING' && (
                <span className="text-zinc-500">
                  {' '}
                  · next <RelativeTime at={d.nextAttemptAt} />
                </span>
              )}
            </dd>
            {d.deliveredAt && (
              <>
                <dt className="text-xs font-medium text-zinc-500">Delivered</dt>
                <dd className="tabular-nums">{absoluteTime(d.deliveredAt)}</dd>
              </>
            )}
          </dl>
          <RedeliverButton key={`${d.id}-${d.status}`} id={d.id} status={d.status} label={`Redeliver ${d.webhookId}`} />
          <div>
            <h3 className="text-xs font-medium text-zinc-500">Payload</h3>
            <pre data-testid="delivery-payload" className="mt-1 max-h-72 overflow-auto rounded bg-zinc-50 p-2 font-mono text-[11.5px] leading-snug break-words whitespace-pre-wrap text-zinc-800 ring-1 ring-zinc-200">
              {JSON.stringify(d.payload, null, 2)}
            </pre>
          </div>
          <div>
            <h3 className="text-xs font-medium text-zinc-500">Attempts, oldest first</h3>
            {d.attemptLog.length === 0 ? (
              <p className="mt-1 text-xs text-zinc-500">Not tried yet.</p>
            ) : (
              <ol className="mt-1 space-y-2">
                {d.attemptLog.map((a, i) => (
                  <li key={a.id} data-testid="delivery-attempt" className="rounded border border-zinc-200 px-2.5 py-1.5">
                    <p className="flex flex-wrap items-baseline gap-x-2 text-xs">
                      <span className="font-medium">#{i + 1}</span>
                      <span className="tabular-nums text-zinc-600">{absoluteTime(a.at)}</span>
                      {a.responseStatus !== null ? (
                        <span className={`font-mono ${a.responseStatus >= 200 && a.responseStatus < 300 ? 'text-emerald-800' : 'text-red-700'}`}>HTTP {a.responseStatus}</span>
                      ) : (
                        <span className="font-mono text-red-700">no response</span>
                      )}
                      <span className="tabular-nums text-zinc-600">{a.latencyMs} ms</span>
                      <span className="truncate font-mono text-[10.5px] text-zinc-400" title="the worker that made the attempt">
                        {a.dispatcher}
                      </span>
                    </p>
                    {a.error && <p className="mt-0.5 font-mono text-[11px] break-words text-red-700">{a.error}</p>}
                    {a.responseExcerpt && (
                      <pre className="mt-1 max-h-32 overflow-auto rounded bg-zinc-50 p-1.5 font-mono text-[11px] leading-snug whitespace-pre-wrap text-zinc-700 ring-1 ring-zinc-200">
                        {a.responseExcerpt}
                      </pre>
                    )}
                  </li>
                ))}
              </ol>
            )}
          </div>
        </div>
      )}
    </section>
  );
}
