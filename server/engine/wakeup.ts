import type { DbTx } from '../db';

// Workers poll, and may be woken early by NOTIFY. NOTIFY takes one global lock at
// commit and serialises every transaction that notifies (DESIGN.md section 7), so it is
// sent once per API call that created work, never once per row, and never from inside
// the claims themselves.

export const WAKEUP_CHANNEL = 'waypost_work';

export async function notifyWorkers(db: DbTx): Promise<void> {
  await db.$executeRaw`SELECT pg_notify(${WAKEUP_CHANNEL}, '')`;
}
