'use client';

import { type ReactNode } from 'react';
import type { RouterOutputs } from '@/app/_trpc/types';

// What the CSV enrollment page's stages share: button styles, number and size formats, a stage's frame.

export type Workflow = RouterOutputs['workflows']['list'][number];

export const primary =
  'inline-flex h-8 items-center rounded bg-zinc-900 px-3 font-medium text-white hover:bg-zinc-700 focus:ring-2 focus:ring-sky-300 focus:outline-none disabled:cursor-not-allowed disabled:bg-zinc-400';
export const secondary =
  'inline-flex h-8 items-center rounded border border-zinc-300 bg-white px-3 font-medium text-zinc-700 shadow-xs hover:border-zinc-400 focus:ring-2 focus:ring-sky-300 focus:outline-none disabled:cursor-not-allowed disabled:opacity-50';

export const count = (n: number) => n.toLocaleString('en-US');
export const PREVIEW_ROWS = 20;

export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}


/** One numbered stage of the page. */
export function Stage({ n, title, aside, children, id }: { n: number; title: string; aside?: ReactNode; children: ReactNode; id: string }) {
  return (
    <section aria-labelledby={id} className="overflow-hidden rounded-md border border-zinc-200 bg-white shadow-xs">
      <header className="flex items-center gap-2.5 border-b border-zinc-200 px-4 py-2.5">
        <span className="inline-flex size-5 items-center justify-center rounded-full bg-zinc-900 text-[11px] font-semibold text-white" aria-hidden>
          {n}
        </span>
        <h2 id={id} className="text-[13px] font-semibold">
          {title}
        </h2>
        <div className="ml-auto flex items-center gap-3 text-xs text-zinc-500">{aside}</div>
      </header>
      <div className="px-4 py-3">{children}</div>
    </section>
  );
}

export function chip(on: boolean) {
  return `inline-flex h-7 items-center rounded border px-2 text-xs whitespace-nowrap disabled:opacity-40 ${
    on ? 'border-sky-600 bg-sky-600 text-white' : 'border-zinc-300 bg-white text-zinc-700 hover:border-zinc-400'
  }`;
}
