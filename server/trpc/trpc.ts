import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { z, ZodError } from 'zod';
import { db, type Db } from '../db';
import { resolveActor } from '../auth/actor';

// The tRPC entry points: the context every procedure sees, the error shape every client
// relies on (API.md "Errors"), and the named procedure builders routers are written with.

export type Role = 'VIEWER' | 'MARKETER' | 'OPERATOR' | 'OWNER';

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

export interface Context {
  db: Db;
  /** The request's headers (session cookie, Authorization: Bearer <api key>). */
  headers: Headers;
  /** null when the request carries no valid session or key. */
  actor: Actor | null;
}

/** Context of an HTTP request (app/api/trpc) or a React Server Component render. */
export async function createContext(opts: { headers: Headers }): Promise<Context> {
  const database = db();
  return { db: database, headers: opts.headers, actor: await resolveActor(database, opts.headers) };
}

/**
 * A lost compare-and-swap, as API.md describes it: what won and the current state, e.g.
 * `{ reason: 'WAIT_RESOLVED', resolvedBy: 'TIMEOUT', at }`.
 */
export interface Conflict {
  reason: string;
  [detail: string]: unknown;
}

/** Carries a Conflict to the error formatter, which hands it to clients as `data.conflict`. */
export class ConflictError extends Error {
  override name = 'ConflictError';
  constructor(readonly conflict: Conflict) {
    super(`Conflict: ${conflict.reason}`);
  }
}

/** The CONFLICT a router throws when the engine reports a lost claim. */
export function conflictError(conflict: Conflict, message = `Conflict: ${conflict.reason}`): TRPCError {
  return new TRPCError({ code: 'CONFLICT', message, cause: new ConflictError(conflict) });
}

function conflictOf(cause: unknown): Conflict | null {
  if (cause && typeof cause === 'object' && 'conflict' in cause) {
    const conflict = (cause as { conflict: unknown }).conflict;
    if (conflict && typeof conflict === 'object' && 'reason' in conflict) return conflict as Conflict;
  }
  return null;
}

// OpenApiMeta: a procedure with `meta.openapi` is also served as a plain JSON endpoint
// under /api/v1 and described in /api/v1/openapi.json (server/trpc/openapi.ts).
const t = initTRPC.context<Context>().meta<OpenApiMeta>().create({
  transformer: superjson,
  errorFormatter({ shape, error }) {
    const invalidInput = error.code === 'BAD_REQUEST' && error.cause instanceof ZodError ? error.cause : null;
    return {
      ...shape,
      data: {
        ...shape.data,
        // Field errors for forms, plus every issue's full path for nested input
        // (`contacts.3.email`), which flattening reduces to its first segment.
        zodError: invalidInput
          ? {
              ...z.flattenError(invalidInput),
              issues: invalidInput.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
            }
          : null,
        conflict: conflictOf(error.cause),
      },
    };
  },
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** No identity required. Only for what anyone may see, such as a sign-in form's needs. */
export const publicProcedure = t.procedure;

// Role builders (API.md "Authentication and roles"): VIEWER reads; MARKETER also enrolls,
// tracks events and manages contacts and workflows; OPERATOR also repairs; OWNER also
// manages members and keys. Every router procedure is built from one of these, so none
// can forget its check: no session or key is UNAUTHORIZED, too small a role FORBIDDEN.

const ROLE_RANK: Record<Role, number> = { VIEWER: 0, MARKETER: 1, OPERATOR: 2, OWNER: 3 };

export function hasRole(actor: Actor, minimum: Role): boolean {
  return ROLE_RANK[actor.role] >= ROLE_RANK[minimum];
}

function roleProcedure(minimum: Role) {
  return t.procedure.use(({ ctx, next }) => {
    if (!ctx.actor) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in, or send Authorization: Bearer <api key>.' });
    if (!hasRole(ctx.actor, minimum)) {
      throw new TRPCError({ code: 'FORBIDDEN', message: `This needs the ${minimum} role or above; you are ${ctx.actor.role}.` });
    }
    return next({ ctx: { ...ctx, actor: ctx.actor } });
  });
}

export const viewerProcedure = roleProcedure('VIEWER');
export const marketerProcedure = roleProcedure('MARKETER');
export const operatorProcedure = roleProcedure('OPERATOR');
export const ownerProcedure = roleProcedure('OWNER');
