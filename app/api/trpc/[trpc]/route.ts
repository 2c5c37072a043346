import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { errorId, logOutage, outageHeaders } from '@/server/trpc/errors';
import { apiRefusal, bodyLimitOf, boundedRequest, malformedRequest, MAX_BATCH_SIZE, refusedRequest, withDocumentedProcedureNames, withRefusalHeaders, type ApiRefusal } from '@/server/trpc/http';
import { appRouter } from '@/server/trpc/root';
import { createApiContext } from '@/server/trpc/trpc';

function serve(req: Request, context: () => ReturnType<typeof createApiContext>) {
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req,
    router: appRouter,
    // A batch of hundreds of calls is one request's worth of someone else's capacity: 400 beyond this.
    maxBatchSize: MAX_BATCH_SIZE,
    createContext: context,
    onError({ error, path }) {
      // Bad input, lost claims and missing rows are answers; anything else is a bug or an
      // outage and belongs in the server log.
      if (error.code === 'INTERNAL_SERVER_ERROR') console.error(`tRPC ${path ?? '<no path>'} failed (request ${errorId(error)}):`, error.cause ?? error);
      if (error.code === 'SERVICE_UNAVAILABLE') logOutage('tRPC', error);
    },
    // A 503 (the database unreachable) says when to try again, alone or in a batch.
    responseMeta: ({ errors }) => ({ headers: outageHeaders(errors) }),
  });
}

/** A refusal answered by tRPC itself, so every call of the batch gets the usual error shape (TOO_MANY_REQUESTS, FORBIDDEN). */
async function refuse(incoming: Request, refusal: ApiRefusal): Promise<Response> {
  const response = await serve(withDocumentedProcedureNames(refusedRequest(incoming)), () => Promise.reject(refusal.error));
  return withRefusalHeaders(response, refusal);
}

async function handler(incoming: Request) {
  const malformed = malformedRequest(incoming);
  if (malformed) return malformed;
  const refusal = await apiRefusal(incoming, { cookies: true });
  if (refusal) return refuse(incoming, refusal);
  const bounded = await boundedRequest(incoming, bodyLimitOf(incoming, { cookies: true }));
  if (bounded instanceof Response) return bounded;
  const req = withDocumentedProcedureNames(bounded);
  return serve(req, () => createApiContext({ headers: req.headers }));
}

export { handler as GET, handler as POST };
