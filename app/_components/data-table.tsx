'use client';

import { FlexRender, tableFeatures, useTable, type ColumnDef, type RowData } from '@tanstack/react-table';
import { useMemo, useRef, useState, type ReactNode } from 'react';

// The console's dense tables: TanStack Table for the column model, our markup for the rest.
// Rows come from the server a page at a time (keyset), so the table does no sorting,
// filtering or paging of its own: no features registered.

export const tableFeaturesNone = tableFeatures({});
export type Features = typeof tableFeaturesNone;
export type Columns<T extends RowData> = ColumnDef<Features, T, any>[];

export function DataTable<T extends { id: string }>({
  label,
  columns,
  rows,
  columnClass = {},
  rowClass,
  rowTestId,
  onPointerInside,
  empty,
}: {
  label: string;
  columns: Columns<T>;
  rows: T[];
  /** Classes per column id, for its header and cells (width, alignment). */
  columnClass?: Record<string, string>;
  rowClass?: (row: T) => string;
  rowTestId?: (row: T) => string;
  /** Told when the pointer enters or leaves the rows (live lists hold still meanwhile). */
  onPointerInside?: (inside: boolean) => void;
  empty: ReactNode;
}) {
  const table = useTable({ features: tableFeaturesNone, columns, data: rows, getRowId: (row) => row.id });
  return (
    <div className="overflow-x-auto">
      <table aria-label={label} className="w-full text-left">
        <thead className="bg-zinc-50 text-[11px] font-medium tracking-wide whitespace-nowrap text-zinc-500 uppercase">
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((header) => (
                <th key={header.id} scope="col" className={`px-2 py-1.5 font-medium first:pl-4 last:pr-4 ${columnClass[header.column.id] ?? ''}`}>
                  {header.isPlaceholder ? null : <FlexRender header={header} />}
                </th>
              ))}
            </tr>
          ))}
        </thead>
        <tbody
          className="divide-y divide-zinc-100"
          onPointerEnter={onPointerInside && (() => onPointerInside(true))}
          onPointerLeave={onPointerInside && (() => onPointerInside(false))}
        >
          {rows.length === 0 && (
            <tr>
              <td colSpan={columns.length} className="px-4 py-8 text-center text-zinc-500">
                {empty}
              </td>
            </tr>
          )}
          {table.getRowModel().rows.map((row) => (
            <tr key={row.id} data-testid={rowTestId?.(row.original)} className={`align-baseline hover:bg-zinc-50 ${rowClass?.(row.original) ?? ''}`}>
              {row.getAllCells().map((cell) => (
                <td key={cell.id} className={`px-2 py-1.5 first:pl-4 last:pr-4 ${columnClass[cell.column.id] ?? ''}`}>
                  <FlexRender cell={cell} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * Live rows that never jump under the pointer. The first answer for a view (its filters
 * and page) fixes which rows are shown and in what order; later refreshes update those
 * rows in place, and rows that arrived meanwhile are only counted ("N new") until the
 * reader asks for them. A row that left the view stays, marked `gone`, with what was last
 * known of it. While the pointer is over the rows nothing changes at all.
 */
export function useHeldRows<T extends { id: string }>(viewKey: string, fresh: T[] | undefined, paused: boolean) {
  const [held, setHeld] = useState<{ key: string; ids: string[] } | null>(null);
  const known = useRef(new Map<string, T>());
  const lastShown = useRef<(T & { gone: boolean })[]>([]);

  if (fresh && held?.key !== viewKey) {
    // A new view: adopt its rows as they come (state adjusted during render, React's pattern for derived state).
    setHeld({ key: viewKey, ids: fresh.map((r) => r.id) });
  }

  const computed = useMemo(() => {
    const ids = held?.key === viewKey ? held.ids : (fresh?.map((r) => r.id) ?? []);
    const freshById = new Map((fresh ?? []).map((r) => [r.id, r]));
    for (const r of fresh ?? []) known.current.set(r.id, r);
    const idSet = new Set(ids);
    const rows = ids.flatMap((id) => {
      const current = freshById.get(id);
      if (current) return [{ ...current, gone: false }];
      const last = known.current.get(id);
      return last ? [{ ...last, gone: true }] : [];
    });
    const arrived = (fresh ?? []).filter((r) => !idSet.has(r.id)).length;
    return { rows, arrived };
  }, [held, viewKey, fresh]);

  // Paused, or the new view's answer is not in yet: keep what is on screen.
  const hold = paused || (!fresh && held?.key !== viewKey);
  const rows = hold && lastShown.current.length > 0 ? lastShown.current : computed.rows;
  if (!hold) lastShown.current = computed.rows;

  return {
    rows,
    /** Rows of the view's latest answer that are not shown yet. */
    arrived: computed.arrived,
    /** Show the view's latest answer as it is. */
    showLatest: () => fresh && setHeld({ key: viewKey, ids: fresh.map((r) => r.id) }),
  };
}
