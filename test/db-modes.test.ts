import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sourceTexts } from './support/source-files';

// The database's two modes (server/db/types.ts) as a check on the sources. Prisma's
// interactive transactions are opened in one place (server/db/transaction.ts, with a named
// timeout policy), never by a `$transaction(` call of their own with copied constants; the
// engine's prepared path (server/db/prepared.ts: preparedRaw, preparedTransaction, and
// rawTransaction over it) is used by the engine's modules alone, plus the one statement
// every API call starts with (server/auth/actor.ts, the key lookup).

/** Who may name the prepared path, and who may open a transaction by hand. */
export const PREPARED_PATH_USERS = /^server\/(db\/|engine\/|auth\/actor\.ts$)/;
export const TRANSACTION_HOME = 'server/db/transaction.ts';

/** Comments out, so a sentence that names a call is not the call. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The breaches of the two rules in these files (path relative to the root -> text). */
export function modeViolations(files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [rel, text] of files) {
    const body = code(text);
    if (/\.\$transaction\s*\(/.test(body) && rel !== TRANSACTION_HOME) {
      out.push(`${rel} opens a transaction with $transaction: use transaction()/rawTransaction() from server/db with a named policy`);
    }
    if (/\b(preparedRaw|preparedTransaction|rawTransaction)\b/.test(body) && !PREPARED_PATH_USERS.test(rel)) {
      out.push(`${rel} uses the engine's prepared path outside the engine`);
    }
  }
  return out;
}

function projectFiles(): Map<string, string> {
  const files = sourceTexts(['server', 'app', 'scripts']);
  files.set('proxy.ts', readFileSync(path.join(ROOT, 'proxy.ts'), 'utf8'));
  return files;
}

describe('database modes', () => {
  it('opens every transaction through server/db/transaction.ts and keeps the prepared path in the engine', () => {
    expect(modeViolations(projectFiles())).toEqual([]);
  });

  it('fails on a seeded violation of each rule', () => {
    const seeded = new Map([
      ['server/auth/admin.ts', "await db.$transaction(async (tx) => tx.user.findMany(), { timeout: 5000 });"],
      ['server/read/overview.ts', "import { preparedRaw } from '../db';\nconst rows = await preparedRaw(db).$queryRaw`SELECT 1`;"],
      ['server/repair/apply.ts', "await rawTransaction(db, 'ENGINE', fn);"],
      // Named in a comment only: not a breach.
      ['server/trpc/root.ts', '// db.$transaction( is opened in server/db/transaction.ts\nexport {};'],
    ]);
    expect(modeViolations(seeded)).toEqual([
      expect.stringContaining('server/auth/admin.ts opens a transaction'),
      expect.stringContaining('server/read/overview.ts uses the engine'),
      expect.stringContaining('server/repair/apply.ts uses the engine'),
    ]);
  });

  it('types a raw transaction as raw, and refuses a model call forced into one when it runs', async () => {
    const { closeDb, createDb, preparedRaw, rawTransaction } = await import('../server/db');
    const db = createDb(process.env.DATABASE_URL!, { poolSize: 1 });
    try {
      await expect(
        rawTransaction(preparedRaw(db), 'ENGINE', async (tx) => {
          // @ts-expect-error a raw transaction's client (RawDb) has no models
          return tx.workflow.findMany();
        }),
      ).rejects.toThrow(/not available inside a raw engine transaction/);
      const [row] = await rawTransaction(preparedRaw(db), 'ENGINE', (tx) => tx.$queryRaw<{ one: number }[]>`-- dbModesProbe\nSELECT 1 AS one`);
      expect(row).toEqual({ one: 1 });
    } finally {
      await closeDb(db);
    }
  });

  it("joins a caller's transaction rather than opening another", async () => {
    const { closeDb, createDb, rawTransaction, transaction } = await import('../server/db');
    const db = createDb(process.env.DATABASE_URL!, { poolSize: 2 });
    try {
      const joined = await transaction(db, 'SHORT', async (tx) => {
        const inner = await transaction(tx, 'ENGINE', async (same) => same === tx);
        const raw = await rawTransaction(tx, 'ENGINE', async (same) => same === tx);
        return inner && raw;
      });
      expect(joined).toBe(true);
    } finally {
      await closeDb(db);
    }
  });
});

