import { parseEnv } from '../server/env';
import { markRolledBack, migrate } from '../server/migrator';
import { migrationUrl, openProductDatabase, stopEmbeddedPostgres } from './database';

// `npm run db:migrate`: apply prisma/migrations to DATABASE_URL, or DIRECT_DATABASE_URL
// when set (never through a transaction-mode pooler), or to the embedded PostgreSQL when
// DATABASE_URL is unset, started for the occasion and stopped after.
// `npm run db:migrate -- --rolled-back NAME` first marks a failed migration as rolled back,
// once its partial change has been undone, as `prisma migrate resolve --rolled-back` does.

function usage(): never {
  console.error('usage: npm run db:migrate [-- --rolled-back MIGRATION_NAME]');
  process.exit(2);
}

function parseArgs(args: string[]): { rolledBack?: string } {
  if (args.length === 0) return {};
  if (args[0] === '--rolled-back' && args.length === 2 && args[1]) return { rolledBack: args[1] };
  usage();
}

async function main(): Promise<number> {
  const { rolledBack } = parseArgs(process.argv.slice(2));
  const env = parseEnv();
  const database = await openProductDatabase(env, (line) => console.log(line));
  try {
    const url = migrationUrl(env, database.url);
    if (rolledBack) {
      await markRolledBack(url, rolledBack);
      console.log(`marked ${rolledBack} as rolled back`);
    }
    const { applied, skipped } = await migrate(url, { log: (line) => console.log(line) });
    for (const name of skipped) console.log(`skipped ${name} (already applied)`);
    console.log(`${applied.length} applied, ${skipped.length} already applied`);
    return 0;
  } finally {
    if (database.embedded) await stopEmbeddedPostgres(database.embedded);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Configuration and migration failures are sentences meant for the operator; a stack
    // would only bury them.
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
