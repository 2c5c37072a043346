import { createHash, randomUUID } from 'node:crypto';
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

// Applies prisma/migrations/<timestamp>_<name>/migration.sql the way `prisma migrate
// deploy` does, because Prisma's native schema engine cannot be downloaded on every
// machine (docs/architecture.md, "Constraints and choices"). It writes `_prisma_migrations` rows exactly as Prisma
// does (checksum = sha256 hex of the file), so a machine that has the engine accepts the
// same database with `prisma migrate deploy`.
//
// Rules, as Prisma's:
// - migrations run in name order; an applied one is skipped (running twice is a no-op);
// - an applied migration whose file changed fails loudly (checksum mismatch);
// - a failed migration (finished_at and rolled_back_at both null) blocks every later
//   one until it is marked rolled back (`npm run db:migrate -- --rolled-back NAME`).
// Beyond Prisma: a file containing CONCURRENTLY runs outside a transaction and must hold
// that one statement; after each migration the database is checked for INVALID indexes
// (left by an interrupted concurrent build), which fail the run with what to do.

export const DEFAULT_MIGRATIONS_DIR = path.resolve(import.meta.dirname, '..', 'prisma', 'migrations');

/**
 * Earlier texts of applied migrations whose only change since is in a comment, by the
 * sha256 of the earlier text. A database that recorded one of them has what the file
 * holds now: its recorded checksum is brought up to date (so `prisma migrate deploy`
 * agrees too) instead of failing as an edited migration. Anything else that changed an
 * applied migration still fails loudly. Add an entry only for a comment-only change.
 */
export const SUPERSEDED_CHECKSUMS: Readonly<Record<string, readonly { checksum: string; change: string }[]>> = {
  '20261201000000_init': [
    {
      checksum: '154c5bfe58c975ac72416b0fe74385c555406a0d2c4f317ee18d41aa593a8c7a',
      change: "the first line's comment named a design file outside the repository; it names docs/architecture.md now",
    },
  ],
};

/** Prisma's own advisory lock key for migrations, so both tools exclude each other. */
const MIGRATION_LOCK_KEY = 72707369;

export class MigrationError extends Error {
  override name = 'MigrationError';
  constructor(
    message: string,
    readonly migration?: string,
  ) {
    super(message);
  }
}

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  skipped: string[];
}

export interface MigrateOptions {
  dir?: string;
  /** Apply migrations up to and including this name (tests of upgrades). */
  until?: string;
  log?: (line: string) => void;
}

export function readMigrations(dir = DEFAULT_MIGRATIONS_DIR): MigrationFile[] {
  if (!existsSync(dir)) throw new MigrationError(`Migrations folder not found: ${dir}`);
  return readdirSync(dir)
    .filter((name) => statSync(path.join(dir, name)).isDirectory())
    .sort()
    .map((name) => {
      const file = path.join(dir, name, 'migration.sql');
      if (!existsSync(file)) throw new MigrationError(`Migration ${name} has no migration.sql`, name);
      const bytes = readFileSync(file);
      return { name, sql: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') };
    });
}

/** A concurrently-built index must be alone: PostgreSQL refuses it inside a transaction block. */
function isConcurrent(sql: string): boolean {
  return /\bCONCURRENTLY\b/i.test(stripComments(sql));
}

function stripComments(sql: string): string {
  return sql.replace(/--[^\n]*/g, '').replace(/\/\*[\s\S]*?\*\//g, '');
}

const CREATE_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

interface AppliedRow {
  id: string;
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

/** Indexes PostgreSQL will not use because a build was interrupted. */
export async function invalidIndexes(client: pg.ClientBase): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(`
    -- invalidIndexes
    SELECT c.relname AS name
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE NOT i.indisvalid AND n.nspname = current_schema()
     ORDER BY 1`);
  return rows.map((r) => r.name);
}

function invalidIndexAdvice(names: string[]): string {
  return (
    `INVALID index(es) ${names.map((n) => `"${n}"`).join(', ')}: a concurrent build was interrupted or hit a violation. ` +
    `Fix the data the migration's error names, run DROP INDEX CONCURRENTLY ${names.map((n) => `"${n}"`).join(', ')}; ` +
    `then mark the migration rolled back (npm run db:migrate -- --rolled-back NAME) and migrate again.`
  );
}

export async function migrate(url: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const log = options.log ?? (() => {});
  const files = readMigrations(options.dir);
  if (options.until && !files.some((f) => f.name === options.until)) {
    throw new MigrationError(`No migration named ${options.until}`);
  }
  const client = new pg.Client({ connectionString: url, application_name: 'waypost-migrate' });
  await client.connect();
  const result: MigrateResult = { applied: [], skipped: [] };
  try {
    await client.query('-- migrate.lock\nSELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(CREATE_TABLE);
    const { rows } = await client.query<AppliedRow>(
      `-- migrate.applied
        SELECT id, migration_name, checksum, finished_at, rolled_back_at, logs
         FROM "_prisma_migrations" ORDER BY started_at, migration_name`,
    );

    const failed = rows.filter((r) => r.finished_at === null && r.rolled_back_at === null);
    if (failed.length > 0) {
      const f = failed[0]!;
      throw new MigrationError(
        `Migration ${f.migration_name} failed earlier and blocks every later migration. ` +
          `Its error: ${(f.logs ?? 'unknown').split('\n')[0]}. ` +
          `Fix the cause, undo any partial change, then run: npm run db:migrate -- --rolled-back ${f.migration_name}`,
        f.migration_name,
      );
    }

    const finished = new Map(rows.filter((r) => r.finished_at !== null).map((r) => [r.migration_name, r]));
    const known = new Set(files.map((f) => f.name));
    for (const name of finished.keys()) {
      if (!known.has(name)) {
        log(`warning: migration ${name} is applied to the database but missing from ${options.dir ?? DEFAULT_MIGRATIONS_DIR}`);
      }
    }

    for (const file of files) {
      const done = finished.get(file.name);
      if (done) {
        const superseded = SUPERSEDED_CHECKSUMS[file.name]?.find((c) => c.checksum === done.checksum);
        if (superseded) {
          await client.query(`-- migrate.updateChecksum
            UPDATE "_prisma_migrations" SET checksum = $1 WHERE id = $2`, [file.checksum, done.id]);
          log(`migration ${file.name}: recorded checksum updated (only a comment changed: ${superseded.change})`);
        } else if (done.checksum !== file.checksum) {
          throw new MigrationError(
            `Migration ${file.name} was modified after it was applied (checksum ${done.checksum.slice(0, 12)}… in the database, ` +
              `${file.checksum.slice(0, 12)}… on disk). Applied migrations must never change: restore the file and add a new migration instead.`,
            file.name,
          );
        }
        result.skipped.push(file.name);
      } else {
        await applyOne(client, file, log);
        result.applied.push(file.name);
      }
      if (options.until === file.name) break;
    }

    const invalid = await invalidIndexes(client);
    if (invalid.length > 0) throw new MigrationError(invalidIndexAdvice(invalid));
    return result;
  } finally {
    await client.query('-- migrate.unlock\nSELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}

async function applyOne(client: pg.Client, file: MigrationFile, log: (line: string) => void): Promise<void> {
  const id = randomUUID();
  await client.query(
    `-- applyOne.start
      INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
     VALUES ($1, $2, $3, now(), 0)`,
    [id, file.checksum, file.name],
  );
  log(`applying ${file.name}`);
  try {
    if (isConcurrent(file.sql)) {
      // Alone, outside any transaction block; the simple-query protocol sends it as is.
      await client.query(file.sql);
      const invalid = await invalidIndexes(client);
      if (invalid.length > 0) throw new Error(invalidIndexAdvice(invalid));
    } else {
      await client.query(`BEGIN;\n${file.sql}\n;COMMIT;`);
    }
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    const message = error instanceof Error ? error.message : String(error);
    let advice = '';
    if (/already exists/.test(message) && isConcurrent(file.sql)) {
      const invalid = await invalidIndexes(client).catch(() => []);
      if (invalid.length > 0) advice = ` ${invalidIndexAdvice(invalid)}`;
    }
    await client.query(`-- applyOne.logFailure
      UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1`, [id, message]);
    throw new MigrationError(`Migration ${file.name} failed: ${message}${advice}`, file.name);
  }
  await client.query(
    `-- applyOne.finish
      UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
    [id],
  );
}

/** As `prisma migrate resolve --rolled-back NAME`: unblock after a failed migration was undone. */
export async function markRolledBack(url: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'waypost-migrate' });
  await client.connect();
  try {
    const { rowCount } = await client.query(
      `-- markRolledBack
        UPDATE "_prisma_migrations" SET rolled_back_at = now()
        WHERE migration_name = $1 AND finished_at IS NULL AND rolled_back_at IS NULL`,
      [name],
    );
    if (!rowCount) throw new MigrationError(`No failed migration named ${name} to mark rolled back`, name);
  } finally {
    await client.end();
  }
}
