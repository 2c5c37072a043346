import 'server-only';

import { headers } from 'next/headers';
import { cache } from 'react';
import { signedInPerson as personBehind, type Actor, type SignedInPerson } from '../auth/actor';
import { countPendingInvitationsFor, invitationByToken, type ReceivedInvitation } from '../auth/invitee';
import { db } from '../db';
import { createCaller } from '../trpc/root';
import { createContext, type Context } from '../trpc/trpc';

// The console's pages (React Server Components) read through here, never the database:
// the tRPC caller on the context a render's request makes (the same createContext as the
// prefetches of app/_trpc/server.tsx, made once per request), who is acting, and the
// few reads a page needs before anyone is acting: the person behind a session cookie who
// may belong to no project yet, and an invitation link. Procedures still decide every
// role, as they do for /api/trpc.
//
// The render's context is createContext's, not createApiContext's: a console page falls
// back to the person's first project when the switcher's cookie names one they left or is
// not a project id (so a stale cookie never locks anyone out), where the API answers
// BAD_REQUEST or FORBIDDEN.

export type { Actor, ProjectMembership, SignedInPerson } from '../auth/actor';
export type { ReceivedInvitation } from '../auth/invitee';

/** The context of this render's request, made (and its actor resolved) once per request: `cache` scopes it to the render. */
export const requestContext = cache(async (): Promise<Context> => createContext({ headers: await headers() }));

/** Calls procedures in-process, as the request's actor: `(await serverCaller()).workflows.list()`. */
export async function serverCaller() {
  return createCaller(await requestContext());
}

/** Who acts in this request, in which project and with which role; null when signed out or in no project. */
export async function currentActor(): Promise<Actor | null> {
  return (await requestContext()).actor;
}

/**
 * The person behind the request's session cookie, with all their projects (none, when
 * they have only been invited so far); null when not signed in. Once per request.
 */
export const signedInPerson = cache(async (): Promise<SignedInPerson | null> => personBehind(db(), await headers()));

/** How many pending invitations are addressed to this email (the console's banner). */
export function pendingInvitationCount(email: string): Promise<number> {
  return countPendingInvitationsFor(db(), email);
}

/** The invitation behind a link (any status), or null for a token that names none. Anyone holding the link may see it. */
export function invitationFromLink(token: string): Promise<ReceivedInvitation | null> {
  return invitationByToken(db(), token);
}
