import pg from 'pg';

// Wire-protocol pipelining for raw engine transactions: BEGIN sent with a transaction's
// first statement (BeginThenQuery) and COMMIT with its last (QueryThenCommit), one round
// trip each instead of two, over node-postgres's extended protocol.

/**
 * Where a raw engine transaction stands, for its statements: `begun` once BEGIN has gone
 * out (with the first statement); `closing` 'armed' when the next statement is the last
 * and carries the COMMIT, 'sent' once it has gone (nothing may follow it).
 */
export interface TransactionState {
  begun: boolean;
  closing?: 'armed' | 'sent';
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

/**
 * A transaction's first statement with its BEGIN in front, sent together: one round trip
 * for both. Over the extended protocol, BEGIN (parse, bind, execute) and the statement
 * (parse once per connection, bind, describe, execute) go in one write before a single
 * Sync, so the server runs them in order, as one pipeline; an error in either skips the
 * rest up to the Sync and fails this query, and the caller rolls back as for any failed
 * statement. BEGIN's own completion is not a result: the answer is the statement's.
 */
export class BeginThenQuery extends (pg.Query as unknown as new (config: pg.QueryConfig) => PgQueryInternals) {
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
export class QueryThenCommit extends (pg.Query as unknown as new (config: pg.QueryConfig) => PgQueryInternals) {
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

