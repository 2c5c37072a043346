import type { ReactNode } from 'react';

/** The pages shown outside the console (signing in, invitations): the mark, one card, a footnote. */
export function CardPage({ children, footnote, wide = false }: { children: ReactNode; footnote?: ReactNode; wide?: boolean }) {
  return (
    <div className="flex min-h-screen items-start justify-center bg-zinc-100 px-4 pt-[14vh]">
      <div className={`w-full ${wide ? 'max-w-[560px]' : 'max-w-[360px]'}`}>
        <div className="mb-5 flex items-center justify-center gap-2">
          <img src="/waypost.svg" width={24} height={24} alt="" />
          <span className="text-[16px] font-semibold tracking-tight">Waypost</span>
        </div>
        <div className="rounded-md border border-zinc-200 bg-white px-6 py-5 shadow-xs">{children}</div>
        {footnote && <p className="mt-4 text-center text-xs text-zinc-500">{footnote}</p>}
      </div>
    </div>
  );
}

export const cardInputClass =
  'mt-1 block w-full rounded border border-zinc-300 bg-white px-2.5 py-1.5 text-[13px] shadow-xs focus:border-zinc-500 focus:outline-none focus:ring-2 focus:ring-zinc-200';
export const cardButtonClass =
  'rounded bg-zinc-900 px-3 py-1.5 font-medium text-white hover:bg-zinc-800 disabled:cursor-wait disabled:opacity-60';
export const cardQuietButtonClass =
  'rounded px-3 py-1.5 text-zinc-700 ring-1 ring-zinc-300 hover:bg-zinc-50 disabled:cursor-wait disabled:opacity-60';
