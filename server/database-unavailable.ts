// What a lost database looks like from here: PostgreSQL down or restarting, the network
// gone, every connection busy past the wait bound. Requests that meet one answer 503 with
// Retry-After (server/trpc/errors.ts); workers back off and resume (server/engine/worker.ts).
// Bad SQL, constraint violations and lost claims are not outages.

/** SQLSTATEs of a server that is going away or not accepting connections. */
const UNAVAILABLE_SQLSTATE = /^(08...|57P01|57P02|57P03|53300)$/;
/** Socket errors of a connection that cannot be made or was cut. */
const UNAVAILABLE_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** Prisma's codes for an unreachable server, a timed-out connection or pool, a closed connection. */
const UNAVAILABLE_PRISMA = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** The kinds @prisma/adapter-pg gives those errors (meta.driverAdapterError.cause.kind). */
const UNAVAILABLE_ADAPTER_KIND = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
/**
 * node-postgres and pg-pool's own errors, which carry no code; and Prisma's P2028 when an
 * interactive transaction could not get a connection in time (its other P2028s, a
 * transaction that ran too long or was already closed, are not outages).
 */
const UNAVAILABLE_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|Client has encountered a connection error|Server has closed the connection|Can't reach database server|Connection refused|Unable to start a transaction in the given time/i;

function unavailableHere(error: object): boolean {
  const { code, message, meta } = error as { code?: unknown; message?: unknown; meta?: unknown };
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SOCKET.has(code) || UNAVAILABLE_PRISMA.has(code))) return true;
  const adapter = (meta as { driverAdapterError?: { cause?: { kind?: unknown; code?: unknown } } } | undefined)?.driverAdapterError?.cause;
  if (adapter) {
    if (typeof adapter.kind === 'string' && UNAVAILABLE_ADAPTER_KIND.has(adapter.kind)) return true;
    if (adapter.kind === 'postgres' && typeof adapter.code === 'string' && UNAVAILABLE_SQLSTATE.test(adapter.code)) return true;
    // A driver error of another kind (a constraint, bad input) is not an outage, whatever its message says.
    return false;
  }
  return typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message);
}

/**
 * Whether an error (or one of its causes) says the database cannot be reached right now,
 * rather than that a statement was wrong: an outage to wait out, not a bug.
 */
export function databaseUnavailable(error: unknown): boolean {
  return anyCause(error, unavailableHere);
}

/** Whether `here` holds for the error, one of its causes, or (an AggregateError's) one of its errors. */
function anyCause(error: unknown, here: (e: object) => boolean): boolean {
  const seen = new Set<unknown>();
  for (let e = error; e && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (here(e)) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => anyCause(inner, here))) return true;
  }
  return false;
}

// A database that is reachable but did not let a statement finish in time: a statement or
// lock timeout (the server's bound, server/db/index.ts createDb), an interactive transaction that ran past
// its policy (TRANSACTION_POLICY, server/db/transaction.ts), a deadlock or a serialization failure. The transaction
// was rolled back: nothing was changed, and the same call may well succeed when retried.

/** SQLSTATEs: statement cancelled (statement_timeout), lock not available, deadlock, serialization failure. */
const BUSY_SQLSTATE = new Set(['57014', '55P03', '40P01', '40001']);
/** Prisma's codes: a transaction that expired or was closed under it (P2028), a write conflict or deadlock (P2034). */
const BUSY_PRISMA = new Set(['P2028', 'P2034']);
/** @prisma/adapter-pg's kind for 40001 and 40P01. */
const BUSY_ADAPTER_KIND = new Set(['TransactionWriteConflict']);
/** The same, where only a message says it (Prisma's transaction API errors). */
const BUSY_MESSAGE = /Transaction already closed|expired transaction|canceling statement due to (statement|lock) timeout|deadlock detected/i;

function busyHere(error: object): boolean {
  const { code, message, meta } = error as { code?: unknown; message?: unknown; meta?: unknown };
  // P2028 is also Prisma's "Unable to start a transaction in the given time": no connection, an outage.
  if (typeof code === 'string' && (BUSY_SQLSTATE.has(code) || BUSY_PRISMA.has(code))) return !unavailableHere(error);
  const adapter = (meta as { driverAdapterError?: { cause?: { kind?: unknown; code?: unknown } } } | undefined)?.driverAdapterError?.cause;
  if (adapter) {
    if (typeof adapter.kind === 'string' && BUSY_ADAPTER_KIND.has(adapter.kind)) return true;
    return adapter.kind === 'postgres' && typeof adapter.code === 'string' && BUSY_SQLSTATE.has(adapter.code);
  }
  return typeof message === 'string' && BUSY_MESSAGE.test(message);
}

/**
 * Whether an error (or one of its causes) says the database was busy: reachable, but the
 * work did not finish within its bounds and was rolled back. Not a bug, not an outage: the
 * caller may retry.
 */
export function databaseBusy(error: unknown): boolean {
  return anyCause(error, busyHere);
}
