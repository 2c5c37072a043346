import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { closeDb, createDb, databaseWaitBounds } from '../server/db';
import { databaseUrl, env, EnvError, sessionDatabaseUrl } from '../server/env';
import { metricsListener } from '../server/http/metrics';
import { captureConsole, configureLogging, log as logger, logFormat, type LogFields } from '../server/log';
import { createEngineContext, type EngineContext } from '../server/engine/context';
import { withDrillFaults } from '../server/engine/fault-transport';
import { logTransport, smtpTransport, transportTimeoutMs, type MailTransport } from '../server/engine/transport';
import { WAKEUP_CHANNEL } from '../server/engine/wakeup';
import { Worker } from '../server/engine/worker';
import { RetentionSweeper } from '../server/retention/sweeper';
import { dispatcherSettings, WebhookDispatcher } from '../server/webhooks/dispatcher';
import { StuckNotifier } from '../server/webhooks/stuck-notices';

// `npm run worker -- --concurrency N`: one worker process (server/engine/worker.ts is the
// loop), any number of them on any number of machines against one PostgreSQL. It listens
// for NOTIFY on a dedicated connection (DIRECT_DATABASE_URL when set: LISTEN needs a
// session, which a transaction-mode pooler does not give; behind one without it, the worker
// polls every WORKER_POLL_MS and says so once), logs one JSON line per event, and drains on
// SIGTERM: the pass in flight finishes, then the process exits.

/** The worker's text line: one JSON-like object, `at`, `level`, `worker`, `message`, then the fields (an `err` as `error`). */
function workerLine(owner: string, level: string, message: string, fields: LogFields | undefined): string {
  const { err, ...rest } = fields ?? {};
  const error = err === undefined ? {} : { error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  return JSON.stringify({ at: new Date().toISOString(), level, worker: owner, message, ...rest, ...error });
}

function parseArgs(argv: string[]): { concurrency?: number } {
  const i = argv.indexOf('--concurrency');
  if (i === -1) return {};
  const value = Number(argv[i + 1]);
  if (!Number.isInteger(value) || value < 1 || value > 256) {
    throw new EnvError('--concurrency must be an integer from 1 to 256');
  }
  return { concurrency: value };
}

async function main(): Promise<void> {
  const config = env();
  const args = parseArgs(process.argv.slice(2));
  const concurrency = args.concurrency ?? config.WORKER_CONCURRENCY;
  const owner = `worker:${hostname()}:${process.pid}`;
  // LOG_FORMAT=text: the worker's one JSON-like line per event, as always; json: pino's (server/log.ts).
  configureLogging({ role: 'worker', fields: { worker: owner }, textLine: (level, message, fields) => workerLine(owner, level, message, fields) });
  captureConsole();
  const log: EngineContext['log'] = (level, message, fields) => logger[level](message, fields);
  // Its own metrics listener (server/http/metrics.ts), before any work: a port it cannot have stops it here.
  const metricsAt = config.WORKER_METRICS_PORT ? `${config.METRICS_HOST}:${config.WORKER_METRICS_PORT}` : null;
  if (config.WORKER_METRICS_PORT && !config.METRICS_TOKEN) {
    throw new EnvError('WORKER_METRICS_PORT is set but METRICS_TOKEN is not: the metrics listener answers only with the token, so set METRICS_TOKEN too (at least 16 characters), or unset WORKER_METRICS_PORT.');
  }
  const metricsServer = config.WORKER_METRICS_PORT && config.METRICS_TOKEN
    ? await metricsListener({ port: config.WORKER_METRICS_PORT, host: config.METRICS_HOST, token: config.METRICS_TOKEN })
    : null;
  const url = databaseUrl();
  const db = createDb(url, {
    poolSize: concurrency + 2,
    applicationName: 'waypost-worker',
    ...databaseWaitBounds(),
    // One line per idle connection dropped would repeat the loop's own line about the outage.
    onError: (error) => log('debug', 'idle database connection lost; reconnecting on next use', { error: error.message }),
  });
  const configured: MailTransport = config.SMTP_URL
    ? smtpTransport(config.SMTP_URL, { timeoutMs: transportTimeoutMs(config.LEASE_SECONDS) })
    : logTransport((line) => log('info', line));
  // Drills only (npm run drill): a provider that fails or hangs on cue, with a ledger.
  const transport = withDrillFaults(configured);
  const ctx = createEngineContext(db, {
    owner,
    transport,
    log,
    config: {
      leaseSeconds: config.LEASE_SECONDS,
      sendTimeoutSeconds: config.SEND_TIMEOUT_SECONDS,
      eventMaxAttempts: config.EVENT_MAX_ATTEMPTS,
    },
  });
  const worker = new Worker(ctx, { concurrency, from: config.MAIL_FROM, pollMs: config.WORKER_POLL_MS });
  // Outgoing webhooks (docs/webhooks.md): their own timers and their own two connections,
  // so an endpoint that is slow to answer holds neither a step slot nor the engine's pool.
  const webhookDb = createDb(url, {
    poolSize: 2,
    applicationName: 'waypost-webhooks',
    ...databaseWaitBounds(),
    onError: (error) => log('debug', 'idle webhook database connection lost; reconnecting on next use', { error: error.message }),
  });
  const dispatcher = new WebhookDispatcher(webhookDb, { owner, log, ...dispatcherSettings(config) });
  const stuckNotifier = new StuckNotifier(webhookDb, {
    graceSeconds: config.STUCK_GRACE_SECONDS,
    everyMs: config.WEBHOOK_STUCK_CHECK_SECONDS * 1000,
    log,
  });

  // Retention (docs/deploy.md, "Retention"), when RETENTION_DAYS or AUDIT_RETENTION_DAYS is
  // set: one sweep of each kind at a time across every worker, on a connection of its own.
  const retentionDb = config.RETENTION_DAYS > 0 || config.AUDIT_RETENTION_DAYS > 0
    ? createDb(url, {
        poolSize: 1,
        applicationName: 'waypost-retention',
        ...databaseWaitBounds(),
        onError: (error) => log('debug', 'idle retention database connection lost; reconnecting on next use', { error: error.message }),
      })
    : null;
  const sweeper = retentionDb
    ? new RetentionSweeper(retentionDb, {
        owner,
        historyDays: config.RETENTION_DAYS,
        auditDays: config.AUDIT_RETENTION_DAYS,
        graceSeconds: config.STUCK_GRACE_SECONDS,
        log,
      })
    : null;
  if (sweeper) log('info', 'retention on', { retentionDays: config.RETENTION_DAYS || 'off', auditRetentionDays: config.AUDIT_RETENTION_DAYS || 'off' });

  // LISTEN on a dedicated connection. If it drops (PostgreSQL restarted), polling still
  // finds the work, and the listener comes back with a backoff.
  const listenUrl = sessionDatabaseUrl(config);
  let stopping = false;
  let listener: pg.Client | null = null;
  let listenerRetry: NodeJS.Timeout | null = null;
  const listen = async (attempt: number): Promise<void> => {
    const client = new pg.Client({
      connectionString: listenUrl,
      application_name: 'waypost-worker-listen',
      // A partition must fail the attempt, not hang it: the next one is scheduled from here.
      connectionTimeoutMillis: databaseWaitBounds().connectTimeoutMs,
      keepAlive: true,
    });
    client.on('notification', () => worker.poke());
    const retry = (error: unknown) => {
      if (listener !== client || stopping) return;
      listener = null;
      // Once per loss, not once per reconnection attempt.
      if (attempt === 0) log('warn', 'wake-up listener lost; polling until it is back', { error: String(error) });
      listenerRetry = setTimeout(() => void listen(attempt + 1), Math.min(10_000, 1000 * 2 ** attempt));
    };
    client.on('error', retry);
    client.on('end', () => retry('connection ended'));
    listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${WAKEUP_CHANNEL}`);
      if (attempt > 0) log('info', 'wake-up listener back');
      attempt = 0;
      // Work may have been queued while nobody listened.
      worker.poke();
    } catch (error) {
      retry(error);
    }
  };
  if (listenUrl) await listen(0);
  else {
    log('warn', `no wake-up listener: DATABASE_POOL_MODE=transaction and DIRECT_DATABASE_URL is unset (LISTEN needs a session of its own); polling every ${config.WORKER_POLL_MS} ms instead`);
  }

  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('info', `${signal}: draining`);
    if (listenerRetry) clearTimeout(listenerRetry);
    const closing = listener;
    listener = null;
    // The bound: steps still held then are left to their leases (LEASE_SECONDS), which
    // another worker takes over when they lapse; an email whose send was in flight is
    // listed MESSAGE_UNCONFIRMED, never resent by itself.
    const bound = setTimeout(() => {
      log('error', `drain did not finish within SHUTDOWN_SECONDS (${config.SHUTDOWN_SECONDS} s): exiting; held steps go to another worker when their leases lapse`);
      process.exit(1);
    }, config.SHUTDOWN_SECONDS * 1000);
    bound.unref();
    try {
      await Promise.all([worker.stop(), dispatcher.stop(), stuckNotifier.stop(), sweeper?.stop()]);
    } catch (error) {
      // The loop catches its own failures, so this is a bug: say so, and say it in the exit code.
      log('error', 'drain failed', { error: String(error) });
      process.exit(1);
    }
    // The drain is done and every claimed step finished: closing connections that the
    // database may already have dropped is not a failed shutdown.
    await closing?.end().catch(() => {});
    transport.close?.();
    await closeDb(db).catch((error) => log('warn', 'closing database connections failed', { error: String(error) }));
    await closeDb(webhookDb).catch((error) => log('warn', 'closing webhook database connections failed', { error: String(error) }));
    if (retentionDb) await closeDb(retentionDb).catch((error) => log('warn', 'closing the retention connection failed', { error: String(error) }));
    metricsServer?.close();
    log('info', 'stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  worker.start();
  dispatcher.start();
  stuckNotifier.start();
  sweeper?.start();
  log('info', 'worker started', { concurrency, transport: transport.name, webhookConcurrency: config.WEBHOOK_CONCURRENCY, ...(metricsAt ? { metrics: metricsAt } : {}) });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    if (error instanceof EnvError) {
      process.stderr.write(`${error.message}\n`);
    } else if (logFormat() === 'json') {
      logger.error('worker failed to start', { err: error });
    } else {
      process.stderr.write(`worker failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    process.exit(1);
  });
}
