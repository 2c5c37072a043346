import { randomUUID } from 'node:crypto';
import type { Db } from '../../server/db';
import { createCaller } from '../../server/trpc/root';
import type { Actor, Context, Role } from '../../server/trpc/trpc';

// Calling the router in-process as a given member of a project, without sign-in: the
// actor a session or an API key would resolve to, built directly.

export function actorFor(projectId: string, role: Role, name = role.toLowerCase()): Actor {
  const userId = `test-${name}-${randomUUID().slice(0, 8)}`;
  return { kind: 'user', id: `user:${userId}`, label: `${name}@test.example`, userId, apiKeyId: null, projectId, role };
}

export function contextFor(db: Db, actor: Actor | null): Context {
  return { db, headers: new Headers(), actor };
}

export function callerFor(db: Db, actor: Actor | null) {
  return createCaller(contextFor(db, actor));
}
