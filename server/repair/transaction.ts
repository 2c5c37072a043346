import { transaction, type Db, type DbTx } from '../db';
import { databaseBusy } from '../database-unavailable';
import { log } from '../log';
import { writeAudit, type AuditInput } from '../engine/audit';

// The transaction of one repair (an execution's, an event's, an email's, a wait resolved by
// hand): the engine's transaction policy (TRANSACTION_POLICY.ENGINE, server/db/transaction.ts), so an operator's claim
// waits for a row a worker holds as long as the engine's own work may. When the database
// does not let it finish in time (a lock held past the policy, the server's statement
// timeout, a deadlock) the transaction is rolled back: the repair changed nothing, the
// attempt is audited FAILED on its own (I8), and the answer is a typed, retryable BUSY,
// never a 500.

/** A repair the database was too busy to finish: nothing changed; the same request may be sent again. */
export interface RepairBusy {
  ok: false;
  code: 'BUSY';
  message: string;
}

export const REPAIR_BUSY_MESSAGE =
  'the database did not let this repair finish in time (the row was held by other work, or the server cancelled a slow statement): nothing was changed; retry';

/**
 * `fn` in one transaction under the engine's policy; BUSY (audited FAILED with `attempt`)
 * when the database was too busy to finish it. Any other error is thrown as it is.
 */
export async function inRepairTransaction<T>(
  db: Db,
  fn: (tx: DbTx) => Promise<T>,
  attempt: () => Omit<AuditInput, 'outcome' | 'after'>,
): Promise<T | RepairBusy> {
  try {
    return await transaction(db, 'ENGINE', fn);
  } catch (error) {
    if (!databaseBusy(error)) throw error;
    const entry = attempt();
    await transaction(db, 'ENGINE', (tx) => writeAudit(tx, { ...entry, outcome: 'FAILED', after: { reason: 'BUSY', message: REPAIR_BUSY_MESSAGE } })).catch(
      (auditError: unknown) => log.warn(`${entry.action}: the database was busy, and so was writing the failed attempt's audit entry:`, { err: auditError }),
    );
    return { ok: false, code: 'BUSY', message: REPAIR_BUSY_MESSAGE };
  }
}
