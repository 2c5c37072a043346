import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { boundedRequest, withDocumentedProcedureNames } from '@/server/trpc/http';
import { appRouter } from '@/server/trpc/root';
import { createContext } from '@/server/trpc/trpc';

async function handler(incoming: Request) {
  const bounded = await boundedRequest(incoming);
  if (bounded instanceof Response) return bounded;
  const req = withDocumentedProcedureNames(bounded);
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req,
    router: appRouter,
    createContext: () => createContext({ headers: req.headers }),
    onError({ error, path }) {
      // Bad input, lost claims and missing rows are answers; anything else is a bug or an
      // outage and belongs in the server log.
      if (error.code === 'INTERNAL_SERVER_ERROR') console.error(`tRPC ${path ?? '<no path>'} failed:`, error.cause ?? error);
    },
  });
}

export { handler as GET, handler as POST };
