/** A JSON value, collapsed to its first line until opened (keyboard: Enter on the summary). */
export function JsonView({ value, label, open = false }: { value: unknown; label: string; open?: boolean }) {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  const empty = value === null || value === undefined || (typeof value === 'object' && Object.keys(value as object).length === 0);
  if (empty) {
    return (
      <span className="text-xs text-zinc-400">
        {label}: <code className="font-mono">{value === undefined ? 'none' : JSON.stringify(value)}</code>
      </span>
    );
  }
  const preview = JSON.stringify(value);
  return (
    <details open={open} className="group min-w-0">
      <summary className="cursor-pointer truncate text-xs text-zinc-600 select-none hover:text-zinc-900">
        <span className="font-medium">{label}</span>{' '}
        <code className="font-mono text-zinc-500 group-open:hidden">{preview.length > 90 ? `${preview.slice(0, 90)}…` : preview}</code>
      </summary>
      <pre className="mt-1 max-h-80 overflow-auto rounded bg-zinc-50 p-2 font-mono text-[11.5px] leading-snug text-zinc-800 ring-1 ring-zinc-200">
        {text}
      </pre>
    </details>
  );
}
