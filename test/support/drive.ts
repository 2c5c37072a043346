import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { claimReadySteps, claimStep } from '../../server/engine/claims';
import { driveExecution } from '../../server/engine/runner';

// Moving executions forward in a test the way a worker does, but without its timer, so a
// wait stays parked until the test decides otherwise (a timeout nobody processed, an
// event racing its timeout).

/** Run every ready execution's steps until each parks at a wait or ends. */
export async function runStepsOnly(db: Db): Promise<void> {
  const ctx = createEngineContext(db);
  for (;;) {
    const { claims } = await claimReadySteps(db, { limit: 50, leaseSeconds: 30 });
    if (claims.length === 0) return;
    for (const claim of claims) await driveExecution(ctx, claim);
  }
}

/** Run one freshly enrolled execution (version 1) until it parks at a wait or ends. */
export async function driveFromStart(db: Db, executionId: string): Promise<void> {
  const claimed = await claimStep(db, { executionId, expectedVersion: 1, leaseSeconds: 30 });
  if (claimed.won) await driveExecution(createEngineContext(db), claimed.claim);
}
