'use client';

import { createColumnHelper } from '@tanstack/react-table';
import Link from 'next/link';
import { useMemo, useState } from 'react';
import { Badge, type Tone } from '../_components/badges';
import { DataTable, type Features } from '../_components/data-table';
import { ChipGroup } from '../_components/filters';
import { OUTCOME_LABELS, OUTCOME_ORDER, resultCsv, resultFileName, type Outcome, type OutcomeKind } from './csv-file';
import { secondary } from './parts';
import type { RunStatus } from './use-enroll-run';

const TONE: Record<OutcomeKind, Tone> = {
  ENROLLED: 'emerald',
  ACTIVE_EXECUTION: 'amber',
  REENTRY_BLOCKED: 'amber',
  INVALID: 'red',
  WORKFLOW_DISABLED: 'red',
  WORKFLOW_NOT_FOUND: 'red',
  CONTACT_NOT_FOUND: 'red',
  FAILED: 'red',
  NOT_SENT: 'zinc',
};

const TITLES: Partial<Record<OutcomeKind, string>> = {
  ACTIVE_EXECUTION: 'the contact is already running or waiting in this workflow',
  REENTRY_BLOCKED: 'the contact has been through this workflow, which does not allow re-entry',
  INVALID: 'the row itself is wrong (email, data): never sent',
  NOT_SENT: 'the import stopped before this row, or its call failed',
};

const PAGE_ROWS = 50;
const count = (n: number) => n.toLocaleString('en-US');

type Row = Outcome & { id: string };

const helper = createColumnHelper<Features, Row>();
const COLUMNS = helper.columns([
  helper.accessor('row', { header: 'Row', cell: (c) => <span className="text-zinc-500 tabular-nums">{c.getValue()}</span> }),
  helper.accessor('email', {
    header: 'Email',
    cell: (c) => <span className="font-mono text-xs">{c.getValue() || <span className="text-zinc-400">empty</span>}</span>,
  }),
  helper.accessor('kind', {
    header: 'Outcome',
    cell: (c) => (
      <Badge tone={TONE[c.getValue()]} title={TITLES[c.getValue()]}>
        {OUTCOME_LABELS[c.getValue()]}
      </Badge>
    ),
  }),
  helper.display({
    id: 'detail',
    header: 'Detail',
    cell: ({ row: { original: o } }) => (
      <span className="text-zinc-600">
        {o.kind === 'ENROLLED' && o.executionId ? (
          <Link href={`/executions/${o.executionId}`} className="text-sky-700 hover:underline">
            execution {o.executionId.slice(0, 8)}
          </Link>
        ) : (
          <>
            {o.message}
            {o.executionId && (
              <>
                {' '}
                ·{' '}
                <Link href={`/executions/${o.executionId}`} className="text-sky-700 hover:underline">
                  execution {o.executionId.slice(0, 8)}
                </Link>
              </>
            )}
          </>
        )}
      </span>
    ),
  }),
]);

const COLUMN_CLASS: Record<string, string> = { row: 'w-16 text-right', email: 'w-80', kind: 'w-36' };

export function ResultPanel({
  outcomes,
  revision,
  fileName,
  workflowName,
  status,
}: {
  outcomes: Outcome[];
  /** Changes whenever outcomes do (they are updated in place as chunks answer). */
  revision: number;
  fileName: string;
  workflowName: string;
  status: RunStatus;
}) {
  const [kinds, setKinds] = useState<string[]>([]);
  const [page, setPage] = useState(0);
  const counts = useMemo(() => {
    const byKind = new Map<OutcomeKind, number>();
    for (const o of outcomes) byKind.set(o.kind, (byKind.get(o.kind) ?? 0) + 1);
    return byKind;
  }, [outcomes, revision]);
  const filtered = useMemo(
    () => (kinds.length === 0 ? outcomes : outcomes.filter((o) => kinds.includes(o.kind))).map((o) => ({ ...o, id: String(o.row) })),
    [outcomes, revision, kinds],
  );
  const pages = Math.max(1, Math.ceil(filtered.length / PAGE_ROWS));
  const current = Math.min(page, pages - 1);
  const shown = filtered.slice(current * PAGE_ROWS, (current + 1) * PAGE_ROWS);

  const download = () => {
    const blob = new Blob([resultCsv(outcomes)], { type: 'text/csv;charset=utf-8' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = resultFileName(fileName);
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };

  const options = OUTCOME_ORDER.filter((k) => (counts.get(k) ?? 0) > 0).map((k) => ({
    value: k,
    label: OUTCOME_LABELS[k],
    count: counts.get(k) ?? 0,
    title: TITLES[k],
  }));

  return (
    <section aria-labelledby="stage-result" className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <header className="flex flex-wrap items-center gap-3 border-b border-zinc-200 px-4 py-2.5">
        <h2 id="stage-result" className="text-[13px] font-semibold">
          Result
        </h2>
        <span data-testid="result-summary" className="text-zinc-600">
          {count(outcomes.length)} rows into {workflowName}: <strong className="text-emerald-800">{count(counts.get('ENROLLED') ?? 0)} enrolled</strong>
          {OUTCOME_ORDER.filter((k) => k !== 'ENROLLED' && (counts.get(k) ?? 0) > 0).map((k) => (
            <span key={k}>
              , {count(counts.get(k)!)} {OUTCOME_LABELS[k]}
            </span>
          ))}
          {status !== 'done' && <span className="text-amber-800"> (import incomplete)</span>}
        </span>
        <button type="button" className={`${secondary} ml-auto`} onClick={download}>
          Download result (CSV)
        </button>
      </header>
      <div className="flex items-end gap-3 border-b border-zinc-100 px-4 py-2">
        <ChipGroup
          label="Outcome"
          options={options}
          selected={kinds}
          onChange={(v) => {
            setKinds(v);
            setPage(0);
          }}
        />
      </div>
      <DataTable
        label="Result rows"
        columns={COLUMNS}
        rows={shown}
        columnClass={COLUMN_CLASS}
        rowClass={(r) => (r.kind === 'INVALID' || r.kind === 'FAILED' ? 'bg-red-50/40' : r.kind === 'NOT_SENT' ? 'text-zinc-500' : '')}
        rowTestId={() => 'result-row'}
        empty="No rows with these outcomes."
      />
      <div className="flex items-center gap-3 border-t border-zinc-100 px-4 py-2 text-xs text-zinc-500">
        <span className="tabular-nums">
          {filtered.length === 0
            ? 'no rows'
            : `rows ${count(current * PAGE_ROWS + 1)}–${count(current * PAGE_ROWS + shown.length)} of ${count(filtered.length)}`}
        </span>
        <span className="ml-auto flex gap-2">
          <button type="button" className={secondary} disabled={current === 0} onClick={() => setPage(current - 1)}>
            Previous
          </button>
          <button type="button" className={secondary} disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
            Next
          </button>
        </span>
      </div>
    </section>
  );
}
