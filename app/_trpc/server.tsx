import 'server-only';

import { HydrationBoundary, dehydrate } from '@tanstack/react-query';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';
import { headers } from 'next/headers';
import { cache, type ReactNode } from 'react';
import { appRouter } from '@/server/trpc/root';
import { createContext } from '@/server/trpc/trpc';
import { makeQueryClient } from './query-client';

// Server Components call procedures in-process (no HTTP hop) through the same router and
// context as /api/trpc, then hand the results to client components via hydration.

/** One QueryClient per request: `cache` scopes it to the render. */
export const getQueryClient = cache(makeQueryClient);

export const trpc = createTRPCOptionsProxy({
  router: appRouter,
  ctx: cache(async () => createContext({ headers: await headers() })),
  queryClient: getQueryClient,
});

/** Wrap client components that read what this request prefetched. */
export function HydrateClient({ children }: { children: ReactNode }) {
  return <HydrationBoundary state={dehydrate(getQueryClient())}>{children}</HydrationBoundary>;
}
