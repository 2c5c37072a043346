import proxyaddr from 'proxy-addr';
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

/** A retention period in whole days: 0 (off) up to 100 years. */
const retentionDays = z.coerce
  .number({ error: 'must be a whole number of days (0 or unset: off)' })
  .int('must be a whole number of days (0 or unset: off)')
  .min(0, 'must be 0 (off) or a positive number of days')
  .max(36_500, 'must be at most 36500 days (100 years)')
  .default(0);

export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** Unset: `npm start` and `npm test` boot an embedded PostgreSQL under .data/. */
  DATABASE_URL: postgresUrl.optional(),
  /**
   * `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer's pool_mode =
   * transaction), where a connection is no session of its own: no named prepared
   * statements, the server-side bounds sent with each transaction, and no LISTEN or
   * migration through it (those use DIRECT_DATABASE_URL). `session` (the default): every
   * connection is a session of its own (PostgreSQL itself, or a pooler in session mode).
   */
  DATABASE_POOL_MODE: z.enum(['session', 'transaction'], { error: 'must be session or transaction' }).default('session'),
  /**
   * PostgreSQL itself, past the pooler, for what needs a session (as Prisma's directUrl):
   * the workers' LISTEN and the migrations. Unset: DATABASE_URL is used for them, except
   * behind a transaction-mode pooler, where workers poll instead and migrations refuse to run.
   */
  DIRECT_DATABASE_URL: postgresUrl.optional(),
  /** Tests only: the server in which each test file gets its own fresh database. */
  TEST_DATABASE_URL: postgresUrl.optional(),
  PORT: int(3000, 1, 65535),
  /** Port of the embedded PostgreSQL (never 5432, which a system server may hold). */
  EMBEDDED_PG_PORT: int(54329, 1024, 65535),
  /**
   * Data directory of the embedded PostgreSQL (relative to the repository); its generated
   * superuser password is kept beside it in <dir>.password. Default .data/postgres.
   */
  EMBEDDED_PG_DIR: z.string().trim().min(1).default('.data/postgres'),
  /**
   * How long the web server and workers wait for a database connection (a free one from
   * the pool, or a new one to connect) before giving up: then the API answers 503 with
   * Retry-After and a worker backs off, instead of hanging.
   */
  DATABASE_CONNECT_TIMEOUT_SECONDS: int(5, 1, 300),
  /** How long they wait for a statement's answer (client side: a partition answers nothing); 0: no bound. */
  DATABASE_QUERY_TIMEOUT_SECONDS: int(30, 0, 86400),
  /**
   * How long a web or worker process may drain after SIGTERM (requests in flight, steps
   * held) before it exits anyway: the web server then closes every connection and exits 0,
   * a worker exits 1 and its held steps go to another worker when their leases lapse.
   */
  SHUTDOWN_SECONDS: int(25, 1, 3600),
  /** Worker processes started by `npm start`. */
  WORKERS: int(2, 0, 64),
  /** Executions one worker process handles at once. */
  WORKER_CONCURRENCY: int(8, 1, 256),
  /**
   * How long an idle worker sleeps before it looks for work again when no NOTIFY wakes it:
   * the longest a new enrollment waits for a worker with no wake-up listener (behind a
   * transaction-mode pooler without DIRECT_DATABASE_URL, or while the listener reconnects).
   */
  WORKER_POLL_MS: int(1000, 50, 60_000),
  /** How long a claimed step stays owned by its worker without renewal. */
  LEASE_SECONDS: int(30, 1, 3600),
  /**
   * How long a sender keeps renewing the lease of an email its transport has not answered
   * for; past it the lease lapses and the console lists the email MESSAGE_UNCONFIRMED.
   * Each SMTP phase (connect, greeting, every socket read) is bounded well under the lease.
   */
  SEND_TIMEOUT_SECONDS: int(120, 1, 3600),
  /** How long a state may linger before the console calls it stuck. */
  STUCK_GRACE_SECONDS: int(120, 0, 86400),
  /**
   * The console's counts over a whole project (server/read/figures.ts) are computed for
   * each read while that takes at most this many milliseconds; beyond it they are served
   * as last computed, marked "as of", and refreshed in the background.
   */
  CONSOLE_FIGURES_LIVE_MS: int(50, 0, 3_600_000),
  /** Attempts before a tracked event is dead-lettered. */
  EVENT_MAX_ATTEMPTS: int(8, 1, 100),
  /** smtp:// or smtps:// URL; unset: messages are delivered to the log/DB transport. */
  SMTP_URL: z
    .string()
    .trim()
    .refine((v) => /^smtps?:\/\//.test(v), 'must be an smtp:// or smtps:// URL')
    .optional(),
  MAIL_FROM: z.string().trim().min(3).default('Waypost <no-reply@waypost.local>'),
  /**
   * The demo project, whose logins share a published password. Unset: `npm start` seeds it
   * on the first start of an empty embedded database only. "0": never. "1": seed it on any
   * database not seeded before (refused when PUBLIC_URL is https). "force": also over https.
   */
  SEED_DEMO: z.enum(['0', '1', 'force'], { error: 'must be 0, 1 or force' }).optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** text: the lines as they always were; json: one JSON object a line on stdout (server/log.ts). */
  LOG_FORMAT: z.enum(['text', 'json'], { error: 'must be text or json' }).default('text'),
  /**
   * The Bearer token /metrics asks for (the web server's, and each worker's listener).
   * Unset: the web server answers /metrics 404 and workers open no listener.
   */
  METRICS_TOKEN: z.string().trim().min(16, 'must be at least 16 characters (e.g. `openssl rand -hex 32`)').optional(),
  /** A worker's metrics listener port; `npm start` gives its workers this port plus 0, 1, 2, ... Unset: no listener. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** The address a worker's metrics listener binds to. */
  METRICS_HOST: z.string().trim().min(1).default('127.0.0.1'),
  /**
   * Signs session cookies. Unset: `npm start` generates one once and keeps it in
   * .data/auth-secret, so sessions survive restarts; set it when running `next start` alone.
   */
  AUTH_SECRET: z.string().trim().min(32, 'must be at least 32 characters (e.g. `openssl rand -base64 32`)').optional(),
  /**
   * The console's public address (https://waypost.example.com). Unset: http://localhost:PORT.
   * Sign-in only accepts requests from this origin, and cookies are Secure when it is https.
   */
  /**
   * Reverse proxies whose X-Forwarded-For is believed (addresses, CIDR ranges, or loopback,
   * linklocal, uniquelocal; comma separated). Unset: none, the socket's address is the client's.
   */
  TRUSTED_PROXIES: z
    .string()
    .trim()
    .refine((v) => {
      try {
        proxyaddr.compile(v.split(',').map((s) => s.trim()).filter(Boolean));
        return true;
      } catch {
        return false;
      }
    }, 'must be addresses, CIDR ranges or loopback/linklocal/uniquelocal, comma separated')
    .optional(),
  /**
   * API calls a minute (a batched tRPC request counts as its number of calls) per API key,
   * per signed-in session, and per client address (requests without credentials, and an
   * outer bound on all of one address's calls). 0: no limit. Counted in PostgreSQL, shared
   * by every web process (server/db/rate-counter.ts; in each process's memory only while
   * PostgreSQL does not answer).
   */
  RATE_LIMIT_PER_KEY: int(6000, 0, 1_000_000),
  RATE_LIMIT_PER_SESSION: int(1200, 0, 1_000_000),
  RATE_LIMIT_PER_ADDRESS: int(6000, 0, 1_000_000),
  /**
   * Outgoing webhooks (docs/webhooks.md). Hosts (names or addresses, comma separated) a
   * webhook endpoint may be at although they are loopback, private or link-local, and
   * that may be called over plain http: an explicit allow-list, empty by default.
   */
  WEBHOOK_ALLOWED_HOSTS: z
    .string()
    .trim()
    .transform((v) => v.split(',').map((h) => h.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1')).filter(Boolean))
    .optional(),
  /** How long one webhook delivery may take (connect to the end of the response). */
  WEBHOOK_TIMEOUT_MS: int(10_000, 100, 120_000),
  /** Seconds before each retry of a failed webhook delivery; after the last, the message is dead. */
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .trim()
    .regex(/^\d+(\s*,\s*\d+)*$/, 'must be seconds, comma separated (e.g. 5,300,1800)')
    .transform((v) => v.split(',').map((n) => Number(n.trim())))
    .default([5, 300, 1800, 7200, 18000, 36000]),
  /** Webhook deliveries one worker process makes at once (apart from its steps). */
  WEBHOOK_CONCURRENCY: int(4, 1, 64),
  /** How often a worker looks for stuck groups to notify execution.stuck endpoints about. */
  WEBHOOK_STUCK_CHECK_SECONDS: int(15, 1, 3600),
  /**
   * Retention (docs/deploy.md, "Retention"): the workers remove finished executions (with
   * their step rows and emails), processed events and settled webhook messages older than
   * this many days, in small batches. 0 or unset: off, nothing is ever removed (the default,
   * the embedded demo's too). Executions an operator must still look at are always kept.
   */
  RETENTION_DAYS: retentionDays,
  /** Audit entries older than this many days are removed, in their own sweep; 0 or unset: off. */
  AUDIT_RETENTION_DAYS: retentionDays,
  PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .transform((v) => new URL(v).origin)
    .optional(),
}).superRefine((v, ctx) => {
  // A pooler or a direct URL only means something beside a DATABASE_URL (unset: an embedded PostgreSQL, no pooler).
  if (!v.DATABASE_URL && v.DATABASE_POOL_MODE === 'transaction') ctx.addIssue({ code: 'custom', path: ['DATABASE_POOL_MODE'], message: 'transaction needs DATABASE_URL set to the pooler' });
  if (!v.DATABASE_URL && v.DIRECT_DATABASE_URL) ctx.addIssue({ code: 'custom', path: ['DIRECT_DATABASE_URL'], message: 'needs DATABASE_URL set too (the embedded PostgreSQL has no pooler in front)' });
});

export type Env = z.infer<typeof envSchema>;

/**
 * Variables whose value is safe to repeat in an error (a port, a count, a level). Every
 * other one (AUTH_SECRET, DATABASE_URL, SMTP_URL with their passwords, and anything added
 * later) is named with its problem, never echoed: start-up errors end up in logs.
 */
const ECHOED: ReadonlySet<string> = new Set([
  'NODE_ENV',
  'PORT',
  'EMBEDDED_PG_PORT',
  'EMBEDDED_PG_DIR',
  'DATABASE_CONNECT_TIMEOUT_SECONDS',
  'DATABASE_QUERY_TIMEOUT_SECONDS',
  'DATABASE_POOL_MODE',
  'SHUTDOWN_SECONDS',
  'WORKERS',
  'WORKER_CONCURRENCY',
  'WORKER_POLL_MS',
  'LEASE_SECONDS',
  'SEND_TIMEOUT_SECONDS',
  'STUCK_GRACE_SECONDS',
  'EVENT_MAX_ATTEMPTS',
  'SEED_DEMO',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'WORKER_METRICS_PORT',
  'METRICS_HOST',
  'PUBLIC_URL',
  'TRUSTED_PROXIES',
  'RATE_LIMIT_PER_KEY',
  'RATE_LIMIT_PER_SESSION',
  'RATE_LIMIT_PER_ADDRESS',
  'WEBHOOK_ALLOWED_HOSTS',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_RETRY_SCHEDULE',
  'WEBHOOK_CONCURRENCY',
  'WEBHOOK_STUCK_CHECK_SECONDS',
  'RETENTION_DAYS',
  'AUDIT_RETENTION_DAYS',
]);

function shown(name: string, value: string | undefined): string {
  if (value === undefined) return 'unset';
  return ECHOED.has(name) ? `got ${JSON.stringify(value)}` : `value not shown: it may hold a secret (${value.length} characters)`;
}

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
      (issue) => `  ${issue.path.join('.')}: ${issue.message} (${shown(String(issue.path[0]), cleaned[String(issue.path[0])])})`,
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

/**
 * The URL for what needs a session of its own (LISTEN, migrations: their advisory lock is
 * the session's): DIRECT_DATABASE_URL, else DATABASE_URL unless that is a transaction-mode
 * pooler (then undefined: the caller polls, or says what to set).
 */
export function sessionDatabaseUrl(config: Pick<Env, 'DATABASE_URL' | 'DIRECT_DATABASE_URL' | 'DATABASE_POOL_MODE'> = env()): string | undefined {
  if (config.DIRECT_DATABASE_URL) return config.DIRECT_DATABASE_URL;
  return config.DATABASE_POOL_MODE === 'transaction' ? undefined : config.DATABASE_URL;
}
