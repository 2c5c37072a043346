import { QueryClient } from '@tanstack/react-query';
import superjson from 'superjson';

const FINAL_CODES = new Set(['BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'PRECONDITION_FAILED', 'CONFLICT']);

function codeOf(error: unknown): string {
  const data = (error as { data?: { code?: unknown } } | null)?.data;
  return typeof data?.code === 'string' ? data.code : '';
}

/**
 * One factory for the browser's QueryClient and each server render's, so data prefetched
 * by a Server Component crosses to the client with the same superjson encoding tRPC uses
 * (Dates stay Dates).
 */
export function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      // Server-rendered data is fresh on arrival: do not refetch it during hydration.
      // An answer about the request itself (no such row, not allowed, bad filter) will
      // not change on a retry: show it at once instead of after three backoffs.
      queries: { staleTime: 2_000, retry: (failures, error) => !FINAL_CODES.has(codeOf(error)) && failures < 2 },
      dehydrate: { serializeData: superjson.serialize },
      hydrate: { deserializeData: superjson.deserialize },
    },
  });
}
