import { preparedRaw, type RawDb } from '../db';
import { processSingleton } from '../process-registry';

// Workers poll, and may be woken early by NOTIFY. NOTIFY takes one global lock at
// commit and serialises every transaction that notifies (docs/architecture.md, "Constraints and choices"), so it is
// sent once per API call that created work, never once per row, and never from inside
// the claims themselves; and it is sent after the change's own transaction has
// committed, in a transaction of its own that writes nothing: a transaction that both
// writes and notifies holds that lock through its WAL flush, so concurrent enrollments
// flushed one at a time instead of together (HTTP enrollments were bounded by it).

export const WAKEUP_CHANNEL = 'waypost_work';

export async function notifyWorkers(db: RawDb): Promise<void> {
  await db.$executeRaw`-- notifyWorkers
    SELECT pg_notify(${WAKEUP_CHANNEL}, '')`;
}

/**
 * After a sent wake-up, how long the process waits before it sends another: the calls
 * that committed work meanwhile share one NOTIFY, sent at the end of the wait.
 */
export const WAKE_SPACING_MS = 10;

interface Waker {
  /** A wake-up is being sent, or the spacing after one is running. */
  busy: boolean;
  /** Work committed while busy: send one more when the spacing is over. */
  again: boolean;
}

/** Each client's waker, once per process (server/process-registry.ts): one spacing, whichever copy of this module is asked. */
const wakers = processSingleton('engine.wakers', () => new WeakMap<object, Waker>());

/**
 * Wake the workers for work this process has just committed, without waiting: the first
 * call is sent at once, and the calls in the next WAKE_SPACING_MS share one more NOTIFY
 * after it. Under load this is at most one NOTIFY per 10 ms per process, not one per
 * request; alone, an enrollment wakes a worker as soon as it commits. Call it only after
 * the commit, so a rolled-back change never wakes anyone. A wake-up that fails is dropped:
 * the workers' polling picks the work up within their poll interval.
 */
export function wakeWorkersSoon(db: RawDb): void {
  let waker = wakers.get(db);
  if (!waker) wakers.set(db, (waker = { busy: false, again: false }));
  if (waker.busy) {
    waker.again = true;
    return;
  }
  waker.busy = true;
  const w = waker;
  // A named prepared statement over the client's pool when it has one.
  const sender = preparedRaw(db);
  void (async () => {
    try {
      do {
        w.again = false;
        await notifyWorkers(sender).catch(() => {});
        await new Promise<void>((resolve) => setTimeout(resolve, WAKE_SPACING_MS).unref());
      } while (w.again);
    } finally {
      w.busy = false;
    }
  })();
}
