import { transaction, type Db } from '../db';

// The per-account limit on failed sign-ins. The per-address limit
// (better-auth's rate limiter) stops one client trying many accounts; this one stops many
// addresses (or one claiming to be many) trying one account. It is counted in the
// database, so every web process sees the same count.
//
// An attempt is recorded *before* the password is checked, under a per-account advisory
// lock, counted with the others: concurrent attempts cannot all slip under the limit. A
// refused attempt records nothing (being refused does not extend the lock-out), a successful sign-in clears the
// account's failures, and anything but a wrong password (a 5xx, a bad request) does not count.

/** Wrong passwords one account may take in ACCOUNT_WINDOW_SECONDS before 429. */
export const ACCOUNT_MAX_FAILURES = 10;
export const ACCOUNT_WINDOW_SECONDS = 15 * 60;

export type AttemptGate = { allowed: true; attemptId: string } | { allowed: false; retryAfterSeconds: number };

const key = (email: string) => email.trim().toLowerCase().slice(0, 320);

export async function beginSignInAttempt(db: Db, email: string): Promise<AttemptGate> {
  return transaction(db, 'SHORT', async (tx) => {
    await tx.$executeRaw`-- beginSignInAttempt.lock
      SELECT pg_advisory_xact_lock(hashtextextended(${`sign-in/${key(email)}`}, 11))`;
    const [window] = await tx.$queryRaw<{ n: number; oldest: Date | null }[]>`
      -- beginSignInAttempt.window
      SELECT count(*)::int AS n, min(at) AS oldest FROM "SignInFailure"
       WHERE email = ${key(email)} AND at > now() - make_interval(secs => ${ACCOUNT_WINDOW_SECONDS})`;
    if (window!.n >= ACCOUNT_MAX_FAILURES) {
      const oldest = window!.oldest ?? new Date();
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((oldest.getTime() + ACCOUNT_WINDOW_SECONDS * 1000 - Date.now()) / 1000)) };
    }
    const [attempt] = await tx.$queryRaw<{ id: string }[]>`-- beginSignInAttempt.record
      INSERT INTO "SignInFailure" (email) VALUES (${key(email)}) RETURNING id`;
    return { allowed: true, attemptId: attempt!.id };
  });
}

/** The attempt's outcome: a wrong password keeps its row; a success clears the account; anything else drops the row. */
export async function finishSignInAttempt(db: Db, email: string, attemptId: string, outcome: 'WRONG_PASSWORD' | 'SIGNED_IN' | 'OTHER'): Promise<void> {
  if (outcome === 'SIGNED_IN') {
    await db.$executeRaw`-- finishSignInAttempt.signedIn
      DELETE FROM "SignInFailure" WHERE email = ${key(email)}`;
  } else if (outcome === 'OTHER') {
    await db.$executeRaw`-- finishSignInAttempt.other
      DELETE FROM "SignInFailure" WHERE id = ${attemptId}::uuid`;
  } else {
    // Now and then, forget this account's failures older than a day.
    await db.$executeRaw`-- finishSignInAttempt.forgetOld
      DELETE FROM "SignInFailure" WHERE email = ${key(email)} AND at < now() - interval '1 day'`;
  }
}
