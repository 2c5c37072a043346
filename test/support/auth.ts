import type { Db, Role } from '../../server/db';
import { addMember, createApiKey } from '../../server/auth/admin';
import { authFor } from '../../server/auth/auth';
import { resolveActor } from '../../server/auth/actor';
import type { Context } from '../../server/trpc/trpc';

// Real credentials for tests: people made the way an owner or the CLI makes them, signed
// in through better-auth, and API keys made the way Settings makes them. Nothing here
// fakes an actor: contexts are built by resolveActor from request headers.

/** The origin better-auth trusts in tests (PORT unset: http://localhost:3000). */
export const TEST_ORIGIN = 'http://localhost:3000';

export async function createPerson(
  db: Db,
  person: { projectId: string; email: string; password: string; role: Role },
): Promise<{ userId: string }> {
  const result = await addMember(db, { ...person, actor: 'system' });
  if (result.outcome !== 'ADDED' && result.outcome !== 'ALREADY_MEMBER') throw new Error(`could not add ${person.email}: ${result.outcome}`);
  return { userId: result.member.userId };
}

/** `name=value` pairs of a response's Set-Cookie headers, as a Cookie header sends them back. */
export function cookieHeaderFrom(response: Response): string {
  return response.headers
    .getSetCookie()
    .map((cookie) => cookie.split(';')[0]!)
    .filter((pair) => !pair.endsWith('='))
    .join('; ');
}

/**
 * Sign in through better-auth's own endpoint function (auth.api, no HTTP rate limiting,
 * which tests of the limiter exercise through the handler instead) and return the
 * Cookie header a browser would send afterwards.
 */
export async function signIn(db: Db, email: string, password: string): Promise<string> {
  const response = await authFor(db).api.signInEmail({ body: { email, password }, asResponse: true });
  if (response.status !== 200) throw new Error(`sign-in of ${email} failed: HTTP ${response.status} ${await response.text()}`);
  return cookieHeaderFrom(response);
}

/** A POST to /api/auth/<path> through better-auth's HTTP handler, as a browser at `ip` sends it. */
export function authRequest(db: Db, path: string, init: { body?: unknown; cookie?: string; ip?: string } = {}): Promise<Response> {
  const headers = new Headers({ 'content-type': 'application/json', origin: TEST_ORIGIN });
  if (init.cookie) headers.set('cookie', init.cookie);
  if (init.ip) headers.set('x-forwarded-for', init.ip);
  return authFor(db).handler(
    new Request(`${TEST_ORIGIN}/api/auth/${path}`, { method: 'POST', headers, body: JSON.stringify(init.body ?? {}) }),
  );
}

export async function newApiKey(db: Db, projectId: string, role: Role, name = `${role.toLowerCase()} key`): Promise<{ id: string; secret: string }> {
  const key = await createApiKey(db, { projectId, name, role, actor: 'system' });
  return { id: key.id, secret: key.secret };
}

export function bearer(secret: string): Headers {
  return new Headers({ authorization: `Bearer ${secret}` });
}

/** The tRPC context of a request carrying these headers, exactly as /api/trpc builds it. */
export async function contextOf(db: Db, headers: Headers): Promise<Context> {
  return { db, headers, actor: await resolveActor(db, headers) };
}
