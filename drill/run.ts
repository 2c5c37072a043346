import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureBuild } from '../scripts/build';
import { adminQuery, redactUrl } from '../scripts/database';
import { startPgBouncer, type PgBouncer } from '../scripts/pgbouncer';
import { createApiKey } from '../server/auth/admin';
import { closeDb, createDb, type Db } from '../server/db';
import { withDatabase } from '../server/embedded-postgres';
import { createWorkflow } from '../server/engine/workflows';
import { migrate } from '../server/migrator';
import { Api, ClientLog } from './api';
import { runChecks, type Violation } from './checks';
import { alive, Cluster, OwnedPostgres, portInRange, ROOT } from './cluster';
import { runSchedule, SLOW_STEP_TYPE, type FaultRecord } from './faults';
import { describeFault, FAULT_KINDS, faultSchedule, Rng, type FaultKind } from './schedule';
import { readLedger, settle } from './settle';
import type { LimitProbe } from './limit-probe';
import { keyPerClient, measureSharedLimit, PRODUCTION, SINGLE, topologyViolations } from './topology';
import { journeyWorkflow, nurtureWorkflow, runClients, signupWorkflow } from './workload';

// `npm run drill [-- --duration 120] [-- --quick] [-- --seed N] [-- --pgbouncer] [-- --topology]`: a Jepsen-style fault
// drill. On its own PostgreSQL (embedded, which it may crash and restart) or on
// DRILL_DATABASE_URL's server (a database of its own, dropped after), it runs the real
// web server and 4 worker processes, streams enrollments, events and operators' repairs
// through the HTTP API while injecting the faults of a schedule it prints first, lets
// everything settle (repairing what is left for a person), and checks from the database,
// the mail provider's ledger and the log of what every client was told that nothing
// accepted was lost or done twice. Report: drill/results/latest.json (and clients.jsonl,
// the clients' log). Exits 1 on any violation. With --pgbouncer, the web server and the
// workers reach PostgreSQL through PgBouncer in transaction mode (scripts/pgbouncer.ts,
// DATABASE_POOL_MODE=transaction, DIRECT_DATABASE_URL for the workers' LISTEN); the drill's
// own checks and faults go to PostgreSQL directly. `--topology` runs the production topology
// (drill/topology.ts): 2 web processes behind a balancer, 3 workers, through PgBouncer.

const LEASE_SECONDS = 4;
const PORTS = { from: 3300, to: 3399 };

interface Args {
  duration: number;
  quick: boolean;
  seed: number;
  /** Where latest.json and clients.jsonl go (the quick drill in npm test writes elsewhere). */
  results: string;
  /** One kind of fault alone, three times (drill/guard-mutations.ts): which fault a guard answers. */
  only?: FaultKind;
  /** The web server and the workers through PgBouncer in transaction mode. */
  pgbouncer: boolean;
  /** The production topology (drill/topology.ts): 2 web processes behind a balancer, 3 workers, PgBouncer. */
  topology: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { duration: 120, quick: false, seed: 1, results: path.join(ROOT, 'drill', 'results'), pgbouncer: false, topology: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) throw new Error(`${a} takes a whole number`);
      return v;
    };
    if (a === '--quick') args.quick = true;
    else if (a === '--pgbouncer') args.pgbouncer = true;
    else if (a === '--topology') args.topology = args.pgbouncer = true;
    else if (a === '--duration') args.duration = value();
    else if (a === '--seed') args.seed = value();
    else if (a === '--results' && argv[i + 1]) args.results = path.resolve(argv[++i]!);
    else if (a === '--only') {
      const kind = argv[++i];
      if (!FAULT_KINDS.includes(kind as FaultKind)) throw new Error(`--only takes one of ${FAULT_KINDS.join(', ')}`);
      args.only = kind as FaultKind;
    } else throw new Error(`unknown option ${a} (use --duration SECONDS, --quick, --seed N, --results DIR, --only FAULT, --pgbouncer, --topology)`);
  }
  if (args.quick && !argv.includes('--duration')) args.duration = 60;
  if (args.duration < 45) throw new Error('--duration is at least 45 seconds (the schedule needs room for every fault)');
  return args;
}

const t0 = Date.now();
function progress(phase: string, line: string): void {
  process.stderr.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${phase.padEnd(8)} ${line}\n`);
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function tally<T>(items: T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'waypost-drill-'));
  // As root, PostgreSQL runs as the postgres user, who must reach its data directory in here.
  chmodSync(tmp, 0o711);
  const mailControl = path.join(tmp, 'mail-control');
  const ledgerFile = path.join(tmp, 'mail-ledger.jsonl');
  writeFileSync(mailControl, 'ok');
  writeFileSync(ledgerFile, '');
  const taken = new Set<number>();

  let postgres: OwnedPostgres | null = null;
  let serverUrl: string;
  const external = process.env.DRILL_DATABASE_URL;
  if (external) {
    serverUrl = external;
    progress('setup', `DRILL_DATABASE_URL: ${redactUrl(external)} (not owned: no PostgreSQL restart, the pool is exhausted with table locks)`);
  } else {
    const port = await portInRange(PORTS.from, PORTS.to, taken);
    taken.add(port);
    progress('setup', `starting the drill's own embedded PostgreSQL on port ${port} (${tmp})`);
    try {
      postgres = await OwnedPostgres.start(path.join(tmp, 'pg'), port, (line) => progress('postgres', line));
    } catch (error) {
      rmSync(tmp, { recursive: true, force: true });
      throw error;
    }
    serverUrl = postgres.server.url;
  }
  const dbName = `waypost_drill_${randomBytes(3).toString('hex')}_${Date.now().toString(36)}`;
  const url = withDatabase(serverUrl, dbName);
  let cluster: Cluster | null = null;
  let bouncer: PgBouncer | null = null;
  let db: Db | null = null;
  let pool: pg.Pool | null = null;
  const cleanup = async () => {
    await cluster?.stop().catch(() => {});
    await bouncer?.stop().catch(() => {});
    await pool?.end().catch(() => {});
    if (db) await closeDb(db).catch(() => {});
    if (postgres) await postgres.stop().catch(() => {});
    else await adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress('cleanup', `${signal}: stopping everything the drill started`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    await adminQuery(serverUrl, `CREATE DATABASE "${dbName}"`);
    await migrate(url);
    db = createDb(url, { poolSize: 4, applicationName: 'waypost-drill' });
    pool = new pg.Pool({ connectionString: url, max: 3, application_name: 'waypost-drill-checks' });
    pool.on('error', () => {});

    const project = await db.project.create({ data: { name: 'drill' } });
    const marketerKey = await createApiKey(db, { projectId: project.id, name: 'drill marketer', role: 'MARKETER', actor: 'system:drill' });
    const operatorKey = await createApiKey(db, { projectId: project.id, name: 'drill operator', role: 'OPERATOR', actor: 'system:drill' });
    const workflows = {
      journey: (await createWorkflow(db, project.id, journeyWorkflow())).id,
      nurture: (await createWorkflow(db, project.id, nurtureWorkflow())).id,
      signup: (await createWorkflow(db, project.id, signupWorkflow())).id,
    };

    // The product's processes reach the database here: PostgreSQL, or PgBouncer in front of it.
    let productUrl = url;
    const pooled: Record<string, string> = {};
    if (args.pgbouncer) {
      // Its warnings, but not what the faults cause by design (server connections ended, a full or restarting server).
      const log = (line: string) => {
        if (/ (WARNING|ERROR|FATAL) /.test(line) && !/when not linked|server conn crashed|does not exist anymore|too many clients|server_login_retry|administrator command|invalid server parameter|starting up|shutting down/.test(line)) progress('pgbouncer', line);
      };
      bouncer = await startPgBouncer({ upstream: url, defaultPoolSize: 20, log });
      productUrl = bouncer.url(dbName);
      Object.assign(pooled, { DATABASE_POOL_MODE: 'transaction', DIRECT_DATABASE_URL: url });
      progress('setup', `PgBouncer in transaction mode on port ${bouncer.port} (20 server connections) in front of the drill's database`);
    }

    ensureBuild((line) => progress('build', line));
    const topology = args.topology ? PRODUCTION : SINGLE;
    const WORKERS = topology.workers;
    const webPorts: number[] = [];
    for (let i = 0; i < topology.webs; i++) {
      const port = await portInRange(PORTS.from, PORTS.to, taken);
      taken.add(port);
      webPorts.push(port);
    }
    cluster = new Cluster({
      databaseUrl: productUrl,
      webPorts,
      workers: WORKERS,
      perKeyLimit: topology.perKeyLimit,
      log: (line) => progress('cluster', line),
      env: {
        LEASE_SECONDS: String(LEASE_SECONDS),
        STUCK_GRACE_SECONDS: '5',
        EVENT_MAX_ATTEMPTS: '4',
        WORKER_CONCURRENCY: '8',
        LOG_LEVEL: 'warn',
        SEED_DEMO: '0',
        WAYPOST_FAULT_MAIL_CONTROL: mailControl,
        WAYPOST_FAULT_MAIL_LEDGER: ledgerFile,
        ...pooled,
      },
      // The worker the schedule pauses is slow at one step (as a step calling out would
      // be): it holds each claimed DELAY step 300 ms before parking it, so a SIGSTOP finds claims in hand.
      workerEnv: { [WORKERS - 1]: { WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS: '300', WAYPOST_FAULT_PAUSE_STEP_TYPE: SLOW_STEP_TYPE } },
    });
    progress('setup', `web server${webPorts.length > 1 ? 's' : ''} on ${webPorts.join(', ')}, ${WORKERS} workers (lease ${LEASE_SECONDS} s), database ${dbName}${topology.perKeyLimit ? `, RATE_LIMIT_PER_KEY ${topology.perKeyLimit}` : ''}`);
    await cluster.start();

    const faults = faultSchedule({ seed: args.seed, duration: args.duration, workers: WORKERS, leaseSeconds: LEASE_SECONDS, ownsPostgres: postgres !== null, only: args.only });
    process.stderr.write(`\nfault schedule (seed ${args.seed}, ${args.duration} s${args.only ? `, ${args.only} only` : ''}):\n${faults.map((f) => `  ${describeFault(f)}`).join('\n')}\n\n`);

    // The shared limit is measured first, with every process up and no fault under way: a
    // count taken across a PostgreSQL restart or a pool held full would say nothing about it.
    const limitProbe = args.topology ? await measureSharedLimit(db, project.id, cluster, topology, (line) => progress('limits', line)) : null;
    const log = new ClientLog();
    const c = cluster;
    const marketer = new Api(() => c.base, marketerKey.secret);
    const operator = new Api(() => c.base, operatorKey.secret);
    const marketerFor = args.topology ? await keyPerClient(db, project.id, () => c.base) : undefined;
    const start = Date.now();
    const end = start + args.duration * 1000;
    const ticker = setInterval(() => {
      const told = (op: string, t: string) => log.count((e) => e.op.startsWith(op) && e.told === t);
      const enroll = ['enroll', 'enrollMany.row', 'importCsv.row'].reduce((n, op) => n + told(op, 'accepted'), 0);
      progress('run', `${Math.round((Date.now() - start) / 1000)}/${args.duration} s  web up ${c.webs.filter((w) => w && alive(w)).length}  enrollments ${enroll} accepted  events ${told('track', 'accepted')} accepted  repairs ${told('repair', 'accepted')}  errors ${log.count((e) => e.told === 'error')}  workers up ${c.workers.filter((w) => w && alive(w)).length}`);
    }, 5_000);
    const [, records] = await Promise.all([
      runClients({ marketer, marketerFor, operator, log, workflows, rng: new Rng(args.seed), done: () => Date.now() > end, runTag: dbName.slice(-8) }),
      runSchedule(faults, { cluster, postgres, databaseUrl: url, mailControl, log: (line) => progress('fault', line) }, start),
    ]);
    clearInterval(ticker);
    const runSeconds = Math.round((Date.now() - start) / 1000);

    // Settle: every process up and continued, the provider healthy.
    writeFileSync(mailControl, 'ok');
    for (let i = 0; i < WORKERS; i++) {
      const w = cluster.workers[i];
      if (w && alive(w)) w.child.kill('SIGCONT');
      else cluster.startWorker(i);
    }
    progress('settle', 'clients stopped, faults over; letting the workers finish and repairing what they leave');
    const settled = await settle({ pool, operator, log, ledgerFile, maxSeconds: args.quick ? 90 : 150, progress: (line) => progress('settle', line) });
    progress('settle', `${settled.settled ? 'settled' : 'NOT settled'} in ${settled.seconds} s, ${settled.repairs.length} repairs`);

    const { violations, invariants } = await runChecks({ db, pool, log, ledgerFile, repairs: settled.repairs });
    if (!settled.settled) violations.push({ check: 'did not settle in time', count: 1, sample: [settled.left] });
    // The drill restarts a process that dies on its own so the run goes on, but a worker or
    // web server that crashes on a fault it should ride out is a violation, not a footnote.
    if (limitProbe) violations.push(...topologyViolations(limitProbe));
    const crashes = cluster.unexpectedExits;
    if (crashes.length > 0) violations.push({ check: 'process exited by itself (a crash, not a fault the drill injected)', count: crashes.length, sample: crashes.map((e) => ({ name: e.name, code: e.code, signal: e.signal, tail: e.tail.slice(-400) })) });

    const topologyReport = { webs: topology.webs, workers: topology.workers, perKeyLimit: topology.perKeyLimit, requestsByWebProcess: cluster.balancer.sent, limitProbe };
    const report = await buildReport({ pool, args, topology: topologyReport, runSeconds, records, log, settled, violations, invariants, ledgerFile, unexpectedExits: cluster.unexpectedExits, ownsPostgres: postgres !== null, postgresRefusals: postgres?.refusals ?? null });
    if (args.pgbouncer) report.database += ', the product through PgBouncer (transaction mode)';
    const dir = args.results;
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(path.join(dir, 'clients.jsonl'), log.entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
    process.stdout.write(printReport(report));
    progress('done', `${path.relative(ROOT, dir) || dir}/latest.json and clients.jsonl written; ${Math.round((Date.now() - t0) / 1000)} s in all`);
    return violations.length === 0 ? 0 : 1;
  } finally {
    await cleanup();
  }
}

interface Report {
  at: string;
  /** The processes the run had, how the balancer spread the requests, and the shared limit's measure (topology mode). */
  topology: { webs: number; workers: number; perKeyLimit: number; requestsByWebProcess: number[]; limitProbe: LimitProbe | null };
  commit: string;
  seed: number;
  /** Set for a run of one kind of fault alone (--only). */
  only: FaultKind | null;
  durationSeconds: number;
  database: string;
  faults: { byKind: Record<string, { scheduled: number; injected: number }>; log: FaultRecord[] };
  clients: Record<string, Record<string, number>>;
  /** What the clients' errors (unknown outcomes) were: HTTP status or network error. */
  clientErrors: Record<string, number>;
  /** Connections the owned PostgreSQL refused while full, starting or stopping. */
  postgresRefusals: number | null;
  executions: Record<string, number>;
  waits: Record<string, number>;
  /** Step executions on a second or later attempt (a lease that ran out, a retry), by step type. */
  reattempts: Record<string, number>;
  events: Record<string, number>;
  messages: Record<string, number>;
  deliveries: { total: number; messagesDelivered: number };
  settle: { seconds: number; settled: boolean };
  repairs: { total: number; byReasonAndAction: Record<string, number>; byOutcome: Record<string, number> };
  unexpectedExits: { name: string; code: number | null; signal: string | null }[];
  invariants: Record<string, number>;
  violations: Violation[];
}

async function buildReport(o: {
  pool: pg.Pool;
  args: Args;
  topology: Report['topology'];
  runSeconds: number;
  records: FaultRecord[];
  log: ClientLog;
  settled: Awaited<ReturnType<typeof settle>>;
  violations: Violation[];
  invariants: Record<string, number>;
  ledgerFile: string;
  unexpectedExits: Cluster['unexpectedExits'];
  ownsPostgres: boolean;
  postgresRefusals: number | null;
}): Promise<Report> {
  const byKind: Report['faults']['byKind'] = {};
  for (const r of o.records) {
    byKind[r.kind] ??= { scheduled: 0, injected: 0 };
    byKind[r.kind]!.scheduled++;
    if (r.injected) byKind[r.kind]!.injected++;
  }
  const clients: Report['clients'] = {};
  for (const e of o.log.entries) {
    clients[e.op] ??= {};
    clients[e.op]![e.told] = (clients[e.op]![e.told] ?? 0) + 1;
  }
  const count = async (sql: string) => Object.fromEntries((await o.pool.query<{ k: string; n: number }>(sql)).rows.map((r) => [r.k, r.n]));
  const ledger = readLedger(o.ledgerFile);
  const deliveries = [...ledger.values()].reduce((n, v) => n + v.count, 0);
  return {
    at: new Date().toISOString(),
    topology: o.topology,
    commit: git(['rev-parse', '--short', 'HEAD']) + (git(['status', '--porcelain']) ? '+dirty' : ''),
    seed: o.args.seed,
    only: o.args.only ?? null,
    durationSeconds: o.runSeconds,
    database: o.ownsPostgres ? 'embedded (owned)' : 'DRILL_DATABASE_URL',
    faults: { byKind, log: o.records },
    clients,
    clientErrors: tally(o.log.entries.filter((e) => e.told === 'error'), (e) => (e.status ? `HTTP ${e.status}` : (e.code ?? 'network'))),
    postgresRefusals: o.postgresRefusals,
    executions: await count(`SELECT status::text AS k, count(*)::int AS n FROM "WorkflowExecution" GROUP BY 1 ORDER BY 1`),
    waits: await count(`SELECT ws.type || ' ' || coalesce(s."resolvedBy"::text, 'unresolved') AS k, count(*)::int AS n FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId" WHERE ws.type IN ('WAIT_FOR_EVENT', 'DELAY') GROUP BY 1 ORDER BY 1`),
    reattempts: await count(`SELECT ws.type::text AS k, count(*)::int AS n FROM "StepExecution" s JOIN "WorkflowStep" ws ON ws.id = s."stepId" WHERE s.attempt > 1 GROUP BY 1 ORDER BY 1`),
    events: await count(`SELECT CASE WHEN "deadAt" IS NOT NULL THEN 'dead' WHEN "processedAt" IS NOT NULL THEN 'processed' ELSE 'pending' END
                                  || CASE WHEN "dispatchAttempts" > 1 THEN ' after retries' ELSE '' END AS k, count(*)::int AS n FROM "Event" GROUP BY 1 ORDER BY 1`),
    messages: await count(`SELECT status::text AS k, count(*)::int AS n FROM "Message" GROUP BY 1 ORDER BY 1`),
    deliveries: { total: deliveries, messagesDelivered: ledger.size },
    settle: { seconds: o.settled.seconds, settled: o.settled.settled },
    repairs: {
      total: o.settled.repairs.length,
      byReasonAndAction: tally(o.settled.repairs, (r) => `${r.reason} -> ${r.action}`),
      byOutcome: tally(o.settled.repairs, (r) => `${r.told}${r.code ? ` ${r.code}` : ''}`),
    },
    unexpectedExits: o.unexpectedExits.map(({ name, code, signal }) => ({ name, code, signal })),
    invariants: o.invariants,
    violations: o.violations,
  };
}

function printReport(r: Report): string {
  const lines: string[] = [];
  const kv = (o: Record<string, unknown>) => Object.entries(o).map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(', ') || 'none';
  lines.push('', `drill report (seed ${r.seed}, ${r.durationSeconds} s of ${r.only ? `${r.only} faults only` : 'faults'}, ${r.database}, commit ${r.commit})`);
  const t = r.topology;
  lines.push(`  processes:        ${t.webs} web (requests ${t.requestsByWebProcess.join(' / ')}), ${t.workers} workers`);
  if (t.limitProbe) lines.push(`  per-key limit:    ${t.limitProbe.allowed} of ${t.limitProbe.sent} allowed across the web processes (${t.limitProbe.byProcess.map((p) => p.allowed).join(' + ')}), RATE_LIMIT_PER_KEY ${t.limitProbe.configured}: ratio ${t.limitProbe.ratio}`);
  lines.push(`  faults injected:  ${Object.entries(r.faults.byKind).map(([k, v]) => `${k} ${v.injected}/${v.scheduled}`).join(', ')}`);
  lines.push(`  executions:       ${kv(r.executions)}`);
  lines.push(`  waits:            ${kv(r.waits)}`);
  lines.push(`  re-attempts:      ${kv(r.reattempts)}`);
  lines.push(`  events:           ${kv(r.events)}`);
  lines.push(`  messages:         ${kv(r.messages)}; provider deliveries ${r.deliveries.total} of ${r.deliveries.messagesDelivered} emails`);
  lines.push(`  clients told:     ${Object.entries(r.clients).map(([op, t]) => `${op} ${kv(t)}`).join('; ')}`);
  lines.push(`  client errors:    ${kv(r.clientErrors)} (outcome unknown to the client; PostgreSQL refused ${r.postgresRefusals ?? 'n/a'} connections)`);
  lines.push(`  settle:           ${r.settle.settled ? 'settled' : 'NOT settled'} in ${r.settle.seconds} s`);
  lines.push(`  repairs:          ${r.repairs.total} (${kv(r.repairs.byReasonAndAction)}); outcomes ${kv(r.repairs.byOutcome)}`);
  lines.push(`  crashes (not the drill's): ${r.unexpectedExits.length ? r.unexpectedExits.map((e) => `${e.name} ${e.code ?? e.signal}`).join(', ') : 'none'}`);
  lines.push(`  invariants:       ${kv(r.invariants)}`);
  lines.push(`  violations:       ${r.violations.reduce((n, v) => n + v.count, 0)}`);
  for (const v of r.violations) lines.push(`    - ${v.check}: ${v.count}  e.g. ${JSON.stringify(v.sample.slice(0, 2))}`);
  return `${lines.join('\n')}\n`;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`drill failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
