'use client';

import Link from 'next/link';
import Papa from 'papaparse';
import type { RouterOutputs } from '@/app/_trpc/types';
import { Badge } from './badges';

// A bulk repair's per-row outcomes (bulk-repair.tsx): each row applied, skipped because it
// changed since it was selected, or refused with why; the first rows in the page, all of
// them in the CSV.

export type BulkItem = RouterOutputs['repair']['applyMany']['items'][number];

const OUTCOME_TONE = { APPLIED: 'emerald', SKIPPED_CHANGED: 'amber', SKIPPED: 'zinc' } as const;
const OUTCOME_LABEL = { APPLIED: 'applied', SKIPPED_CHANGED: 'skipped: changed since selected', SKIPPED: 'refused' } as const;
/** Rows shown in the page; the CSV has them all. */
const SHOWN_ROWS = 500;

function targetOf(item: BulkItem): { href: string; label: string } | null {
  if (item.executionId) return { href: `/executions/${item.executionId}`, label: `execution ${item.executionId.slice(0, 8)}` };
  if (item.eventId) return { href: `/events#event-${item.eventId}`, label: `event ${item.eventId.slice(0, 8)}` };
  return null;
}

export function downloadCsv(items: BulkItem[], name: string) {
  const csv = Papa.unparse(
    items.map((item, i) => ({
      row: i + 1,
      outcome: item.outcome,
      detail: item.detail,
      executionId: item.executionId ?? '',
      eventId: item.eventId ?? '',
      messageId: item.messageId ?? '',
      activeExecutionId: item.conflict?.executionId ?? '',
      link: targetOf(item) ? `${window.location.origin}${targetOf(item)!.href}` : '',
    })),
  );
  const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}

export function BulkOutcomes({ items }: { items: BulkItem[] }) {
  if (items.length === 0) return null;
  return (
    <div className="max-h-96 overflow-y-auto rounded border border-zinc-200">
      <table aria-label="Bulk repair outcomes" className="w-full text-left">
        <thead className="sticky top-0 bg-zinc-50 text-[11px] font-medium tracking-wide text-zinc-500 uppercase">
          <tr>
            <th scope="col" className="w-12 px-3 py-1.5 text-right font-medium">
              #
            </th>
            <th scope="col" className="w-44 px-2 py-1.5 font-medium">
              Row
            </th>
            <th scope="col" className="w-52 px-2 py-1.5 font-medium">
              Outcome
            </th>
            <th scope="col" className="px-2 py-1.5 font-medium">
              What was done, or why not
            </th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100">
          {items.slice(0, SHOWN_ROWS).map((item, i) => {
            const target = targetOf(item);
            return (
              <tr key={i} data-testid="bulk-outcome" data-outcome={item.outcome} className="align-baseline">
                <td className="px-3 py-1 text-right text-xs text-zinc-400 tabular-nums">{i + 1}</td>
                <td className="px-2 py-1 font-mono text-xs">
                  {target ? (
                    <Link href={target.href} className="text-sky-700 hover:underline">
                      {target.label}
                    </Link>
                  ) : (
                    '—'
                  )}
                </td>
                <td className="px-2 py-1">
                  <Badge tone={OUTCOME_TONE[item.outcome]}>{OUTCOME_LABEL[item.outcome]}</Badge>
                </td>
                <td className="px-2 py-1 text-xs text-zinc-700">
                  {item.detail}
                  {item.conflict && (
                    <>
                      {' '}
                      (active:{' '}
                      <Link href={`/executions/${item.conflict.executionId}`} className="text-sky-700 hover:underline">
                        {item.conflict.executionId.slice(0, 8)}
                      </Link>
                      )
                    </>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {items.length > SHOWN_ROWS && (
        <p className="border-t border-zinc-200 px-3 py-1.5 text-xs text-zinc-500">
          The first {SHOWN_ROWS} of {items.length.toLocaleString()} rows; the CSV has them all.
        </p>
      )}
    </div>
  );
}
