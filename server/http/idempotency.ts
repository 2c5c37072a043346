import { createHash, randomUUID } from 'node:crypto';
import type { Db } from '../db';
import { IDEMPOTENCY_PROBLEMS, problem, problemResponse } from './problem';

// Idempotency-Key on every POST under /api/v1 (docs/api.md, "Idempotency"). The first
// request with a key claims it (one INSERT ... ON CONFLICT, so of any number of concurrent
// requests with the key exactly one wins), runs, and stores its answer; a retry with the
// same key, method, path and body within 24 hours gets that answer back and runs nothing;
// the same key with another request is 422; a duplicate while the first still runs is 409
// (`idempotency-in-progress`) and runs nothing. A 5xx releases the key, so a retry runs.
// Keys are per API key: two keys never see each other's.

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const IDEMPOTENCY_KEY_MAX = 200;
/** How long a key's answer is kept and replayed. */
export const IDEMPOTENCY_RETENTION_HOURS = 24;
/** The header on a replayed answer. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** A claim in flight this long was abandoned (no request runs for minutes): the next request takes it over. */
const ABANDONED_CLAIM_MINUTES = 10;

const KEY_PATTERN = /^[\x21-\x7e]{1,200}$/;

export interface IdempotentRequest {
  projectId: string;
  apiKeyId: string;
  key: string;
  method: string;
  path: string;
  bodyHash: string;
}

interface KeyRow {
  method: string;
  path: string;
  bodyHash: string;
  status: number | null;
  contentType: string | null;
  responseBody: string | null;
}

export type Claim = { won: true; token: string } | { won: false; answer: Response };

/** The key a request sends, null when it sends none, or a 400 when it is not a key. */
export function idempotencyKeyOf(req: Request): string | null | Response {
  const key = req.headers.get(IDEMPOTENCY_HEADER);
  if (key === null) return null;
  if (KEY_PATTERN.test(key)) return key;
  return problemResponse(problem('BAD_REQUEST', `The ${IDEMPOTENCY_HEADER} header must be 1 to ${IDEMPOTENCY_KEY_MAX} visible ASCII characters.`, { issues: [{ path: IDEMPOTENCY_HEADER, message: 'not a key' }] }));
}

export function bodyHashOf(body: ArrayBuffer): string {
  return createHash('sha256').update(Buffer.from(body)).digest('hex');
}

/**
 * Claim the key for this request, or the answer it gets instead: the first answer replayed,
 * 409 while the first runs, 422 for another request under the same key. A key whose 24
 * hours are over is overwritten by the same statement, as if it had never been used.
 */
export async function claimIdempotencyKey(db: Db, r: IdempotentRequest, attempt = 1): Promise<Claim> {
  const token = randomUUID();
  // Exactly one of any number of concurrent claims inserts (or takes over an expired row):
  // the primary key decides, never a read before the write.
  const claimed = await db.$queryRaw<{ claimToken: string }[]>`
    -- claimIdempotencyKey
    INSERT INTO "ApiIdempotencyKey" AS k ("projectId", "apiKeyId", "key", "method", "path", "bodyHash", "claimToken", "createdAt", "expiresAt")
    VALUES (${r.projectId}::uuid, ${r.apiKeyId}::uuid, ${r.key}, ${r.method}, ${r.path}, ${r.bodyHash}, ${token}::uuid, now(),
            now() + make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS}::int))
    ON CONFLICT ("projectId", "apiKeyId", "key") DO UPDATE
       SET "method" = EXCLUDED."method", "path" = EXCLUDED."path", "bodyHash" = EXCLUDED."bodyHash",
           "claimToken" = EXCLUDED."claimToken", "status" = NULL, "contentType" = NULL, "responseBody" = NULL,
           "createdAt" = EXCLUDED."createdAt", "expiresAt" = EXCLUDED."expiresAt"
     WHERE k."expiresAt" <= now()
        -- A claim whose holder never answered (its process died mid-request) is over too.
        OR (k."status" IS NULL AND k."createdAt" < now() - make_interval(mins => ${ABANDONED_CLAIM_MINUTES}::int))
    RETURNING "claimToken"`;
  if (claimed.length > 0) return { won: true, token };
  const [row] = await db.$queryRaw<KeyRow[]>`
    -- idempotencyKeyHeld
    SELECT "method", "path", "bodyHash", "status", "contentType", "responseBody"
      FROM "ApiIdempotencyKey"
     WHERE "projectId" = ${r.projectId}::uuid AND "apiKeyId" = ${r.apiKeyId}::uuid AND "key" = ${r.key} AND "expiresAt" > now()`;
  // Released (a 5xx) or expired between the two statements: claim again.
  if (!row && attempt < 3) return claimIdempotencyKey(db, r, attempt + 1);
  if (!row) return { won: false, answer: inProgress(r.key) };
  if (row.method !== r.method || row.path !== r.path || row.bodyHash !== r.bodyHash) {
    const p = IDEMPOTENCY_PROBLEMS.mismatch;
    return {
      won: false,
      answer: problemResponse(
        problem(p.code, `The ${IDEMPOTENCY_HEADER} "${r.key}" was used for ${row.method} ${row.path} with another body; use a new key for a new request. Nothing was done.`, p),
      ),
    };
  }
  if (row.status === null) return { won: false, answer: inProgress(r.key) };
  const headers = new Headers({ [REPLAYED_HEADER]: 'true' });
  if (row.contentType) headers.set('content-type', row.contentType);
  return { won: false, answer: new Response(row.responseBody, { status: row.status, headers }) };
}

function inProgress(key: string): Response {
  const p = IDEMPOTENCY_PROBLEMS.inProgress;
  return problemResponse(problem(p.code, `The first request with ${IDEMPOTENCY_HEADER} "${key}" is still running; retry in a moment to get its answer. Nothing was done.`, p), { 'Retry-After': '1' });
}

/** The claim holder's answer, stored for retries; a 5xx releases the key instead, so a retry runs again. */
export async function settleIdempotencyKey(db: Db, r: IdempotentRequest, token: string, answer: Response): Promise<Response> {
  if (answer.status >= 500) {
    await db.$executeRaw`
      -- releaseIdempotencyKey
      DELETE FROM "ApiIdempotencyKey"
       WHERE "projectId" = ${r.projectId}::uuid AND "apiKeyId" = ${r.apiKeyId}::uuid AND "key" = ${r.key} AND "claimToken" = ${token}::uuid`;
    return answer;
  }
  const body = await answer.text();
  const contentType = answer.headers.get('content-type');
  await db.$executeRaw`
    -- storeIdempotentAnswer
    UPDATE "ApiIdempotencyKey"
       SET "status" = ${answer.status}::int, "contentType" = ${contentType}, "responseBody" = ${body}
     WHERE "projectId" = ${r.projectId}::uuid AND "apiKeyId" = ${r.apiKeyId}::uuid AND "key" = ${r.key} AND "claimToken" = ${token}::uuid`;
  return new Response(body, { status: answer.status, headers: answer.headers });
}
