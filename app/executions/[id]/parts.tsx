import type { RouterOutputs } from '@/app/_trpc/types';

// Pieces the execution page's panels share: its data's types, an error's text, a lease holder's name.

export type Detail = RouterOutputs['executions']['get'];
export type Step = Detail['steps'][number];
export type Message = Detail['messages'][number];

/** An error; a long one (a validation report) opens from its first line. */
export function ErrorText({ text }: { text: string }) {
  const box = 'w-full overflow-x-auto rounded bg-red-50 px-2 py-1 font-mono text-[11.5px] whitespace-pre-wrap text-red-800 ring-1 ring-red-200';
  const lines = text.split('\n');
  if (lines.length <= 4 && text.length <= 400) return <pre className={box}>{text}</pre>;
  return (
    <details className="w-full">
      <summary className="cursor-pointer truncate font-mono text-[11.5px] text-red-800">
        {lines[0]} <span className="font-sans text-zinc-500">({lines.length} lines)</span>
      </summary>
      <pre className={`${box} mt-1 max-h-64 overflow-y-auto`}>{text}</pre>
    </details>
  );
}

/** The worker holding a lease, by the name it logs under (`worker:<host>:<pid>`), so an operator can find its process and its log lines. */
export function LeaseHolder({ owner }: { owner: string }) {
  return (
    <code className="rounded bg-zinc-100 px-1 font-mono text-xs" data-testid="lease-holder" title="The worker's name in its log lines">
      {owner}
    </code>
  );
}
