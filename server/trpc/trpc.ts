import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { z, ZodError } from 'zod';
import { db, type Db } from '../db';
import { requestedProject, resolveActor, signedInPerson, type Actor } from '../auth/actor';
import { PROJECT_COOKIE, PROJECT_HEADER } from '../common/cookies';
import { atLeast, type Role } from '../common/roles';
import { databaseBusy, databaseUnavailable } from '../database-unavailable';
import { asDatabaseUnavailable, DATABASE_RETRY_AFTER_SECONDS, databaseBusyError, databaseUnavailableError, internalErrorMessage } from './errors';
import { id as rowId } from '../common/inputs';

// The tRPC entry points: the context every procedure sees, the error shape every client
// relies on (docs/api.md, "Errors"), and the named procedure builders routers are written with.

export interface Context {
  db: Db;
  /** The request's headers (session cookie, Authorization: Bearer <api key>). */
  headers: Headers;
  /** null when the request carries no valid session or key. */
  actor: Actor | null;
}

/** Context of a React Server Component render (and, through createApiContext, of an API request). */
export async function createContext(opts: { headers: Headers }): Promise<Context> {
  const database = db();
  try {
    return { db: database, headers: opts.headers, actor: await resolveActor(database, opts.headers) };
  } catch (error) {
    // Resolving the caller reads the database before any procedure runs.
    throw asDatabaseUnavailable(error);
  }
}

/**
 * Context of an API request (app/api/trpc, app/api/v1). A request that names its project
 * must name one the caller acts in: resolveActor falls back to a person's first project
 * (so that a stale switcher cookie never locks the console out), but a script sending
 * `x-waypost-project: B` must not have its writes land in project A. So, over the API:
 * a header that is not a project id, or a switcher cookie that is not one, is
 * BAD_REQUEST; a header naming a project the person (or the key) is not in is FORBIDDEN.
 * A cookie naming a project one has left still falls back, as in the console. An API key
 * is judged by itself alone: the browser's switcher cookie means nothing to it.
 */
export async function createApiContext(opts: { headers: Headers }): Promise<Context> {
  const requested = requestedProject(opts.headers);
  const judgedByKey = opts.headers.get('authorization') !== null;
  if (requested?.via === 'header' && !rowId.safeParse(requested.value).success) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `The ${PROJECT_HEADER} header is not a project id.` });
  }
  if (requested?.via === 'cookie' && !judgedByKey && !rowId.safeParse(requested.value).success) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `The ${PROJECT_COOKIE} cookie is not a project id; choose a project again.` });
  }
  const context = await createContext(opts);
  if (requested?.via === 'header' && context.actor && context.actor.projectId !== requested.value) {
    throw new TRPCError({ code: 'FORBIDDEN', message: `You are not a member of the project ${PROJECT_HEADER} names.` });
  }
  return context;
}

/**
 * A lost compare-and-swap, as docs/api.md ("Errors") describes it: what won and the current state, e.g.
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

/**
 * An operator's repair the database was too busy to finish (server/repair/transaction.ts:
 * rolled back, audited FAILED): 503 with Retry-After, and `data.conflict.reason` BUSY.
 */
export function repairBusyError(message: string): TRPCError {
  return new TRPCError({
    code: 'SERVICE_UNAVAILABLE',
    message: `${message.charAt(0).toUpperCase()}${message.slice(1)} in ${DATABASE_RETRY_AFTER_SECONDS} seconds.`,
    cause: new ConflictError({ reason: 'BUSY', retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS }),
  });
}

function conflictOf(cause: unknown): Conflict | null {
  if (cause && typeof cause === 'object' && 'conflict' in cause) {
    const conflict = (cause as { conflict: unknown }).conflict;
    if (conflict && typeof conflict === 'object' && 'reason' in conflict) return conflict as Conflict;
  }
  return null;
}

// OpenApiMeta: a procedure with `meta.openapi` is also served as a plain JSON endpoint
// under /api/v1 and described in /api/v1/openapi.json (server/http/openapi.ts).
const t = initTRPC.context<Context>().meta<OpenApiMeta>().create({
  transformer: superjson,
  errorFormatter({ shape, error }) {
    const invalidInput = error.code === 'BAD_REQUEST' && error.cause instanceof ZodError ? error.cause : null;
    // Never a stack, in any environment; an unexpected error's own message stays in the log.
    const { stack: _stack, ...data } = shape.data;
    return {
      ...shape,
      message: error.code === 'INTERNAL_SERVER_ERROR' ? internalErrorMessage(error) : shape.message,
      data: {
        ...data,
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

/**
 * Every procedure: a call that met an unreachable database (server/database-unavailable.ts)
 * fails SERVICE_UNAVAILABLE, which the HTTP endpoints answer 503 with Retry-After, rather
 * than INTERNAL_SERVER_ERROR's 500.
 */
const procedure = t.procedure.use(async ({ next }) => {
  const result = await next();
  // Only an unexpected error can be an outage or a busy database: a refusal (CONFLICT, NOT_FOUND...) is an answer.
  if (!result.ok && result.error.code === 'INTERNAL_SERVER_ERROR') {
    if (databaseUnavailable(result.error)) throw databaseUnavailableError(result.error.cause ?? result.error);
    if (databaseBusy(result.error)) throw databaseBusyError(result.error.cause ?? result.error);
  }
  return result;
});

/** No identity required. Only for what anyone may see, such as a sign-in form's needs. */
export const publicProcedure = procedure;

// Role builders (docs/api.md, "Authentication and roles"): VIEWER reads; MARKETER also enrolls,
// tracks events and manages contacts and workflows; OPERATOR also repairs; OWNER also
// manages members and keys. Every router procedure is built from one of these, so none
// can forget its check: no session or key is UNAUTHORIZED, too small a role FORBIDDEN.

function roleProcedure(minimum: Role) {
  return procedure.use(({ ctx, next }) => {
    if (!ctx.actor) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in, or send Authorization: Bearer <api key>.' });
    if (!atLeast(ctx.actor.role, minimum)) {
      throw new TRPCError({ code: 'FORBIDDEN', message: `This needs the ${minimum} role or above; you are ${ctx.actor.role}.` });
    }
    return next({ ctx: { ...ctx, actor: ctx.actor } });
  });
}

export const viewerProcedure = roleProcedure('VIEWER');
export const marketerProcedure = roleProcedure('MARKETER');
export const operatorProcedure = roleProcedure('OPERATOR');
export const ownerProcedure = roleProcedure('OWNER');

/**
 * A signed-in person, whatever projects they belong to (none, when they have only been
 * invited so far): for accepting or declining the invitations addressed to them. API keys
 * act for a project, never for a person, so they are refused here.
 */
export const personProcedure = procedure.use(async ({ ctx, next }) => {
  const person = ctx.headers.get('authorization') === null ? await signedInPerson(ctx.db, ctx.headers) : null;
  if (!person) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in to see and answer your invitations (API keys cannot).' });
  return next({ ctx: { ...ctx, person } });
});
