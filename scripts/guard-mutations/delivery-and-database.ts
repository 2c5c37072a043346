import type { Mutation } from './mutation';

// The guards of email delivery (leases, send timeouts), of repairs' transactions and of
// the database client (pool hygiene, read and statement timeouts).

export const DELIVERY_AND_DATABASE_MUTATIONS: Mutation[] = [
  {
    guard: 'a sender renews the leases of the emails it is sending (a slow provider is not a dead sender)',
    edits: [{ file: 'server/engine/sender.ts', find: `const stopRenewing = keepLeases(ctx, messages, unanswered);`, replace: `const stopRenewing = () => {};` }],
    test: 'test/engine/sender-lease.test.ts',
    scenario: 'round 1',
    rounds: 1,
  },
  {
    guard: 'a message lease renewal never revives a lease that lapsed (the email is an operator\'s to decide)',
    edits: [{ file: 'server/engine/claims/outbox.ts', find: `AND m.version = o.version
       AND m."leaseExpiresAt" >= now()`, replace: `AND m.version = o.version` }],
    test: 'test/engine/sender-lease.test.ts',
    scenario: 'never revives a lease that lapsed',
    rounds: 1,
  },
  {
    guard: 'a sender stops renewing once the send timeout passed with no answer from the provider',
    edits: [
      {
        file: 'server/engine/sender.ts',
        find: `if (!timedOut && Date.now() - started > ctx.config.sendTimeoutSeconds * 1000) {`,
        replace: `if (!timedOut && Date.now() - started > ctx.config.sendTimeoutSeconds * 1000 * 1000) {`,
      },
    ],
    test: 'test/engine/sender-lease.test.ts',
    scenario: 'is renewed only until the send timeout',
    rounds: 1,
  },
  {
    guard: "every SMTP phase is bounded well under the lease (nodemailer's own bounds are minutes)",
    edits: [
      { file: 'server/engine/transport.ts', find: `    greetingTimeout: timeoutMs,
`, replace: `` },
      { file: 'server/engine/transport.ts', find: `    socketTimeout: timeoutMs,
`, replace: `` },
    ],
    test: 'test/engine/sender-lease.test.ts',
    scenario: 'fails the send within the bound',
    rounds: 1,
  },
  {
    guard: "a repair's transaction runs under the engine's policy (TRANSACTION_POLICY.ENGINE), not Prisma's 5 s default",
    edits: [{ file: 'server/repair/transaction.ts', find: `return await transaction(db, 'ENGINE', fn);`, replace: `return await transaction(db, 'SHORT', fn);` }],
    test: 'test/repair/busy.test.ts',
    scenario: "waits past Prisma's 5 s default",
    rounds: 1,
  },
  {
    guard: 'a repair the database is too busy to finish answers a typed BUSY, audited FAILED (never a 500)',
    edits: [{ file: 'server/repair/transaction.ts', find: `    if (!databaseBusy(error)) throw error;`, replace: `    if (error || !databaseBusy(error)) throw error;` }],
    test: 'test/repair/busy.test.ts',
    scenario: 'that the database does not let finish',
    rounds: 1,
  },
  {
    guard: 'the pool takes a client back only when it is idle outside a transaction (a released open transaction is discarded)',
    edits: [
      {
        file: 'server/db/pool.ts',
        find: `const broken = err || reusable(client) ? err : new Error(`,
        replace: `const broken = err || true ? err : new Error(`,
      },
    ],
    test: 'test/reliability/pooled-connection-state.test.ts',
    scenario: 'a client released inside a transaction is not handed to the next borrower',
    rounds: 1,
  },
  {
    guard: 'a read timeout drops the connection (nothing more is sent on a session in an unknown state)',
    edits: [
      {
        file: 'server/db/pool.ts',
        find: `if (error instanceof Error && error.message === 'Query read timeout') (this as unknown as PgClientState).connection.stream.destroy();`,
        replace: `void error;`,
      },
    ],
    test: 'test/reliability/pooled-connection-state.test.ts',
    scenario: 'the statement after a read timeout is not sent on the timed-out session',
    rounds: 1,
  },
  {
    guard: "the server's statement and idle-in-transaction timeouts stand below the client's query timeout",
    edits: [
      {
        file: 'server/db/index.ts',
        find: `    ...(serverBoundMs && !pooled ? { statement_timeout: serverBoundMs, idle_in_transaction_session_timeout: serverBoundMs } : {}),\n`,
        replace: ``,
      },
    ],
    test: 'test/reliability/pooled-connection-state.test.ts',
    scenario: 'a statement waiting on a lock past the bound is cancelled by the server',
    rounds: 1,
  },
];
