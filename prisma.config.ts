import { defineConfig } from 'prisma/config';

// The CLI only generates the client here (the schema engine binary cannot be fetched on
// every machine); migrations are applied by server/db/migrator.ts. The URL is optional so
// that `prisma generate` works with no database configured.
export default defineConfig({
  schema: 'prisma/',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost/unused' },
});
