import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// Shows that the race suite can fail: for each guard in the code, remove it, run the
// race scenario that depends on it, and expect that run to FAIL; then restore the code.
// (Guards that are database indexes are proven inside the suite by its control tests.)
//
//   npm run test:mutations            (needs DATABASE_URL or boots an embedded PostgreSQL)
//
// Exits non-zero if any scenario still passes with its guard removed.

const ROOT = path.resolve(import.meta.dirname, '..');

interface Mutation {
  guard: string;
  edits: { file: string; find: string; replace: string }[];
  test: string;
  scenario: string;
  rounds?: number;
}

const MUTATIONS: Mutation[] = [
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
        find: `    ...(serverBoundMs ? { statement_timeout: serverBoundMs, idle_in_transaction_session_timeout: serverBoundMs } : {}),\n`,
        replace: ``,
      },
    ],
    test: 'test/reliability/pooled-connection-state.test.ts',
    scenario: 'a statement waiting on a lock past the bound is cancelled by the server',
    rounds: 1,
  },
  {
    guard: 'claimWait resolves only an unresolved WAITING row (I4)',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `WHERE s.id = \${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NULL`,
        replace: `WHERE s.id = \${opts.stepExecutionId}::uuid`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '2. event delivery and timeout',
  },
  {
    guard: 'claimStep is fenced by the expected version (I6)',
    edits: [
      {
        file: 'server/engine/claims/execution.ts',
        find: `WHERE e.id = \${opts.executionId}::uuid AND e.version = \${opts.expectedVersion} AND e.status = 'RUNNING'`,
        replace: `WHERE e.id = \${opts.executionId}::uuid AND e.status = 'RUNNING'`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '5. a stale next-step writer',
    // Two connections racing one claim: on a loaded 2-core machine the stale writer's
    // window opened as late as round 12 of 20, and twice not at all; 60 rounds leave room.
    rounds: 60,
  },
  {
    guard: 'advanceExecution is fenced by version and claim token (I6)',
    edits: [
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${executionStillClaimed(batchClaimColumns)}`,
        replace: `       WHERE e.id = v."executionId"`,
      },
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${executionStillClaimed(claimValues(claim))}
      RETURNING e.id, e.version, e."projectId", e."contactId"`,
        replace: `       WHERE e.id = \${claim.executionId}::uuid
      RETURNING e.id, e.version, e."projectId", e."contactId"`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '5. a stale next-step writer',
  },
  {
    guard: 'each row of a batch of completions is fenced on its own (I6)',
    edits: [
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${executionStillClaimed(batchClaimColumns)}`,
        replace: `       WHERE e.id = v."executionId"`,
      },
    ],
    test: 'test/race/batch-completion.test.ts',
    scenario: 'a stale worker batch racing a fresh one',
    rounds: 10,
  },
  {
    guard: 'a wake-up claims the wait before continuing (I4, I6): duplicate wake-ups',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `WHERE s.id = \${opts.stepExecutionId}::uuid AND s.status = 'WAITING' AND s."resolvedBy" IS NULL`,
        replace: `WHERE s.id = \${opts.stepExecutionId}::uuid`,
      },
      {
        file: 'server/engine/claims/execution.ts',
        find: `WHERE e.id = \${opts.executionId}::uuid AND e.version = \${opts.expectedVersion} AND e.status = 'RUNNING'`,
        replace: `WHERE e.id = \${opts.executionId}::uuid AND e.status = 'RUNNING'`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '3. eight duplicate wake-ups',
  },
  {
    guard: '"active" includes WAITING, in its one definition and the I1 index',
    edits: [
      {
        // The one definition of "active" (every statement asking it is built from it).
        file: 'server/common/execution-status.ts',
        find: `export const ACTIVE_STATUSES = [ExecutionStatus.RUNNING, ExecutionStatus.WAITING] as const`,
        replace: `export const ACTIVE_STATUSES = [ExecutionStatus.RUNNING] as const`,
      },
      {
        file: 'prisma/migrations/20261201000400_active_execution_unique/migration.sql',
        find: `WHERE "status" IN ('RUNNING', 'WAITING')`,
        replace: `WHERE "status" IN ('RUNNING')`,
      },
    ],
    test: 'test/race/races.test.ts',
    scenario: '4. re-entry while WAITING',
  },
  {
    guard: 'workers pick only executions whose step is due (readyAt), never one another holds',
    edits: [
      {
        file: 'server/engine/claims/execution.ts',
        find: `       WHERE status = 'RUNNING' AND "readyAt" <= now()
         AND NOT EXISTS`,
        replace: `       WHERE status = 'RUNNING'
         AND NOT EXISTS`,
      },
    ],
    test: 'test/race/workers.test.ts',
    scenario: '7. four worker processes',
    rounds: 5,
  },
  {
    guard: 'an expired lease can be re-claimed (a dead worker does not hold work forever)',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `WHERE s.status IN ('PENDING', 'FAILED') OR (s.status = 'RUNNING' AND s."leaseExpiresAt" < now())`,
        replace: `WHERE s.status IN ('PENDING', 'FAILED')`,
      },
    ],
    test: 'test/race/workers.test.ts',
    scenario: 'its lease expires',
    rounds: 2,
  },
  {
    guard: 'renewLease renews only a live lease (a stalled worker cannot revive one an operator or worker took)',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `  const lease = opts.liveLease ? Prisma.sql\` AND s."leaseExpiresAt" >= now()\` : Prisma.empty;`,
        replace: `  const lease = Prisma.empty;`,
      },
    ],
    test: 'test/engine/lease-renewal.test.ts',
    scenario: 'a stalled worker renewing while RETRY_STEP applies',
    rounds: 1,
  },
  {
    guard: "RESEND is a CAS on the message's status and version (two operators cannot both resend an email)",
    edits: [
      {
        file: 'server/engine/claims/operator.ts',
        find: `           "providerId" = NULL, error = NULL, "sentAt" = NULL
     WHERE m.id = \${opts.messageId}::uuid AND m.version = \${opts.expectedVersion} AND \${messageAwaitsOperator}`,
        replace: `           "providerId" = NULL, error = NULL, "sentAt" = NULL
     WHERE m.id = \${opts.messageId}::uuid`,
      },
    ],
    test: 'test/repair/messages.test.ts',
    scenario: 'two operators resending at once',
    rounds: 1,
  },
  {
    guard: "a repair's claim turns I1's unique violation into ACTIVE_EXECUTION, never an exception",
    edits: [
      {
        file: 'server/engine/claims/operator.ts',
        find: `    if (isActiveExecutionViolation(error)) return { refused: true };
`,
        replace: ``,
      },
    ],
    test: 'test/repair/active-execution.test.ts',
    scenario: 'while a re-enrollment of the contact is still committing',
    rounds: 3,
  },
  {
    guard: 'bulk repair applies each row at the version and step execution it was selected with',
    edits: [
      {
        file: 'server/repair/bulk.ts',
        find: `import { applyRepair } from './actions';`,
        replace: `import { applyRepair, previewRepair } from './actions';`,
      },
      {
        file: 'server/repair/bulk.ts',
        find: `        expectedVersion: target.version,
        ...(target.executionId ? { expectedStepExecutionId: target.stepExecutionId } : {}),
`,
        replace: `        expectedVersion: (await previewRepair(db, { projectId: req.projectId, action: req.action, executionId: target.executionId, eventId: target.eventId }, opts)).expectedVersion,
`,
      },
    ],
    test: 'test/repair/bulk-selection.test.ts',
    scenario: 'SKIPPED_CHANGED',
    rounds: 1,
  },
  {
    guard: 'a parking WAIT_FOR_EVENT holds its event channel before it looks back (I7)',
    edits: [
      {
        file: 'server/engine/run-steps.ts',
        find: `        await lockEventChannel(tx, { contactId: claim.contactId, eventName });
`,
        replace: ``,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'a wait being claimed or parked while its event is accepted',
    rounds: 10,
  },
  {
    guard: 'a parking WAIT_FOR_EVENT looks back for an event accepted since it began (I7)',
    edits: [
      {
        file: 'server/engine/claims/completion.ts',
        find: `       WHERE \${awaitEvent}::text IS NOT NULL
         AND \${eventResumesWait({`,
        replace: `       WHERE false
         AND \${eventResumesWait({`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'a wait being claimed or parked while its event is accepted',
    rounds: 4,
  },
  {
    guard: 'the timer try-locks the event channel before it looks back (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `        OR pg_try_advisory_xact_lock(\${eventChannelKey(Prisma.sql\`locked."contactId"\`, Prisma.sql\`ws.config->>'eventName'\`)})\``,
        replace: `        OR true\``,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'the timer racing events accepted around the deadline',
  },
  {
    guard: 'an event holds its channel while it is accepted (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/outbox.ts',
        find: `      SELECT pg_advisory_xact_lock(\${eventChannelKey(Prisma.sql\`\${e.contactId}::uuid\`, Prisma.sql\`\${e.name}::text\`)})
       WHERE`,
        replace: `      SELECT 1
       WHERE`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'the timer racing events accepted around the deadline',
  },
  {
    guard: 'the timer takes an event accepted before the deadline (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/waits.ts',
        find: `           WHERE ws.type = 'WAIT_FOR_EVENT' AND \${eventResumesWait(parkedWaitWindow)}`,
        replace: `           WHERE false AND \${eventResumesWait(parkedWaitWindow)}`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'the timer fires before its dispatch',
    rounds: 1,
  },
  {
    guard: 'FORCE_TIMEOUT takes the event channel before it looks back (an event being accepted is waited for, not lost)',
    edits: [{ file: 'server/repair/apply.ts', find: `    await lockEventChannel(tx, { contactId: execution.contactId, eventName });`, replace: `` }],
    test: 'test/repair/in-window-events.test.ts',
    scenario: 'an event accepted while the operator times the wait out is never lost',
    rounds: 1,
  },
  {
    guard: 'FORCE_TIMEOUT follows the timer: an unconsumed in-window event resumes the wait by EVENT',
    edits: [
      {
        file: 'server/repair/planner.ts',
        find: `const resumeEvent = inWindow.length > 0 && !choices.ignoreInWindowEvents ? inWindow[0]! : null;`,
        replace: `const resumeEvent = null as InWindowEvent | null;`,
      },
    ],
    test: 'test/repair/in-window-events.test.ts',
    scenario: 'its dispatch late: the preview names it',
    rounds: 1,
  },
  {
    guard: 'waits.resolve records EVENT only with an event the wait takes (its name, inside its window, unconsumed)',
    edits: [{ file: 'server/repair/resolve-wait.ts', find: `    if (why === null) {`, replace: `    if (true) {` }],
    test: 'test/api/routers/waits.test.ts',
    scenario: 'an event of another name',
    rounds: 1,
  },
  {
    guard: 'an event accepted after the deadline never resumes the wait (event time decides)',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `         AND ev."createdAt" >= \${w.startedAt} AND ev."createdAt" < \${w.dueAt}`,
        replace: `         AND ev."createdAt" >= \${w.startedAt}`,
      },
    ],
    test: 'test/race/event-delivery.test.ts',
    scenario: 'never resumes the wait, even while the timer lags',
    rounds: 1,
  },
  {
    guard: 'an enrollment that lost to an execution finished since inserts again (allowReentry, I1)',
    edits: [
      {
        file: 'server/engine/enrollment.ts',
        find: `export const ENROLL_INSERT_ATTEMPTS = 3;`,
        replace: `export const ENROLL_INSERT_ATTEMPTS = 1;`,
      },
    ],
    test: 'test/race/lost-enrollment.test.ts',
    scenario: 'a batch: the contact whose winner finished is enrolled on a retry',
    // The interleaving is forced (sessions held open, not timing): one round shows it.
    rounds: 1,
  },
  {
    guard: 'an enrollment that keeps losing is told ACTIVE_EXECUTION, not an exception (I1)',
    edits: [
      {
        file: 'server/engine/enrollment.ts',
        find: `results[i] = executionId ? { ok: false, reason: 'ACTIVE_EXECUTION', executionId } : { ok: false, reason: 'CONTACT_NOT_FOUND' };`,
        replace: `throw new Error('enrollment conflicted with an execution that no longer exists; retry');`,
      },
    ],
    test: 'test/race/lost-enrollment.test.ts',
    scenario: 'losing every attempt: ACTIVE_EXECUTION naming the last winner',
    rounds: 1,
  },
];

function applyEdits(m: Mutation): Map<string, string> {
  const originals = new Map<string, string>();
  for (const edit of m.edits) {
    const file = path.join(ROOT, edit.file);
    const text = originals.get(file) ?? readFileSync(file, 'utf8');
    if (!originals.has(file)) originals.set(file, text);
    const current = readFileSync(file, 'utf8');
    const count = current.split(edit.find).length - 1;
    if (count === 0) throw new Error(`guard text not found in ${edit.file} (the mutation is out of date):\n${edit.find}`);
    writeFileSync(file, current.split(edit.find).join(edit.replace));
  }
  return originals;
}

function restore(originals: Map<string, string>) {
  for (const [file, text] of originals) writeFileSync(file, text);
}

// `npm run test:mutations -- event-delivery` runs only the guards whose test or guard text matches.
const only = process.argv[2];
const selected = only ? MUTATIONS.filter((m) => m.test.includes(only) || m.guard.includes(only)) : MUTATIONS;

let survivors = 0;
for (const m of selected) {
  const originals = applyEdits(m);
  const started = Date.now();
  let failed = false;
  let evidence = '';
  try {
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', m.test, '-t', m.scenario, '--bail', '1'],
      { cwd: ROOT, env: { ...process.env, RACE_ROUNDS: String(m.rounds ?? 20) }, stdio: 'pipe', timeout: 600_000 },
    );
  } catch (error) {
    failed = true;
    // The first assertion that broke, so a reader can see *why* the run failed.
    const out = `${(error as { stdout?: Buffer }).stdout ?? ''}${(error as { stderr?: Buffer }).stderr ?? ''}`.replace(/\x1b\[[0-9;]*m/g, '');
    evidence = out.split('\n').find((line) => /AssertionError|Error:|timed out/.test(line))?.trim() ?? '(no assertion line found)';
  } finally {
    restore(originals);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (!failed) survivors++;
  console.log(`${failed ? 'caught ' : 'MISSED '} ${m.guard}  [scenario "${m.scenario}", ${seconds} s]`);
  if (evidence) console.log(`         ${evidence.slice(0, 200)}`);
}
console.log(`${selected.length - survivors} passed, ${survivors} failed`);
process.exit(survivors === 0 ? 0 : 1);
