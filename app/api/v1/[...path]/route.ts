import { restEndpoint } from '@/server/http/endpoints';

// The REST endpoints as a Next.js route (`next dev`); scripts/web.ts serves the same
// handler before Next.js (server/http/node-endpoints.ts).

export const dynamic = 'force-dynamic';

export { restEndpoint as GET, restEndpoint as POST, restEndpoint as PUT, restEndpoint as PATCH, restEndpoint as DELETE };
