import { QueryClient } from '@tanstack/react-query';
import superjson from 'superjson';

/**
 * One factory for the browser's QueryClient and each server render's, so data prefetched
 * by a Server Component crosses to the client with the same superjson encoding tRPC uses
 * (Dates stay Dates).
 */
export function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      // Server-rendered data is fresh on arrival: do not refetch it during hydration.
      queries: { staleTime: 2_000 },
      dehydrate: { serializeData: superjson.serialize },
      hydrate: { deserializeData: superjson.deserialize },
    },
  });
}
