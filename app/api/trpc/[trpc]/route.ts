import { trpcEndpoint } from '@/server/http/endpoints';

// The tRPC endpoint as a Next.js route (`next dev`); scripts/web.ts serves the same
// handler before Next.js (server/http/node-endpoints.ts).

export { trpcEndpoint as GET, trpcEndpoint as POST };
