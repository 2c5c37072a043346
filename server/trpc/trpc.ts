import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import { z, ZodError } from 'zod';
import { db, type Db } from '../db';

// The tRPC entry points: the context every procedure sees, the error shape every client
// relies on (API.md "Errors"), and the named procedure builders routers are written with.

export interface Context {
  db: Db;
  /** The request's headers; the auth work reads the session cookie and API key from them. */
  headers: Headers;
}

/** Context of an HTTP request (app/api/trpc) or a React Server Component render. */
export function createContext(opts: { headers: Headers }): Context {
  return { db: db(), headers: opts.headers };
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

const t = initTRPC.context<Context>().create({
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
// manages members and keys. Sessions, API keys and role checks arrive with issue 4; until
// then the console runs without sign-in, so reading is open to every request.
export const viewerProcedure = publicProcedure;
