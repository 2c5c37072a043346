import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { Prisma, PrismaClient } from './generated/prisma/client';
import { databaseUrl, env } from './env';

export { Prisma } from './generated/prisma/client';
export type * from './generated/prisma/client';

export type Db = PrismaClient;
/** A client usable inside `db.$transaction(async (tx) => ...)` as well as outside. */
export type DbTx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

/**
 * The pools of the clients createDb made, and the names of prepared statements, kept on
 * globalThis: scripts/web.ts loads this module itself (the API, server/trpc/node-endpoints.ts)
 * and Next.js's build has its own copy, and both share one client (db() below). With a map
 * each, whichever copy had not made the client would run its raw SQL through Prisma, and
 * two maps could give one name to two statements on one connection.
 */
const prepared = ((globalThis as unknown as { waypostPrepared?: { pools: WeakMap<Db, pg.Pool>; names: Map<string, string> } }).waypostPrepared ??= {
  pools: new WeakMap(),
  names: new Map(),
});
const pools = prepared.pools;

/**
 * A Prisma client over a node-postgres pool this module owns. Each process sizes its
 * pool to its work. An idle connection dropped by the server (PostgreSQL restarting, an
 * administrator's pg_terminate_backend) must not crash the process: the pool reports it
 * and opens a new connection on next use.
 *
 * With a query timeout, a connection is never trusted once a statement on it went
 * unanswered (see CheckedPool and ReadTimeoutClient below), and the server is told to give
 * up first: `statement_timeout` and `idle_in_transaction_session_timeout` are set below the
 * client's bound, so a statement stuck on a lock is cancelled by PostgreSQL (its
 * transaction aborted, its locks released) before the client stops waiting for it.
 */
export function createDb(
  url: string,
  options: {
    poolSize?: number;
    applicationName?: string;
    onError?: (error: Error) => void;
    /** How long a query may wait for a connection (a free one, or a new one to connect); unset: forever. */
    connectTimeoutMs?: number;
    /** How long a statement may wait for its answer, client side (a partition answers nothing); unset: forever. */
    queryTimeoutMs?: number;
  } = {},
): Db {
  const serverBoundMs = options.queryTimeoutMs ? serverTimeoutMs(options.queryTimeoutMs) : undefined;
  const pool = new CheckedPool({
    connectionString: url,
    max: options.poolSize ?? 10,
    application_name: options.applicationName ?? 'waypost',
    connectionTimeoutMillis: options.connectTimeoutMs,
    query_timeout: options.queryTimeoutMs,
    ...(serverBoundMs ? { statement_timeout: serverBoundMs, idle_in_transaction_session_timeout: serverBoundMs } : {}),
    keepAlive: true,
    Client: ReadTimeoutClient,
  });
  const onError = options.onError ?? (() => {});
  // The pool listens for errors only on its idle clients. A client checked out between two
  // queries (a transaction waiting on JavaScript, say) whose connection is terminated emits
  // 'error' with nobody listening, which would crash the process: every client gets a
  // listener for its whole life, and the next query on it fails as a query.
  pool.on('connect', (client) => client.on('error', onError));
  pool.on('error', onError);
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  pools.set(client, pool);
  return client;
}

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
class CheckedPool extends pg.Pool {
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
class ReadTimeoutClient extends pg.Client {
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

/** The node-postgres pool under a client made by createDb; undefined for any other client. */
export function poolOf(db: Db): pg.Pool | undefined {
  return pools.get(db);
}

/** Disconnect a client made by createDb and close its pool. */
export async function closeDb(db: Db): Promise<void> {
  await db.$disconnect();
  await pools.get(db)?.end();
}

const globalForDb = globalThis as unknown as { waypostDb?: Db };

/**
 * The bounds on waiting for the database (DATABASE_CONNECT_TIMEOUT_SECONDS,
 * DATABASE_QUERY_TIMEOUT_SECONDS) for the web server's and workers' clients, so that an
 * unreachable database is an error within seconds, never a hang.
 */
export function databaseWaitBounds(): { connectTimeoutMs: number; queryTimeoutMs?: number } {
  const config = env();
  return {
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_SECONDS * 1000,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_SECONDS > 0 ? config.DATABASE_QUERY_TIMEOUT_SECONDS * 1000 : undefined,
  };
}

/** The process-wide client for DATABASE_URL (one per process, survives Next.js hot reload). */
export function db(): Db {
  globalForDb.waypostDb ??= createDb(databaseUrl(), { applicationName: 'waypost-web', ...databaseWaitBounds() });
  return globalForDb.waypostDb;
}

// ---------------------------------------------------------------------------
// The engine's hot path: raw SQL as named prepared statements over the client's own pool.
//
// Prisma's $queryRaw costs far more per call than the statement does (its query engine
// and driver adapter, and a fresh plan each time): a worker's claims spend most of their
// time there. A client made by createDb can be viewed through preparedRaw(), whose
// $queryRaw/$executeRaw send the very same Prisma.sql text and values over node-postgres
// as a named prepared statement (parsed and planned once per connection); every other
// member (models, $transaction) is the Prisma client's own. Results are read as Prisma
// reads them (int8 as bigint, json parsed, timestamptz as Date), so a claim's code does
// not know which path ran it.

const POOL = Symbol('waypost.preparedPool');
/** Distinct statement texts get a name each; past this many (SQL built from lists), unnamed. */
const MAX_NAMED_STATEMENTS = 1000;
const statementNames = prepared.names;

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (!name && statementNames.size < MAX_NAMED_STATEMENTS) {
    name = `wp_${statementNames.size}`;
    statementNames.set(text, name);
  }
  return name;
}

const parseInt8 = (value: string) => BigInt(value);
/** Prisma's reading of a raw result: int8 as bigint (node-postgres reads it as a string). */
const prismaTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

type RawArgs = [TemplateStringsArray | Prisma.Sql, ...unknown[]];

function toSql([strings, ...values]: RawArgs): Prisma.Sql {
  return strings instanceof Prisma.Sql ? strings : Prisma.sql(strings, ...values);
}

/**
 * Where a raw engine transaction stands, for its statements: `begun` once BEGIN has gone
 * out (with the first statement); `closing` 'armed' when the next statement is the last
 * and carries the COMMIT, 'sent' once it has gone (nothing may follow it).
 */
interface TransactionState {
  begun: boolean;
  closing?: 'armed' | 'sent';
}

async function runPrepared(on: pg.Pool | pg.PoolClient, args: RawArgs, state?: TransactionState): Promise<pg.QueryResult> {
  const sql = toSql(args);
  const config = { name: statementName(sql.text), text: sql.text, values: sql.values as unknown[], types: prismaTypes };
  if (state?.closing === 'sent') {
    throw new Error('this raw transaction has committed with its closing statement: a statement after it would run outside it');
  }
  if (state?.closing === 'armed') {
    state.closing = 'sent';
    // The transaction's only statement needs no transaction: on its own it is atomic.
    if (!state.begun) return on.query(config);
    return submitted(on, new QueryThenCommit(config));
  }
  if (!state || state.begun) return on.query(config);
  state.begun = true;
  return submitted(on, new BeginThenQuery(config));
}

/** A query object of one's own, run on `on`: it is answered through its callback, not a promise. */
function submitted(
  on: pg.Pool | pg.PoolClient,
  query: PgQueryInternals & { callback?: (error: Error | null, result: pg.QueryResult) => void },
): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    query.callback = (error, result) => (error ? reject(error) : resolve(result));
    void on.query(query as unknown as pg.QueryConfig);
  });
}

/**
 * A transaction's first statement with its BEGIN in front, sent together: one round trip
 * for both. Over the extended protocol, BEGIN (parse, bind, execute) and the statement
 * (parse once per connection, bind, describe, execute) go in one write before a single
 * Sync, so the server runs them in order, as one pipeline; an error in either skips the
 * rest up to the Sync and fails this query, and the caller rolls back as for any failed
 * statement. BEGIN's own completion is not a result: the answer is the statement's.
 */
class BeginThenQuery extends (pg.Query as unknown as new (config: pg.QueryConfig) => PgQueryInternals) {
  private begun = false;
  /** Counting ParseCompletes, when this statement is parsed with the BEGIN (see handleError). */
  private parses: { count: number; stop(): void } | null = null;

  constructor(config: pg.QueryConfig) {
    super({ ...config, queryMode: 'extended' } as pg.QueryConfig);
  }

  override submit(connection: PgConnectionInternals): Error | null {
    if (this.name && !this.hasBeenParsed(connection)) {
      const parses = { count: 0, stop: () => connection.removeListener('parseComplete', onParse) };
      const onParse = () => void parses.count++;
      connection.on('parseComplete', onParse);
      this.parses = parses;
    }
    connection.stream.cork?.();
    try {
      connection.parse({ text: 'BEGIN', name: '', types: [] });
      connection.bind({ portal: '', statement: '', values: [] });
      connection.execute({ portal: '', rows: 0 });
      return super.submit(connection);
    } finally {
      connection.stream.uncork?.();
    }
  }

  override handleCommandComplete(msg: unknown, connection: PgConnectionInternals): void {
    if (!this.begun) {
      this.begun = true;
      return;
    }
    super.handleCommandComplete(msg, connection);
  }

  /**
   * node-postgres records the active query's statement as parsed on the first
   * ParseComplete, which here is BEGIN's. When this statement's own Parse then fails (a
   * syntax error, a table or column that is not there), that record would make every later
   * use of the statement on this connection skip its Parse and fail with "prepared
   * statement does not exist": it is taken back unless a second ParseComplete (this
   * statement's) came.
   */
  override handleError(error: unknown, connection: PgConnectionInternals): void {
    const parses = this.parses;
    this.parses = null;
    if (parses) {
      parses.stop();
      if (parses.count < 2 && this.name) delete connection.parsedStatements[this.name];
    }
    super.handleError(error, connection);
  }

  override handleReadyForQuery(connection: PgConnectionInternals): void {
    this.parses?.stop();
    this.parses = null;
    super.handleReadyForQuery(connection);
  }
}

/**
 * A transaction's closing statement with its COMMIT behind it, sent together: one round
 * trip for both. The statement (parse once per connection, bind, describe, execute) and
 * COMMIT (parse, bind, execute) go in one write before a single Sync, so the server runs
 * them in order. If the statement fails, the server skips COMMIT up to the Sync and the
 * transaction is left aborted: this query fails with the statement's error and the caller
 * rolls back as for any failed statement. If COMMIT itself fails (a deferred check, a
 * serialization failure), the transaction is over, rolled back, and this query fails with
 * COMMIT's error: the caller's ROLLBACK then finds no transaction, which is harmless.
 * COMMIT's own completion is not a result: the answer is the statement's.
 */
class QueryThenCommit extends (pg.Query as unknown as new (config: pg.QueryConfig) => PgQueryInternals) {
  private completed = false;

  constructor(config: pg.QueryConfig) {
    super({ ...config, queryMode: 'extended' } as pg.QueryConfig);
  }

  /** node-postgres's last step of `prepare` (and of a suspended portal, which this never is): execute, then Sync. */
  override _getRows(connection: PgConnectionInternals, rows?: number): void {
    if (rows) throw new Error('a closing statement reads its rows at once');
    connection.execute({ portal: '', rows: 0 });
    connection.parse({ text: 'COMMIT', name: '', types: [] });
    connection.bind({ portal: '', statement: '', values: [] });
    connection.execute({ portal: '', rows: 0 });
    connection.sync();
  }

  override handleCommandComplete(msg: unknown, connection: PgConnectionInternals): void {
    if (this.completed) return;
    this.completed = true;
    super.handleCommandComplete(msg, connection);
  }
}

/** What BeginThenQuery uses of node-postgres's Query and Connection (not in its typings). */
interface PgConnectionInternals {
  stream: { cork?(): void; uncork?(): void };
  /** Statement name -> text of the named statements this connection has parsed. */
  parsedStatements: Record<string, string>;
  on(event: 'parseComplete', listener: () => void): void;
  removeListener(event: 'parseComplete', listener: () => void): void;
  parse(m: { text: string; name: string; types: unknown[] }): void;
  bind(m: { portal: string; statement: string; values: unknown[] }): void;
  execute(m: { portal: string; rows: number }): void;
  sync(): void;
}
interface PgQueryInternals {
  name?: string;
  hasBeenParsed(connection: PgConnectionInternals): boolean;
  submit(connection: PgConnectionInternals): Error | null;
  handleCommandComplete(msg: unknown, connection: PgConnectionInternals): void;
  handleError(error: unknown, connection: PgConnectionInternals): void;
  handleReadyForQuery(connection: PgConnectionInternals): void;
  _getRows(connection: PgConnectionInternals, rows?: number): void;
}

function rawOver(on: pg.Pool | pg.PoolClient, state?: TransactionState) {
  return {
    $queryRaw: async (...args: RawArgs) => (await runPrepared(on, args, state)).rows,
    $executeRaw: async (...args: RawArgs) => (await runPrepared(on, args, state)).rowCount ?? 0,
  };
}

/**
 * The client's raw SQL as named prepared statements over its own pool (see above);
 * anything else (a transaction's client, a client not made by createDb) is returned as is.
 */
export function preparedRaw<T extends DbTx>(db: T): T {
  const pool = pools.get(db as unknown as Db);
  if (!pool) return db;
  const raw = rawOver(pool);
  return new Proxy(db, {
    get(target, prop) {
      if (prop === POOL) return pool;
      if (prop === '$queryRaw' || prop === '$executeRaw') return raw[prop];
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * A transaction of raw statements only, on one pooled connection, for a preparedRaw()
 * client: BEGIN, `fn`, COMMIT (ROLLBACK if it throws). BEGIN travels with the first
 * statement (BeginThenQuery). With `closing`, its one statement, run after `fn` with fn's
 * value, carries the COMMIT (QueryThenCommit): a transaction that ends with a write (an
 * audit entry) saves the round trip of its COMMIT. `closing` must run exactly one
 * statement and nothing that can fail after it; a second statement is refused. Null for
 * any other client, whose caller uses Prisma's $transaction. Inside, only $queryRaw and
 * $executeRaw exist: a model call there would run outside the transaction, so it is refused.
 */
export async function preparedTransaction<T>(
  db: DbTx,
  fn: (tx: DbTx) => Promise<T>,
  closing?: (tx: DbTx, value: T) => Promise<unknown>,
): Promise<{ value: T } | null> {
  const pool = (db as unknown as { [POOL]?: pg.Pool })[POOL];
  if (!pool) return null;
  const client = await pool.connect();
  // BEGIN goes out with the first statement (BeginThenQuery); a transaction that ran none has nothing to end.
  const state: TransactionState = { begun: false };
  const raw = rawOver(client, state);
  const tx = new Proxy({} as DbTx, {
    get(_, prop) {
      if (prop === '$queryRaw' || prop === '$executeRaw') return raw[prop];
      if (typeof prop === 'symbol' || prop === 'then') return undefined;
      throw new Error(`${prop} is not available inside a raw engine transaction: use $queryRaw`);
    },
  });
  let broken = false;
  try {
    const value = await fn(tx);
    if (closing) {
      state.closing = 'armed';
      await closing(tx, value);
    }
    // COMMIT on its own unless the closing statement carried it.
    if (state.begun && state.closing !== 'sent') await client.query('COMMIT');
    return { value };
  } catch (error) {
    // After a closing statement that failed, the transaction is aborted (its statement
    // failed) or over (its COMMIT failed): ROLLBACK ends the first, and is a no-op for the second.
    if (state.begun) await client.query('ROLLBACK').catch(() => (broken = true));
    throw error;
  } finally {
    client.release(broken);
  }
}
