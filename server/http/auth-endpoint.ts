import { authFor } from '../auth/auth';
import { beginSignInAttempt, finishSignInAttempt } from '../auth/sign-in-limit';
import { databaseUnavailable } from '../database-unavailable';
import { db } from '../db';
import { DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE_MESSAGE, logOutageOf } from '../trpc/errors';
import { boundedRequest, malformedRequest } from './api-request';

// better-auth's endpoints (sign-in, sign-out, session) under /api/auth, for the Next.js
// route app/api/auth/[...all]. The instance is made on first request, not at import, so
// `next build` needs neither a database nor a secret. Nobody is signed in here yet: a
// body is read up to a few kilobytes, no more. A password sign-in also passes the
// per-account limit (server/auth/sign-in-limit.ts). The database unreachable is a 503
// with Retry-After here too, as on /api/trpc and /api/v1.

const AUTH_BODY_BYTES = 16 * 1024;

function tooManyAttempts(retryAfterSeconds: number): Response {
  return Response.json(
    {
      code: 'TOO_MANY_ATTEMPTS',
      message: `Too many wrong passwords for this account. Try again in ${Math.ceil(retryAfterSeconds / 60)} min, or ask an owner to reset it.`,
    },
    { status: 429, headers: { 'Retry-After': String(retryAfterSeconds) } },
  );
}

async function emailOf(request: Request): Promise<string | null> {
  try {
    const body: unknown = await request.clone().json();
    const email = (body as { email?: unknown } | null)?.email;
    return typeof email === 'string' && email.trim() ? email : null;
  } catch {
    return null;
  }
}

function databaseUnreachable(cause: unknown): Response {
  logOutageOf('auth', cause);
  return Response.json(
    { code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE_MESSAGE },
    { status: 503, headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) } },
  );
}

/** Why the database cannot be reached right now, or null when it answers. */
async function outage(): Promise<unknown> {
  try {
    await db().$queryRaw`
      -- authEndpoint.databaseReachable
      SELECT 1`;
    return null;
  } catch (error) {
    return databaseUnavailable(error) ? error : null;
  }
}

/** /api/auth/<better-auth endpoint>: GET and POST. */
export async function authEndpoint(incoming: Request): Promise<Response> {
  let response: Response;
  try {
    response = await answer(incoming);
  } catch (error) {
    if (databaseUnavailable(error)) return databaseUnreachable(error);
    throw error;
  }
  // better-auth answers a query that failed with a 500 of its own, its cause in its log:
  // while the database cannot be reached, that answer is an outage.
  if (response.status >= 500) {
    const cause = await outage();
    if (cause) return databaseUnreachable(cause);
  }
  return response;
}

async function answer(incoming: Request): Promise<Response> {
  const malformed = malformedRequest(incoming);
  if (malformed) return malformed;
  const request = await boundedRequest(incoming, AUTH_BODY_BYTES);
  if (request instanceof Response) return request;
  const auth = authFor(db());
  const email = request.method === 'POST' && new URL(request.url).pathname.endsWith('/sign-in/email') ? await emailOf(request) : null;
  if (!email) return auth.handler(request);

  const gate = await beginSignInAttempt(db(), email);
  if (!gate.allowed) return tooManyAttempts(gate.retryAfterSeconds);
  let response: Response | undefined;
  try {
    response = await auth.handler(request);
    return response;
  } finally {
    const outcome = response?.ok ? 'SIGNED_IN' : response?.status === 401 ? 'WRONG_PASSWORD' : 'OTHER';
    await finishSignInAttempt(db(), email, gate.attemptId, outcome).catch(() => {});
  }
}
