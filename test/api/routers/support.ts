import type { TRPCError } from '@trpc/server';
import { afterAll, beforeAll } from 'vitest';
import { createEngineContext } from '../../../server/engine/context';
import { runWorkerOnce } from '../../../server/engine/worker';
import type { Actor } from '../../../server/auth/actor';
import { ConflictError } from '../../../server/trpc/trpc';
import { actorFor, callerFor, expectCode, rejection } from '../../support/callers';
import { freshDatabase, type TestDatabase } from '../../support/database';
import { createProject } from '../../support/fixtures';

// What the router tests (one file per router, beside this one) share: a fresh database
// per file with two projects and an actor per role, and the checks of the error contract
// (docs/api.md, "Errors"). The behaviour of every procedure of docs/api.md (except
// apiKeys/members): results, keyset pagination, project scoping (another project's ids
// are NOT_FOUND), conflicts
// carrying data.conflict, and the audit entry each mutation writes in the transaction of
// its change.

export let t: TestDatabase;
export let projectId: string;
export let otherProjectId: string;
export let owner: Actor;
export let marketer: Actor;
export let operator: Actor;
export let viewer: Actor;
export let outsider: Actor;

/** The file's database and actors, made before its tests and dropped after them. */
export function setUpRouterTests(): void {
  beforeAll(async () => {
    // Stuck means "past its due time" at once, so tests need not wait out a grace period.
    process.env.STUCK_GRACE_SECONDS = '0';
    t = await freshDatabase();
    projectId = (await createProject(t.db)).id;
    otherProjectId = (await createProject(t.db)).id;
    owner = actorFor(projectId, 'OWNER');
    marketer = actorFor(projectId, 'MARKETER');
    operator = actorFor(projectId, 'OPERATOR');
    viewer = actorFor(projectId, 'VIEWER');
    outsider = actorFor(otherProjectId, 'OWNER');
  });
  afterAll(async () => t?.drop());
}

export { expectCode, rejection };

export const as = (actor: Actor | null) => callerFor(t.db, actor);

/** What the error formatter hands clients as data.conflict. */
export function conflictOf(error: TRPCError): Record<string, unknown> | null {
  return error.cause instanceof ConflictError ? error.cause.conflict : null;
}

export async function auditOf(targetId: string) {
  return t.db.auditEntry.findMany({ where: { targetId }, orderBy: [{ at: 'asc' }, { id: 'asc' }] });
}

export async function runWorkers() {
  await runWorkerOnce(createEngineContext(t.db));
}
