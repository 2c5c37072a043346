import { createOpenApiFetchHandler } from 'trpc-to-openapi';
import { boundedRequest } from '@/server/trpc/http';
import { REST_BASE_PATH } from '@/server/trpc/openapi';
import { appRouter } from '@/server/trpc/root';
import { createContext } from '@/server/trpc/trpc';

// POST /api/v1/enrollments, POST /api/v1/events, ...: the procedures with `meta.openapi`,
// as plain JSON endpoints (see server/trpc/openapi.ts and /api/v1/openapi.json).

export const dynamic = 'force-dynamic';

async function handler(incoming: Request): Promise<Response> {
  const req = await boundedRequest(incoming);
  if (req instanceof Response) return req;
  return createOpenApiFetchHandler({
    endpoint: REST_BASE_PATH,
    router: appRouter,
    req,
    createContext: () => createContext({ headers: req.headers }),
    onError({ error, path }) {
      if (error.code === 'INTERNAL_SERVER_ERROR') console.error(`REST ${path ?? '<no path>'} failed:`, error.cause ?? error);
    },
  });
}

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
