import { createOpenApiFetchHandler } from 'trpc-to-openapi';
import { errorId, logOutage, outageHeaders } from '@/server/trpc/errors';
import { apiRefusal, bodyLimitOf, boundedRequest, malformedRequest, refusedRequest, withoutCookies, withRefusalHeaders } from '@/server/trpc/http';
import { REST_BASE_PATH } from '@/server/trpc/openapi';
import { appRouter } from '@/server/trpc/root';
import { createApiContext, type Context } from '@/server/trpc/trpc';

// POST /api/v1/enrollments, POST /api/v1/events, ...: the procedures with `meta.openapi`,
// as plain JSON endpoints (see server/trpc/openapi.ts and /api/v1/openapi.json). They take
// API keys only: cookies are dropped before the context is made, so a page on another
// site can never act here with a visitor's session.

export const dynamic = 'force-dynamic';

function serve(req: Request, context: () => Promise<Context>): Promise<Response> {
  return createOpenApiFetchHandler({
    endpoint: REST_BASE_PATH,
    router: appRouter,
    req,
    createContext: context,
    onError({ error, path }) {
      if (error.code === 'INTERNAL_SERVER_ERROR') console.error(`REST ${path ?? '<no path>'} failed (request ${errorId(error)}):`, error.cause ?? error);
      if (error.code === 'SERVICE_UNAVAILABLE') logOutage('REST', error);
    },
    responseMeta: ({ errors }) => ({ headers: outageHeaders(errors) }),
  });
}

async function handler(incoming: Request): Promise<Response> {
  const malformed = malformedRequest(incoming);
  if (malformed) return malformed;
  const refusal = await apiRefusal(incoming, { cookies: false });
  // Answered by the OpenAPI handler itself, so the body is its usual error shape (code TOO_MANY_REQUESTS).
  if (refusal) return withRefusalHeaders(await serve(refusedRequest(incoming), () => Promise.reject(refusal.error)), refusal);
  const req = await boundedRequest(incoming, bodyLimitOf(incoming, { cookies: false }));
  if (req instanceof Response) return req;
  return serve(req, () => createApiContext({ headers: withoutCookies(req.headers) }));
}

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
