'use client';

import Link from 'next/link';
import { useId, useRef, useState, type DragEvent } from 'react';
import { dataColumnIssue, type CsvFile, type CsvProblem, type Mapping } from './csv-file';
import { type Workflow, secondary, count, size } from './parts';

// The first stages of CSV enrollment: pick the workflow, drop the file, map its columns.

export function workflowLabel(w: Workflow): string {
  const trigger = w.trigger === 'EVENT' ? `on ${w.triggerEvent ?? 'event'}` : 'manual';
  return `${w.name} · ${trigger} · ${w.allowReentry ? 're-entry allowed' : 'no re-entry'}${w.enabled ? '' : ' — disabled'}`;
}

export function WorkflowPicker({
  workflows,
  value,
  onChange,
  locked,
  requestedMissing,
}: {
  workflows: Workflow[];
  value: string | null;
  onChange: (id: string) => void;
  locked: boolean;
  requestedMissing: boolean;
}) {
  const chosen = workflows.find((w) => w.id === value) ?? null;
  const disabled = workflows.filter((w) => !w.enabled);
  return (
    <div className="space-y-2">
      <div className="flex flex-wrap items-center gap-3">
        <label htmlFor="enroll-workflow" className="font-medium">
          Workflow
        </label>
        <select
          id="enroll-workflow"
          value={chosen?.enabled ? chosen.id : ''}
          disabled={locked}
          onChange={(e) => onChange(e.target.value)}
          className="h-8 min-w-96 rounded border border-zinc-300 bg-white px-2 disabled:bg-zinc-50"
        >
          <option value="" disabled>
            Choose a workflow…
          </option>
          {workflows.map((w) => (
            <option key={w.id} value={w.id} disabled={!w.enabled}>
              {workflowLabel(w)}
            </option>
          ))}
        </select>
        {chosen?.enabled && (
          <span className="text-xs text-zinc-500">
            {count(chosen.executions.RUNNING + chosen.executions.WAITING)} active now ·{' '}
            <Link href={`/executions?workflowId=${chosen.id}`} className="text-sky-700 hover:underline">
              its executions
            </Link>
          </span>
        )}
      </div>
      {chosen?.description && chosen.enabled && <p className="text-zinc-500">{chosen.description}</p>}
      {chosen?.enabled && !chosen.allowReentry && (
        <p className="text-xs text-zinc-500">This workflow does not allow re-entry: contacts who have been through it before are reported as re-entry blocked.</p>
      )}
      {requestedMissing && (
        <p role="alert" className="rounded border border-amber-200 bg-amber-50 px-3 py-1.5 text-amber-900">
          The workflow in this link is not in this project. Choose one from the list.
        </p>
      )}
      {chosen && !chosen.enabled && (
        <p role="alert" className="rounded border border-amber-200 bg-amber-50 px-3 py-1.5 text-amber-900">
          <strong>{chosen.name}</strong> is disabled, so no one can be enrolled into it. A marketer can enable it on its workflow page; or choose another.
        </p>
      )}
      {disabled.length > 0 && (
        <p className="text-xs text-zinc-500">
          Disabled, so not choosable: {disabled.map((w) => w.name).join(', ')}. Enable a workflow before enrolling into it.
        </p>
      )}
      {workflows.length === 0 && <p className="text-zinc-500">This project has no workflows yet: create one first.</p>}
    </div>
  );
}

export function FileDrop({ onFile, locked, loaded, problem }: { onFile: (file: File) => void; locked: boolean; loaded: CsvFile | null; problem: (CsvProblem & { name: string }) | null }) {
  const input = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);
  const drop = (event: DragEvent<HTMLDivElement>) => {
    event.preventDefault();
    setOver(false);
    if (locked) return;
    const file = event.dataTransfer.files[0];
    if (file) onFile(file);
  };
  return (
    <div className="space-y-2">
      <div
        data-testid="csv-drop-zone"
        onDragOver={(e) => {
          e.preventDefault();
          if (!locked) setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={drop}
        className={`flex items-center gap-4 rounded-md border-2 border-dashed px-4 py-4 ${
          over ? 'border-sky-500 bg-sky-50' : 'border-zinc-300 bg-zinc-50/60'
        } ${locked ? 'opacity-60' : ''}`}
      >
        <svg aria-hidden viewBox="0 0 24 24" className="size-7 shrink-0 text-zinc-400" fill="none" stroke="currentColor" strokeWidth="1.5">
          <path d="M12 16V4m0 0-4 4m4-4 4 4M4 16v2a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2v-2" strokeLinecap="round" strokeLinejoin="round" />
        </svg>
        <div className="min-w-0 flex-1">
          {loaded ? (
            <p>
              <span className="font-medium">{loaded.name}</span>{' '}
              <span className="text-zinc-500">
                · {size(loaded.bytes)} · {count(loaded.rows.length)} data rows · {loaded.header.length} {loaded.header.length === 1 ? 'column' : 'columns'}
              </span>
            </p>
          ) : (
            <p className="font-medium">Drop a CSV file here</p>
          )}
          <p className="text-xs text-zinc-500">UTF-8 text with a header row; one contact per row. Nothing is sent until you press Enroll.</p>
        </div>
        <input
          ref={input}
          id="enroll-file"
          type="file"
          accept=".csv,text/csv"
          aria-label="CSV file"
          // Reached through the button beside it: one tab stop, not two.
          tabIndex={-1}
          className="sr-only"
          disabled={locked}
          onChange={(e) => {
            const file = e.target.files?.[0];
            if (file) onFile(file);
            e.target.value = '';
          }}
        />
        <button type="button" className={secondary} disabled={locked} onClick={() => input.current?.click()}>
          {loaded ? 'Choose another file…' : 'Choose a file…'}
        </button>
      </div>
      {problem && (
        <div role="alert" data-testid="csv-problem" className="rounded border border-red-200 bg-red-50 px-3 py-2 text-red-800">
          <p className="font-medium">{problem.name} cannot be imported</p>
          <p>{problem.message}</p>
          <p className="text-xs text-red-700">Nothing was sent and no one was enrolled.</p>
        </div>
      )}
    </div>
  );
}

export function ColumnMapping({ file, mapping, onChange, locked }: { file: CsvFile; mapping: Mapping; onChange: (m: Mapping) => void; locked: boolean }) {
  const emailId = useId();
  return (
    <div className="space-y-3">
      <div className="flex flex-wrap items-center gap-3">
        <label htmlFor={emailId} className="font-medium">
          Email column
        </label>
        <select
          id={emailId}
          value={mapping.emailColumn ?? ''}
          disabled={locked}
          onChange={(e) => {
            const emailColumn = e.target.value === '' ? null : Number(e.target.value);
            onChange({ emailColumn, dataColumns: mapping.dataColumns.filter((c) => c !== emailColumn) });
          }}
          className="h-8 min-w-56 rounded border border-zinc-300 bg-white px-2"
        >
          <option value="">Choose the column with the emails…</option>
          {file.header.map((name, i) => (
            <option key={i} value={i}>
              {name || `(column ${i + 1}, unnamed)`}
            </option>
          ))}
        </select>
      </div>
      {mapping.emailColumn === null && (
        <p role="alert" data-testid="no-email-column" className="rounded border border-amber-200 bg-amber-50 px-3 py-1.5 text-amber-900">
          No column is called <code className="font-mono text-xs">email</code> (the header is{' '}
          <code className="font-mono text-xs">{file.header.join(', ').slice(0, 200)}</code>). Choose the column that holds the emails; nothing can be sent
          until one is chosen.
        </p>
      )}
      <fieldset disabled={locked}>
        <legend className="mb-1 font-medium">
          Contact data <span className="font-normal text-zinc-500">(checked columns are merged into each contact&apos;s data under the column&apos;s name, over any value already there, even when the contact is not enrolled)</span>
        </legend>
        <div className="flex flex-wrap gap-x-4 gap-y-1">
          {file.header.map((name, i) => {
            if (i === mapping.emailColumn) return null;
            const issue = dataColumnIssue(file.header, i);
            const checked = mapping.dataColumns.includes(i);
            return (
              <label key={i} className={`inline-flex items-center gap-1.5 ${issue ? 'text-zinc-400' : ''}`} title={issue ?? undefined}>
                <input
                  type="checkbox"
                  checked={checked}
                  disabled={!!issue}
                  onChange={() =>
                    onChange({ ...mapping, dataColumns: checked ? mapping.dataColumns.filter((c) => c !== i) : [...mapping.dataColumns, i].sort((a, b) => a - b) })
                  }
                />
                <code className="font-mono text-xs">{name || `column ${i + 1}`}</code>
                {issue && <span className="text-xs">({issue})</span>}
              </label>
            );
          })}
          {file.header.length === 1 && <span className="text-zinc-500">The file has no other columns.</span>}
        </div>
      </fieldset>
    </div>
  );
}

