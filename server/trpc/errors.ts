import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { databaseUnavailable } from '../database-unavailable';
import { log } from '../log';

// An unexpected error (a bug, an outage) reaches the client as a generic sentence with a
// request id; the server's log line carries the same id with the real error. Its message
// and stack never leave the server: they may name tables, values or file paths.

const ids = new WeakMap<object, string>();

/** The id of this error, the same for the log line and for the answer, whichever asks first. */
export function errorId(error: object): string {
  let id = ids.get(error);
  if (!id) {
    id = randomUUID().slice(0, 8);
    ids.set(error, id);
  }
  return id;
}

export function internalErrorMessage(error: object): string {
  return `Internal error (request ${errorId(error)}): the server's log has the details.`;
}

// The database unreachable (PostgreSQL down or restarting, the network gone, every
// connection busy past DATABASE_CONNECT_TIMEOUT_SECONDS): not a bug, and nothing the
// caller did. Every API call that meets it answers 503 SERVICE_UNAVAILABLE with this
// sentence and Retry-After, so clients and the console retry instead of reporting a 500.

/** The Retry-After of a 503 (seconds): about how long a PostgreSQL restart takes. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;
/**
 * A change cut off mid-way may or may not have been saved (the answer to a COMMIT can be
 * what was lost), so the sentence says retrying is safe rather than that nothing happened.
 */
export const DATABASE_UNAVAILABLE_MESSAGE = `The database is unreachable right now: retry in ${DATABASE_RETRY_AFTER_SECONDS} seconds. A change this call asked for may or may not have been saved; retrying it is safe (an enrollment already made answers CONFLICT, an event with the same idempotencyKey is stored once).`;

/**
 * The 503 for a call that met an unreachable database. Its message is ours alone: the
 * driver's (host names, ports) stays in the log.
 */
export function databaseUnavailableError(cause: unknown): TRPCError {
  return new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE_MESSAGE, cause });
}

/**
 * The database busy (server/database-unavailable.ts databaseBusy): a statement waited on a
 * lock, or a transaction ran, past its bound and was rolled back. Also a 503 with
 * Retry-After, with its own sentence: here nothing was saved, and retrying is safe.
 */
export const DATABASE_BUSY_MESSAGE = `The database was too busy to finish this call in time (a row it needed was held by other work): nothing was changed. Retry in ${DATABASE_RETRY_AFTER_SECONDS} seconds.`;

export function databaseBusyError(cause: unknown): TRPCError {
  return new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: DATABASE_BUSY_MESSAGE, cause });
}

/** A TRPCError for an outage as it is, anything else unchanged: for code around a procedure (its context). */
export function asDatabaseUnavailable(error: unknown): unknown {
  if (error instanceof TRPCError && error.code === 'SERVICE_UNAVAILABLE') return error;
  return databaseUnavailable(error) ? databaseUnavailableError(error) : error;
}

/** The Retry-After header of an answer that carries a 503 (alone, or among a batch's answers). */
export function outageHeaders(errors: readonly TRPCError[]): Record<string, string> | undefined {
  return errors.some((e) => e.code === 'SERVICE_UNAVAILABLE') ? { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) } : undefined;
}

let lastOutageLog = 0;

/**
 * One log line for the requests an outage refuses, at most every 10 seconds: a thousand
 * refused calls a second say nothing more than the first.
 */
export function logOutage(where: string, error: TRPCError): void {
  if (error.message === DATABASE_BUSY_MESSAGE) return logBusy(where, error.cause);
  logOutageOf(where, error.cause);
}

let lastBusyLog = 0;

/** As logOutage, for calls the database was too busy to finish (at most one line every 10 seconds). */
function logBusy(where: string, cause: unknown): void {
  const now = Date.now();
  if (now - lastBusyLog < 10_000) return;
  lastBusyLog = now;
  const text = cause instanceof Error ? cause.message.trim().split('\n').at(-1) : String(cause);
  log.warn(`${where}: database busy (a statement or transaction ran past its bound and was rolled back), answering 503 with Retry-After (${text})`);
}

/** logOutage for an outage's own error (a route outside tRPC: /api/auth). */
export function logOutageOf(where: string, cause: unknown): void {
  const now = Date.now();
  if (now - lastOutageLog < 10_000) return;
  lastOutageLog = now;
  const text = cause instanceof Error ? cause.message.trim().split('\n').at(-1) : String(cause);
  log.warn(`${where}: database unreachable, answering 503 with Retry-After (${text})`);
}
