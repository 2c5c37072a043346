import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { createOpenApiFetchHandler } from 'trpc-to-openapi';
import { TRPCError } from '@trpc/server';
import { log } from '../log';
import { asDatabaseUnavailable, errorId, internalErrorMessage, logOutage, outageHeaders } from '../trpc/errors';
import { appRouter } from '../trpc/root';
import { createApiContext, type Context } from '../trpc/trpc';
import { apiRefusal, bodyLimitOf, boundedRequest, malformedRequest, MAX_BATCH_SIZE, refusedRequest, withDecodedPathParams, withDocumentedProcedureNames, withEmptyBodyAsJson, withoutCookies, withRefusalHeaders, type ApiRefusal } from './api-request';
import { REST_BASE_PATH } from './openapi';
import { asProblem, problem, problemResponse } from './problem';
import { bodyHashOf, claimIdempotencyKey, idempotencyKeyOf, settleIdempotencyKey } from './idempotency';

// The two API endpoints as fetch handlers, one module for both ways they are served: the
// Next.js route handlers (app/api/trpc/[trpc], app/api/v1/[...path]; what `next dev`
// runs) and scripts/web.ts, which answers these paths itself before Next.js's request
// pipeline (server/http/node-endpoints.ts). Whichever serves a request, this code decides
// everything about its answer: refusals (rate limits, cross-site changes), the body bound,
// the context (API keys, sessions, projects), roles, and the error mapping.

function serveTrpc(req: Request, context: () => Promise<Context>): Promise<Response> {
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
      if (error.code === 'INTERNAL_SERVER_ERROR') log.error(`tRPC ${path ?? '<no path>'} failed (request ${errorId(error)}):`, { err: error.cause ?? error });
      if (error.code === 'SERVICE_UNAVAILABLE') logOutage('tRPC', error);
    },
    // A 503 (the database unreachable) says when to try again, alone or in a batch.
    responseMeta: ({ errors }) => ({ headers: outageHeaders(errors) }),
  });
}

/** A refusal answered by tRPC itself, so every call of the batch gets the usual error shape (TOO_MANY_REQUESTS, FORBIDDEN). */
async function refuseTrpc(incoming: Request, refusal: ApiRefusal): Promise<Response> {
  const response = await serveTrpc(withDocumentedProcedureNames(refusedRequest(incoming)), () => Promise.reject(refusal.error));
  return withRefusalHeaders(response, refusal);
}

/** /api/trpc/<procedure or batch>: GET for queries (and subscriptions), POST for mutations. */
export async function trpcEndpoint(incoming: Request): Promise<Response> {
  const malformed = malformedRequest(incoming);
  if (malformed) return malformed;
  const refusal = await apiRefusal(incoming, { cookies: true });
  if (refusal) return refuseTrpc(incoming, refusal);
  const bounded = await boundedRequest(incoming, bodyLimitOf(incoming, { cookies: true }));
  if (bounded instanceof Response) return bounded;
  const req = withDocumentedProcedureNames(bounded);
  return serveTrpc(req, () => createApiContext({ headers: req.headers }));
}

/** The methods each endpoint serves; Next.js answers the others (405, and HEAD and OPTIONS itself). */
export const TRPC_METHODS = ['GET', 'POST'] as const;
export const REST_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

// POST /api/v1/enrollments, POST /api/v1/events, ...: the procedures with `meta.openapi`,
// as plain JSON endpoints (see server/http/openapi.ts and /api/v1/openapi.json). They take
// API keys only: cookies are dropped before the context is made, so a page on another
// site can never act here with a visitor's session.

function serveRest(req: Request, context: () => Promise<Context>): Promise<Response> {
  return createOpenApiFetchHandler({
    endpoint: REST_BASE_PATH,
    router: appRouter,
    req,
    createContext: context,
    onError({ error, path }) {
      if (error.code === 'INTERNAL_SERVER_ERROR') log.error(`REST ${path ?? '<no path>'} failed (request ${errorId(error)}):`, { err: error.cause ?? error });
      if (error.code === 'SERVICE_UNAVAILABLE') logOutage('REST', error);
    },
    responseMeta: ({ errors, data }) => ({ headers: { ...outageHeaders(errors), ...nextLinkHeader(data) } }),
  });
}

/** A list's `next` page also as `Link: <...>; rel="next"`. */
function nextLinkHeader(data: unknown[] | undefined): Record<string, string> | undefined {
  const next = (data?.[0] as { next?: unknown } | undefined)?.next;
  return typeof next === 'string' && next.startsWith(REST_BASE_PATH) ? { Link: `<${next}>; rel="next"` } : undefined;
}

/** /api/v1/<path>: the REST endpoints; every error answer is problem details (problem.ts). */
export async function restEndpoint(incoming: Request): Promise<Response> {
  return asProblem(await restAnswer(incoming));
}

async function restAnswer(incoming: Request): Promise<Response> {
  const malformed = malformedRequest(incoming);
  if (malformed) return malformed;
  const refusal = await apiRefusal(incoming, { cookies: false });
  // Answered by the OpenAPI handler itself, then made problem details like every other error (code TOO_MANY_REQUESTS).
  if (refusal) return withRefusalHeaders(await serveRest(refusedRequest(incoming), () => Promise.reject(refusal.error)), refusal);
  const bounded = await boundedRequest(incoming, bodyLimitOf(incoming, { cookies: false }));
  if (bounded instanceof Response) return bounded;
  const req = await withEmptyBodyAsJson(withDecodedPathParams(bounded));
  const headers = withoutCookies(req.headers);
  const key = req.method === 'POST' ? idempotencyKeyOf(req) : null;
  if (key instanceof Response) return key;
  if (key === null) return serveRest(req, () => createApiContext({ headers }));
  return serveIdempotent(req, key, headers);
}

/**
 * A POST with an Idempotency-Key (idempotency.ts): the caller is resolved first (keys are
 * per API key), the key claimed, the request run once and its answer stored. A request
 * that is refused before any key is known (no valid API key, a bad project header) is
 * answered as without the header.
 */
async function serveIdempotent(req: Request, key: string, headers: Headers): Promise<Response> {
  let context: Context;
  try {
    context = await createApiContext({ headers });
  } catch (error) {
    return serveRest(req, () => Promise.reject(error));
  }
  const actor = context.actor;
  if (!actor?.apiKeyId) return serveRest(req, () => Promise.resolve(context));
  const url = new URL(req.url);
  const claimed = { projectId: actor.projectId, apiKeyId: actor.apiKeyId, key, method: req.method, path: url.pathname + url.search, bodyHash: bodyHashOf(await req.clone().arrayBuffer()) };
  try {
    const claim = await claimIdempotencyKey(context.db, claimed);
    if (!claim.won) return claim.answer;
    const answer = await asProblem(await serveRest(req, () => Promise.resolve(context)));
    return await settleIdempotencyKey(context.db, claimed, claim.token, answer);
  } catch (error) {
    const outage = asDatabaseUnavailable(error);
    if (outage instanceof TRPCError) {
      logOutage('REST', outage);
      return problemResponse(problem('SERVICE_UNAVAILABLE', outage.message), outageHeaders([outage]));
    }
    log.error(`REST ${url.pathname} failed (request ${errorId(error as object)}):`, { err: error });
    return problemResponse(problem('INTERNAL_SERVER_ERROR', internalErrorMessage(error as object)));
  }
}
