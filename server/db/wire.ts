import pg from 'pg';

// Wire-protocol pipelining over node-postgres's extended protocol: statements sent in the
// same write as a caller's statement, before one Sync, so they cost no round trip of their
// own. BEGIN with a raw transaction's first statement (BeginThenQuery), COMMIT with its
// last (QueryThenCommit), and, behind a transaction-mode pooler (DATABASE_POOL_MODE), the
// server-side bounds with whatever starts a transaction (ServerBounds, see pool.ts).
//
// A pooler in transaction mode (PgBouncer 1.18) hands the client a server connection when
// it sends something and takes it back at a ReadyForQuery saying idle: everything up to one
// Sync runs on one server connection, and an open transaction keeps it. So each pipeline
// here is as safe through it as directly (test/db/pgbouncer.test.ts shows it).

/**
 * Where a raw engine transaction stands, for its statements: `begun` once BEGIN has gone
 * out (with the first statement); `closing` 'armed' when the next statement is the last
 * and carries the COMMIT, 'sent' once it has gone (nothing may follow it).
 */
export interface TransactionState {
  begun: boolean;
  closing?: 'armed' | 'sent';
}

/**
 * The server-side bounds a connection cannot carry as session settings (behind a
 * transaction-mode pooler, every transaction may run on another server connection): sent
 * again with each statement that starts a transaction, when the client is idle. After a
 * BEGIN: SET LOCAL for the transaction (before any query, so SET TRANSACTION still may
 * follow); before any other statement: set_config(..., true) for its own implicit
 * transaction, which ends at the Sync.
 */
export interface ServerBounds {
  ms: number;
  /** Whether the client is outside any transaction now (its last ReadyForQuery said idle). */
  idle(): boolean;
}

function boundStatements(bounds: ServerBounds, afterBegin: boolean): string[] {
  const ms = Math.floor(bounds.ms);
  if (afterBegin) return [`SET LOCAL statement_timeout = ${ms}`, `SET LOCAL idle_in_transaction_session_timeout = ${ms}`];
  return [`-- serverBounds\nSELECT set_config('statement_timeout', '${ms}', true)`];
}

/** A query object of one's own, run on `on`: it is answered through its callback, not a promise. */
export function submitted(
  on: pg.Pool | pg.PoolClient,
  query: PgQueryInternals & { callback?: (error: Error | null, result: pg.QueryResult) => void },
): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    query.callback = (error, result) => (error ? reject(error) : resolve(result));
    void on.query(query as unknown as pg.QueryConfig);
  });
}

const isBegin = (text: unknown) => typeof text === 'string' && /^\s*BEGIN\s*;?\s*$/i.test(text);

/**
 * A statement (the caller's: its rows and its completion are the answer) with others
 * pipelined before and after it, sent in one write before a single Sync, so the server
 * runs them in order as one pipeline; an error in any skips the rest up to the Sync and
 * fails this query, and the caller rolls back as for any failed statement. The others are
 * parsed unnamed, bound, executed without a Describe: their rows (a set_config) and
 * completions are not the answer. With `bounds` set and the client idle when it is sent,
 * the server-side bounds go with it (ServerBounds); with nothing to add, it is sent as
 * node-postgres would send it.
 */
export class Pipelined extends (pg.Query as unknown as new (config: pg.QueryConfig) => PgQueryInternals) {
  /** Its mark for the pool's client (pool.ts), which may come from another copy of this module. */
  readonly pipelined = true;
  bounds?: ServerBounds;
  private before: string[];
  private after: string[];
  /** CommandCompletes seen: which statement of the pipeline is answering. */
  private completions = 0;
  /** Counting ParseCompletes, when this statement is parsed with others before it (see handleError). */
  private parses: { count: number; stop(): void } | null = null;

  constructor(config: pg.QueryConfig, others: { before?: string[]; after?: string[] } = {}) {
    super(config);
    this.before = others.before ?? [];
    this.after = others.after ?? [];
  }

  override submit(connection: PgConnectionInternals): Error | null {
    if (this.bounds?.idle()) {
      // BEGIN first (a raw transaction's), or BEGIN itself (Prisma's): the bounds for the transaction.
      if (isBegin(this.before[0])) this.before.splice(1, 0, ...boundStatements(this.bounds, true));
      else if (isBegin(this.text)) this.after.unshift(...boundStatements(this.bounds, true));
      else this.before.unshift(...boundStatements(this.bounds, false));
    }
    if (this.before.length === 0 && this.after.length === 0) return super.submit(connection);
    this.queryMode = 'extended';
    if (this.before.length > 0 && this.name && !this.hasBeenParsed(connection)) {
      const parses = { count: 0, stop: () => connection.removeListener('parseComplete', onParse) };
      const onParse = () => void parses.count++;
      connection.on('parseComplete', onParse);
      this.parses = parses;
    }
    connection.stream.cork?.();
    try {
      for (const text of this.before) send(connection, text);
      return super.submit(connection);
    } finally {
      connection.stream.uncork?.();
    }
  }

  /** node-postgres's last step of `prepare` (and of a suspended portal, which this never is): execute, then Sync. */
  override _getRows(connection: PgConnectionInternals, rows?: number): void {
    if (this.after.length === 0) return super._getRows(connection, rows);
    if (rows) throw new Error('a pipelined statement reads its rows at once');
    connection.execute({ portal: '', rows: 0 });
    for (const text of this.after) send(connection, text);
    connection.sync();
  }

  private answering(): boolean {
    return this.completions === this.before.length;
  }

  override handleDataRow(msg: unknown): void {
    if (this.answering()) super.handleDataRow(msg);
  }

  override handleCommandComplete(msg: unknown, connection: PgConnectionInternals): void {
    const mine = this.answering();
    this.completions++;
    if (mine) super.handleCommandComplete(msg, connection);
  }

  override handleEmptyQuery(connection: PgConnectionInternals): void {
    const mine = this.answering();
    this.completions++;
    if (mine) super.handleEmptyQuery(connection);
  }

  /**
   * node-postgres records the active query's statement as parsed on the first
   * ParseComplete, which here is the first pipelined statement's. When this statement's own
   * Parse then fails (a syntax error, a table or column that is not there), that record
   * would make every later use of the statement on this connection skip its Parse and fail
   * with "prepared statement does not exist": it is taken back unless this statement's own
   * ParseComplete came.
   */
  override handleError(error: unknown, connection: PgConnectionInternals): void {
    const parses = this.parses;
    this.parses = null;
    if (parses) {
      parses.stop();
      if (parses.count <= this.before.length && this.name) delete connection.parsedStatements[this.name];
    }
    super.handleError(error, connection);
  }

  override handleReadyForQuery(connection: PgConnectionInternals): void {
    this.parses?.stop();
    this.parses = null;
    super.handleReadyForQuery(connection);
  }
}

/** One pipelined statement of no parameters: parse (unnamed), bind, execute; no Describe, no Sync. */
function send(connection: PgConnectionInternals, text: string): void {
  connection.parse({ text, name: '', types: [] });
  connection.bind({ portal: '', statement: '', values: [] });
  connection.execute({ portal: '', rows: 0 });
}

/**
 * A transaction's first statement with its BEGIN in front, sent together: one round trip
 * for both. BEGIN's own completion is not a result: the answer is the statement's.
 */
export class BeginThenQuery extends Pipelined {
  constructor(config: pg.QueryConfig) {
    super(config, { before: ['BEGIN'] });
  }
}

/**
 * A transaction's closing statement with its COMMIT behind it, sent together: one round
 * trip for both. If the statement fails, the server skips COMMIT up to the Sync and the
 * transaction is left aborted: this query fails with the statement's error and the caller
 * rolls back as for any failed statement. If COMMIT itself fails (a deferred check, a
 * serialization failure), the transaction is over, rolled back, and this query fails with
 * COMMIT's error: the caller's ROLLBACK then finds no transaction, which is harmless.
 */
export class QueryThenCommit extends Pipelined {
  constructor(config: pg.QueryConfig) {
    super(config, { after: ['COMMIT'] });
  }
}

/** What Pipelined uses of node-postgres's Query and Connection (not in its typings). */
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
  text?: string;
  queryMode?: string;
  hasBeenParsed(connection: PgConnectionInternals): boolean;
  submit(connection: PgConnectionInternals): Error | null;
  handleDataRow(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: PgConnectionInternals): void;
  handleEmptyQuery(connection: PgConnectionInternals): void;
  handleError(error: unknown, connection: PgConnectionInternals): void;
  handleReadyForQuery(connection: PgConnectionInternals): void;
  _getRows(connection: PgConnectionInternals, rows?: number): void;
}
