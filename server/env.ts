import { z } from 'zod';

// The product's configuration, validated once at start-up so that a missing or malformed
// variable stops the process with a sentence instead of a stack trace deep in a request.
// Every variable here is listed in the README's configuration table.

const int = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

const postgresUrl = z
  .string()
  .trim()
  .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL');

export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** Unset: `npm start` and `npm test` boot an embedded PostgreSQL under .data/. */
  DATABASE_URL: postgresUrl.optional(),
  /** Tests only: the server in which each test file gets its own fresh database. */
  TEST_DATABASE_URL: postgresUrl.optional(),
  PORT: int(3000, 1, 65535),
  /** Port of the embedded PostgreSQL (never 5432, which a system server may hold). */
  EMBEDDED_PG_PORT: int(54329, 1024, 65535),
  /** Worker processes started by `npm start`. */
  WORKERS: int(2, 0, 64),
  /** Executions one worker process handles at once. */
  WORKER_CONCURRENCY: int(8, 1, 256),
  /** How long a claimed step stays owned by its worker without renewal. */
  LEASE_SECONDS: int(30, 1, 3600),
  /** How long a state may linger before the console calls it stuck. */
  STUCK_GRACE_SECONDS: int(120, 0, 86400),
  /** Attempts before a tracked event is dead-lettered. */
  EVENT_MAX_ATTEMPTS: int(8, 1, 100),
  /** smtp:// or smtps:// URL; unset: messages are delivered to the log/DB transport. */
  SMTP_URL: z
    .string()
    .trim()
    .refine((v) => /^smtps?:\/\//.test(v), 'must be an smtp:// or smtps:// URL')
    .optional(),
  MAIL_FROM: z.string().trim().min(3).default('Waypost <no-reply@waypost.local>'),
  /** "1": seed the demo project even on an external database. */
  SEED_DEMO: z.enum(['0', '1']).optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /**
   * Signs session cookies. Unset: `npm start` generates one once and keeps it in
   * .data/auth-secret, so sessions survive restarts; set it when running `next start` alone.
   */
  AUTH_SECRET: z.string().trim().min(32, 'must be at least 32 characters (e.g. `openssl rand -base64 32`)').optional(),
  /**
   * The console's public address (https://waypost.example.com). Unset: http://localhost:PORT.
   * Sign-in only accepts requests from this origin, and cookies are Secure when it is https.
   */
  PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .transform((v) => new URL(v).origin)
    .optional(),
});

export type Env = z.infer<typeof envSchema>;

export class EnvError extends Error {
  override name = 'EnvError';
}

/** Parse an environment (process.env by default); throws EnvError with one line per problem. */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  // Empty strings mean "unset" (a common shell habit: FOO= npm start).
  const cleaned = Object.fromEntries(
    Object.entries(source).filter(([, v]) => v !== undefined && v.trim() !== ''),
  );
  const result = envSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map(
      (issue) => `  ${issue.path.join('.')}: ${issue.message} (got ${JSON.stringify(cleaned[String(issue.path[0])] ?? null)})`,
    );
    throw new EnvError(`Invalid configuration; fix these environment variables:\n${lines.join('\n')}`);
  }
  return result.data;
}

let cached: Env | undefined;

/** The validated environment of this process. */
export function env(): Env {
  cached ??= parseEnv();
  return cached;
}

/** The database URL this process must use; a sentence when none is configured. */
export function databaseUrl(): string {
  const url = env().DATABASE_URL;
  if (!url) {
    throw new EnvError(
      'DATABASE_URL is not set. Start the product with `npm start` (which boots an embedded PostgreSQL), or set DATABASE_URL=postgresql://user@host:5432/db.',
    );
  }
  return url;
}
