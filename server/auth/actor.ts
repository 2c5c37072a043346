import { preparedRaw, type Db } from '../db';
import type { Role } from '../common/roles';
import { API_KEY_PATTERN, hashApiKey } from './api-keys';
import { authFor } from './auth';
import { PROJECT_COOKIE, PROJECT_HEADER } from '../common/cookies';
import { safeDecode } from '../url';

// Who sent a request. Programs send `Authorization: Bearer <api key>`; people carry the
// session cookie better-auth set at sign-in and work in one project at a time, chosen by
// the `x-waypost-project` header or the `waypost_project` cookie (the console's project
// switcher), and only ever one they are a member of.

/** Who is calling, in which project, with which role: a signed-in person or an API key. */
export interface Actor {
  kind: 'user' | 'apikey';
  /** The audit log's actor: "user:<userId>" or "apikey:<apiKeyId>". */
  id: string;
  /** For people: their email; for keys: the key's name. Never a secret. */
  label: string;
  userId: string | null;
  apiKeyId: string | null;
  projectId: string;
  role: Role;
}

/** How stale an API key's lastUsedAt may be (see actorOfApiKey). */
const LAST_USED_RESOLUTION_SECONDS = 60;

/**
 * Who sent this request: a signed-in person (session cookie, via better-auth) in the
 * project they chose, or an API key (Authorization: Bearer). null when neither is valid.
 */
export async function resolveActor(db: Db, headers: Headers): Promise<Actor | null> {
  const authorization = headers.get('authorization');
  // A request that names a key is judged by that key alone: a bad key never falls back to
  // a cookie the same client may also hold.
  if (authorization !== null) return actorOfApiKey(db, authorization);
  // Nothing to look up (a build-time render, a signed-out visitor): no database round trip.
  if (!headers.get('cookie')) return null;
  return actorOfSession(db, headers);
}

async function actorOfApiKey(db: Db, authorization: string): Promise<Actor | null> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization.trim());
  if (!match || !API_KEY_PATTERN.test(match[1]!)) return null;
  // Every API call starts here, so it is one round trip over a named prepared statement
  // (server/db/prepared.ts, preparedRaw), not a Prisma lookup and a second statement for lastUsedAt.
  // lastUsedAt is a hint for owners ("is this key still in use?"), not a log: it is
  // written at most once a minute per key, so a busy integration calling hundreds of
  // times a second does not turn every call into a write on one hot row. The condition is
  // on the row being updated, so of two calls racing past the minute only one writes (the
  // other re-checks the updated row and skips it).
  const [key] = await preparedRaw(db).$queryRaw<{ id: string; name: string; projectId: string; role: Role; revokedAt: Date | null }[]>`
    -- actorOfApiKey
    WITH k AS (SELECT id, name, "projectId", role::text AS role, "revokedAt" FROM "ApiKey" WHERE "hashedSecret" = ${hashApiKey(match[1]!)}),
    touched AS (
      UPDATE "ApiKey" a SET "lastUsedAt" = now()
        FROM k
       WHERE a.id = k.id AND a."revokedAt" IS NULL
         AND (a."lastUsedAt" IS NULL OR a."lastUsedAt" < now() - make_interval(secs => ${LAST_USED_RESOLUTION_SECONDS}::int))
      RETURNING a.id)
    SELECT id, name, "projectId", role, "revokedAt" FROM k`;
  if (!key || key.revokedAt) return null;
  return {
    kind: 'apikey',
    id: `apikey:${key.id}`,
    label: key.name,
    userId: null,
    apiKeyId: key.id,
    projectId: key.projectId,
    role: key.role,
  };
}

/**
 * The project a request asks for: header first (scripts, tests), then the switcher's
 * cookie. `value` is null for a cookie that is not valid percent-encoding.
 */
export function requestedProject(headers: Headers): { via: 'header' | 'cookie'; value: string | null } | null {
  const fromHeader = headers.get(PROJECT_HEADER)?.trim();
  if (fromHeader) return { via: 'header', value: fromHeader };
  for (const part of (headers.get('cookie') ?? '').split(';')) {
    const [name, ...value] = part.split('=');
    if (name?.trim() === PROJECT_COOKIE) return { via: 'cookie', value: safeDecode(value.join('=').trim()) };
  }
  return null;
}

async function actorOfSession(db: Db, headers: Headers): Promise<Actor | null> {
  const person = await signedInPerson(db, headers);
  if (!person?.current) return null;
  return {
    kind: 'user',
    id: `user:${person.userId}`,
    label: person.email,
    userId: person.userId,
    apiKeyId: null,
    projectId: person.current.projectId,
    role: person.current.role,
  };
}

export interface ProjectMembership {
  projectId: string;
  projectName: string;
  role: Role;
}

export interface SignedInPerson {
  userId: string;
  email: string;
  name: string;
  /** Every project the person belongs to, by name, for the console's project switcher. */
  memberships: ProjectMembership[];
  /**
   * The project they act in: the requested one if they belong to it, otherwise their
   * first by name. A request for a project one does not belong to falls back rather than
   * failing, so a stale switcher cookie never locks anyone out. null: no project at all.
   */
  current: ProjectMembership | null;
}

/** The person behind a session cookie, with all their projects; null when not signed in. */
export async function signedInPerson(db: Db, headers: Headers): Promise<SignedInPerson | null> {
  if (!headers.get('cookie')) return null;
  const session = await authFor(db).api.getSession({ headers });
  if (!session) return null;
  const rows = await db.membership.findMany({
    where: { userId: session.user.id },
    orderBy: [{ project: { name: 'asc' } }, { projectId: 'asc' }],
    select: { projectId: true, role: true, project: { select: { name: true } } },
  });
  const memberships = rows.map((m) => ({ projectId: m.projectId, projectName: m.project.name, role: m.role }));
  const requested = requestedProject(headers)?.value;
  return {
    userId: session.user.id,
    email: session.user.email,
    name: session.user.name,
    memberships,
    current: memberships.find((m) => m.projectId === requested) ?? memberships[0] ?? null,
  };
}
