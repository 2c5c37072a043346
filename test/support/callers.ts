import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { expect } from 'vitest';
import type { Db } from '../../server/db';
import { createCaller } from '../../server/trpc/root';
import type { Actor } from '../../server/auth/actor';
import type { Role } from '../../server/common/roles';
import type { Context } from '../../server/trpc/trpc';

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

/** The TRPCError a call fails with (the test fails if it succeeds or throws anything else). */
export async function rejection(promise: Promise<unknown>): Promise<TRPCError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCError);
    return error as TRPCError;
  }
  throw new Error('expected the call to fail');
}

/** The call fails with this tRPC code; its error, for further checks. */
export async function expectCode(promise: Promise<unknown>, code: TRPCError['code']): Promise<TRPCError> {
  const error = await rejection(promise);
  expect(error.code, error.message).toBe(code);
  return error;
}
