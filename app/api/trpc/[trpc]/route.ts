import { trpcEndpoint } from '@/server/trpc/endpoints';

// The tRPC endpoint as a Next.js route (`next dev`); scripts/web.ts serves the same
// handler before Next.js (server/trpc/node-endpoints.ts).

export { trpcEndpoint as GET, trpcEndpoint as POST };
