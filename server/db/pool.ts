import pg from 'pg';
import { Pipelined, type ServerBounds } from './wire';

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
  /**
   * Behind a transaction-mode pooler (boundedClient): the server-side bounds, sent with
   * each statement that starts a transaction instead of once as session settings.
   */
  protected serverBoundsMs: number | undefined;

  override query(...args: unknown[]): never {
    const discardOnTimeout = (error: unknown) => {
      if (error instanceof Error && error.message === 'Query read timeout') (this as unknown as PgClientState).connection.stream.destroy();
    };
    type Callback = (error: Error | null, result?: unknown) => void;
    const watch = (callback: Callback): Callback => (error, result) => {
      if (error) discardOnTimeout(error);
      callback(error, result);
    };
    const query = super.query as unknown as (...a: unknown[]) => unknown;
    if (this.serverBoundsMs !== undefined) return this.bounded(args, (q) => query.call(this, q), watch) as never;
    const [config] = args as [{ submit?: unknown; callback?: Callback } | undefined];
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

  /**
   * Every statement as a Pipelined query that carries the server-side bounds when it is
   * sent outside a transaction (wire.ts, ServerBounds): node-postgres's own arguments
   * (text or config, values, callback) turned into one, answered by promise or callback
   * as node-postgres would.
   */
  private bounded(
    args: unknown[],
    send: (query: Pipelined) => unknown,
    watch: (callback: (error: Error | null, result?: unknown) => void) => (error: Error | null, result?: unknown) => void,
  ): Promise<unknown> | Pipelined | undefined {
    const bounds: ServerBounds = { ms: this.serverBoundsMs!, idle: () => (this as unknown as PgClientState)._txStatus === 'I' };
    const [config, values, callback] = args as [unknown, unknown, unknown];
    type Own = { submit?: unknown; pipelined?: boolean; bounds?: ServerBounds; callback?: (error: Error | null, result?: unknown) => void };
    const own = config as Own;
    if (own && typeof own.submit === 'function') {
      // A query object of one's own; a Pipelined one (by its mark, not instanceof: another
      // copy of wire.ts may have made it, server/process-registry.ts) carries the bounds.
      if (own.pipelined) own.bounds ??= bounds;
      if (own.callback) own.callback = watch(own.callback);
      send(config as Pipelined);
      return config as Pipelined;
    }
    const normalized = (typeof config === 'string' ? { text: config } : { ...(config as object) }) as pg.QueryConfig & { callback?: (error: Error | null, result?: unknown) => void };
    if (typeof values === 'function') normalized.callback = values as never;
    else if (values !== undefined) normalized.values = values as unknown[];
    if (typeof callback === 'function') normalized.callback = callback as never;
    const query = new Pipelined(normalized);
    query.bounds = bounds;
    const given = (query as Own).callback;
    if (given) {
      (query as Own).callback = watch(given);
      send(query);
      return undefined;
    }
    return new Promise((resolve, reject) => {
      (query as Own).callback = watch((error, result) => (error ? reject(error) : resolve(result)));
      send(query);
    });
  }
}

/**
 * The pool's client behind a transaction-mode pooler (DATABASE_POOL_MODE=transaction):
 * the server-side bounds (serverTimeoutMs) go with each transaction, not as startup
 * parameters, which PgBouncer 1.18 refuses and which would hold for one server connection only.
 */
export function boundedClient(serverBoundsMs: number): typeof ReadTimeoutClient {
  return class BoundedClient extends ReadTimeoutClient {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      this.serverBoundsMs = serverBoundsMs;
    }
  };
}
