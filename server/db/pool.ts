import pg from 'pg';

// The node-postgres pool under every client: a connection goes back only in a state the
// next borrower can trust (CheckedPool), and one whose statement went unanswered is
// dropped at once (ReadTimeoutClient).

/**
 * The server-side bound for a client-side one: 90% of it, so PostgreSQL cancels a statement
 * (and ends a session left idle inside a transaction) while the client still waits for the
 * answer, and the client hears why instead of timing out on a session it cannot trust.
 */
export function serverTimeoutMs(queryTimeoutMs: number): number {
  return Math.max(1, Math.floor(queryTimeoutMs * 0.9));
}

/** What this module reads of node-postgres's Client (not in its typings). */
interface PgClientState {
  /** The transaction status of the last ReadyForQuery: 'I' idle, 'T' in a transaction, 'E' in a failed one. */
  _txStatus: 'I' | 'T' | 'E' | null;
  readyForQuery: boolean;
  _queryQueue: unknown[];
  _getActiveQuery(): unknown;
  _queryable: boolean;
  _ending: boolean;
  connection: { stream: { destroy(): void } };
}

/**
 * Whether a client may serve another borrower: its last ReadyForQuery said idle, outside
 * any transaction, and nothing is queued or running on it. Anything else (a transaction
 * left open because its ROLLBACK timed out before it was sent, a statement still running
 * after its caller gave up) would make the next borrower's statements part of that
 * transaction, committed or lost with it.
 */
function reusable(client: pg.PoolClient): boolean {
  const c = client as unknown as PgClientState;
  return c._txStatus === 'I' && c.readyForQuery && !c._getActiveQuery() && c._queryQueue.length === 0 && c._queryable && !c._ending;
}

/**
 * A pool that takes a client back only when it is reusable(); any other is released as
 * broken, so pg-pool ends it (destroying the socket if a statement is still running) and
 * the next borrower gets a fresh session. A released client is not always clean: Prisma's
 * adapter releases without an error after a ROLLBACK that timed out unsent.
 */
export class CheckedPool extends pg.Pool {
  constructor(config: pg.PoolConfig & { Client?: typeof pg.Client }) {
    super(config);
  }

  /** pg-pool's own step of taking a client back (not in its typings): `err` set, the client is ended. */
  _release(client: pg.PoolClient, idleListener: unknown, err?: unknown): void {
    const broken = err || reusable(client) ? err : new Error('connection released inside a transaction or with a statement running: discarded');
    (pg.Pool.prototype as unknown as { _release: CheckedPool['_release'] })._release.call(this, client, idleListener, broken);
  }
}

/**
 * A client that drops its connection as soon as a statement's answer times out (the
 * pool's query_timeout): after a timeout nobody knows what the session holds (the
 * statement may still run and commit with whatever is sent next), so nothing more is sent
 * on it. Whatever is queued behind fails at once as "Connection terminated", and the
 * server rolls the session's transaction back when it finds the socket closed.
 */
export class ReadTimeoutClient extends pg.Client {
  override query(...args: unknown[]): never {
    const discardOnTimeout = (error: unknown) => {
      if (error instanceof Error && error.message === 'Query read timeout') (this as unknown as PgClientState).connection.stream.destroy();
    };
    type Callback = (error: Error | null, result?: unknown) => void;
    const watch = (callback: Callback): Callback => (error, result) => {
      if (error) discardOnTimeout(error);
      callback(error, result);
    };
    const [config] = args as [{ submit?: unknown; callback?: Callback } | undefined];
    const query = super.query as unknown as (...a: unknown[]) => unknown;
    if (config && typeof config.submit === 'function') {
      // A query object of one's own (BeginThenQuery, QueryThenCommit): answered through its callback.
      if (config.callback) config.callback = watch(config.callback);
      return query.apply(this, args) as never;
    }
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      args[last] = watch(args[last] as Callback);
      return query.apply(this, args) as never;
    }
    const result = query.apply(this, args) as Promise<unknown> | undefined;
    // A side branch: the caller's own promise still rejects with the timeout.
    result?.then(undefined, discardOnTimeout);
    return result as never;
  }
}

