import type { Metadata } from 'next';
import type { ReactNode } from 'react';
import { SideNav } from './_components/side-nav';
import { TRPCReactProvider } from './_trpc/client';
import './globals.css';

export const metadata: Metadata = {
  title: { default: 'Waypost', template: '%s · Waypost' },
  description: 'Operator console for race-safe marketing workflows',
  icons: { icon: '/waypost.svg' },
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen">
        <header className="sticky top-0 z-10 flex h-11 items-center gap-3 border-b border-zinc-800 bg-zinc-900 px-4 text-zinc-100">
          {/* Three waypoints on a route: the product's mark, also its favicon. */}
          <img src="/waypost.svg" width={20} height={20} alt="" />
          <span className="text-[14px] font-semibold tracking-tight">Waypost</span>
          <span className="h-4 w-px bg-zinc-700" aria-hidden />
          <span className="text-zinc-400">Operator console</span>
        </header>
        <div className="flex">
          <SideNav />
          <main className="min-w-0 flex-1">
            <TRPCReactProvider>{children}</TRPCReactProvider>
          </main>
        </div>
      </body>
    </html>
  );
}

