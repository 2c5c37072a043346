'use client';

import { useState } from 'react';
import { Badge } from '../_components/badges';
import { prepareRows, type CsvFile, type Mapping } from './csv-file';
import { count, PREVIEW_ROWS, chip } from './parts';

// The first rows as they will be enrolled, each checked by the server's own row rule.

export function Preview({ file, rows, mapping }: { file: CsvFile; rows: ReturnType<typeof prepareRows>; mapping: Mapping }) {
  const [onlyInvalid, setOnlyInvalid] = useState(false);
  const invalid = rows.filter((r) => r.invalid);
  const repeats = rows.filter((r) => !r.invalid && r.repeats !== null).length;
  const shown = (onlyInvalid ? invalid : rows).slice(0, PREVIEW_ROWS);
  const dataNames = mapping.dataColumns.map((c) => file.header[c]!);
  return (
    <div className="space-y-2">
      <p data-testid="preview-counts" className="flex flex-wrap items-center gap-x-4 gap-y-1">
        <span>
          <strong className="tabular-nums">{count(rows.length)}</strong> rows
        </span>
        <span className="text-emerald-800">
          <strong className="tabular-nums">{count(rows.length - invalid.length)}</strong> valid
        </span>
        <span className={invalid.length ? 'text-red-800' : 'text-zinc-500'}>
          <strong className="tabular-nums">{count(invalid.length)}</strong> invalid (reported, not sent)
        </span>
        {repeats > 0 && (
          <span className="text-amber-800" title="The same email on an earlier row: the later rows are told the contact is already in">
            <strong className="tabular-nums">{count(repeats)}</strong> repeat an earlier row&apos;s email
          </span>
        )}
        <span className="ml-auto inline-flex gap-1" role="group" aria-label="Preview rows">
          <button type="button" aria-pressed={!onlyInvalid} onClick={() => setOnlyInvalid(false)} className={chip(!onlyInvalid)}>
            First {PREVIEW_ROWS}
          </button>
          <button type="button" aria-pressed={onlyInvalid} disabled={invalid.length === 0} onClick={() => setOnlyInvalid(true)} className={chip(onlyInvalid)}>
            Invalid rows
          </button>
        </span>
      </p>
      <div className="overflow-x-auto rounded border border-zinc-200">
        <table aria-label="Preview" className="w-full text-left">
          <thead className="bg-zinc-50 text-[11px] font-medium tracking-wide whitespace-nowrap text-zinc-500 uppercase">
            <tr>
              <th scope="col" className="w-14 px-2 py-1.5 pl-3 text-right">
                Row
              </th>
              <th scope="col" className="px-2 py-1.5">
                Email
              </th>
              <th scope="col" className="px-2 py-1.5">
                Data
              </th>
              <th scope="col" className="px-2 py-1.5 pr-3">
                Check
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {shown.map((r) => (
              <tr key={r.row} data-testid="preview-row" className={r.invalid ? 'bg-red-50/50' : ''}>
                <td className="px-2 py-1 pl-3 text-right text-zinc-500 tabular-nums">{r.row}</td>
                <td className="max-w-72 truncate px-2 py-1 font-mono text-xs">{r.email || <span className="text-zinc-400">empty</span>}</td>
                <td className="max-w-md truncate px-2 py-1 font-mono text-[11px] text-zinc-600">
                  {dataNames.filter((n) => r.data[n] !== undefined).map((n) => `${n}: ${String(r.data[n])}`).join(' · ') || <span className="text-zinc-400">none</span>}
                </td>
                <td className="px-2 py-1 pr-3">
                  {r.invalid ? (
                    <span className="text-red-800">
                      <Badge tone="red">invalid</Badge> {r.invalid}
                    </span>
                  ) : r.repeats !== null ? (
                    <span className="text-amber-800">
                      <Badge tone="amber">repeat</Badge> same email as row {r.repeats}
                    </span>
                  ) : (
                    <Badge tone="emerald">ok</Badge>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {(onlyInvalid ? invalid.length : rows.length) > PREVIEW_ROWS && (
        <p className="text-xs text-zinc-500">
          Showing {PREVIEW_ROWS} of {count(onlyInvalid ? invalid.length : rows.length)}; every row is checked, and all of them are in the result.
        </p>
      )}
    </div>
  );
}

