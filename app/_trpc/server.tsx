import 'server-only';

import { HydrationBoundary, dehydrate } from '@tanstack/react-query';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';
import { cache, type ReactNode } from 'react';
import { requestContext } from '@/server/http/server-caller';
import { appRouter } from '@/server/trpc/root';
import { makeQueryClient } from './query-client';

// Server Components call procedures in-process (no HTTP hop) through the same router as
// /api/trpc, on the request's one context (server/http/server-caller.ts, which pages also
// ask who is acting), then hand the results to client components via hydration.

/** One QueryClient per request: `cache` scopes it to the render. */
export const getQueryClient = cache(makeQueryClient);

export const trpc = createTRPCOptionsProxy({
  router: appRouter,
  ctx: requestContext,
  queryClient: getQueryClient,
});

/** Wrap client components that read what this request prefetched. */
export function HydrateClient({ children }: { children: ReactNode }) {
  return <HydrationBoundary state={dehydrate(getQueryClient())}>{children}</HydrationBoundary>;
}
