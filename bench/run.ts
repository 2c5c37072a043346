import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { adminQuery, openProductDatabase, redactUrl, stopEmbeddedPostgres } from '../scripts/database';
import { closeDb, createDb } from '../server/db';
import { withDatabase } from '../server/embedded-postgres';
import { parseEnv } from '../server/env';
import { migrate } from '../server/migrator';
import { stepsChart } from './chart';
import { consolePhase } from './console';
import { diagnosisPhase } from './diagnosis';
import { enrollPhase } from './enroll';
import { eventsPhase } from './events';
import { httpPhase } from './http';
import { pgbouncerPhase } from './pgbouncer';
import { printTable } from './report';
import { retentionPhase } from './retention';
import { stepsPhase } from './steps';
import { assertInvariants, progress, ROOT, uniqueName, type BenchContext } from './support';
import { waitsPhase } from './waits';

// `npm run bench [-- --quick] [-- --only steps,console]`: the engine side by side with
// raw SQL and graphile-worker, on a database of its own (created here, dropped after),
// on DATABASE_URL's server or the embedded one. Results: bench/results/latest.json, one
// line more in history.jsonl, and steps.svg. Not part of `npm test`: nothing here is an
// assertion on time; what fails the run is an invariant violation or a phase's error.

const PHASES = ['enroll', 'steps', 'pgbouncer', 'diagnosis', 'waits', 'events', 'console', 'http', 'retention'] as const;
type Phase = (typeof PHASES)[number];

function parseArgs(argv: string[]): { quick: boolean; keep: boolean; only: Phase[] } {
  const quick = argv.includes('--quick');
  // --keep: the bench's database is left in place (its name is printed), to EXPLAIN by hand.
  const keep = argv.includes('--keep');
  const i = argv.indexOf('--only');
  let only: Phase[] = [...PHASES];
  if (i !== -1) {
    const names = (argv[i + 1] ?? '').split(',').filter(Boolean);
    const unknown = names.filter((n) => !(PHASES as readonly string[]).includes(n));
    if (names.length === 0 || unknown.length > 0) {
      throw new Error(`--only takes a comma-separated list of ${PHASES.join(', ')}${unknown.length ? ` (not: ${unknown.join(', ')})` : ''}`);
    }
    only = names as Phase[];
  }
  for (const arg of argv) {
    if (arg.startsWith('--') && !['--quick', '--keep', '--only'].includes(arg)) throw new Error(`unknown option ${arg} (use --quick, --keep, --only PHASES)`);
  }
  return { quick, keep, only };
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const env = parseEnv();
  const product = await openProductDatabase(env, (line) => progress('setup', line));
  const name = uniqueName('waypost_bench');
  const url = withDatabase(product.url, name);
  let ctx: BenchContext | null = null;
  const t0 = Date.now();
  // Ctrl-C or a kill: the bench's database goes with it (its workers share the terminal's
  // process group and get the same signal; WITH (FORCE) closes whatever they left open).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress('cleanup', `${signal}: dropping ${name}`);
      void adminQuery(product.url, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
        .catch(() => {})
        .finally(async () => {
          if (product.embedded) await stopEmbeddedPostgres(product.embedded);
          process.exit(130);
        });
    });
  }
  try {
    progress('setup', `creating database ${name} on ${redactUrl(product.url).replace(/\/[^/]*$/, '')}`);
    await adminQuery(product.url, `CREATE DATABASE "${name}"`);
    await migrate(url);
    const db = createDb(url, { poolSize: 10, applicationName: 'waypost-bench' });
    const pool = new pg.Pool({ connectionString: url, max: 4, application_name: 'waypost-bench-harness' });
    pool.on('error', () => {});
    ctx = { options: { quick: args.quick }, url, db, pool, results: {} };
    const { rows } = await pool.query<{ v: string }>('SELECT current_setting(\'server_version\') AS v');
    const dirty = git(['status', '--porcelain']) !== '';
    const machine = {
      cores: os.cpus().length,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      postgres: rows[0]!.v,
      database: product.embedded ? 'embedded' : 'DATABASE_URL',
      node: process.version,
      commit: `${git(['rev-parse', '--short', 'HEAD'])}${dirty ? '+dirty' : ''}`,
      at: new Date().toISOString(),
      mode: args.quick ? 'quick' : 'full',
    };
    progress('setup', `${machine.cores} cores, ${machine.memoryGb} GB, PostgreSQL ${machine.postgres}, commit ${machine.commit}, ${machine.mode}`);
    const project = await db.project.create({ data: { name: 'bench' } });
    const results: Record<string, unknown> = { machine };

    for (const phase of args.only) {
      const started = Date.now();
      progress(phase, 'starting');
      switch (phase) {
        case 'enroll':
          results.enroll = await enrollPhase(ctx, project.id);
          break;
        case 'steps':
          results.steps = await stepsPhase(ctx, project.id);
          break;
        case 'pgbouncer':
          results.pgbouncer = await pgbouncerPhase(ctx, project.id);
          break;
        case 'diagnosis':
          results.diagnosis = await diagnosisPhase(ctx, project.id);
          break;
        case 'waits':
          results.waits = await waitsPhase(ctx, project.id);
          break;
        case 'events':
          results.events = await eventsPhase(ctx, project.id);
          break;
        case 'http':
          results.http = await httpPhase(ctx, project.id, results.enroll);
          break;
        case 'console':
          results.console = await consolePhase(ctx);
          break;
        case 'retention':
          results.retention = await retentionPhase(ctx);
          break;
      }
      await assertInvariants(db, phase);
      progress(phase, `done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    results.seconds = Math.round((Date.now() - t0) / 1000);

    const dir = path.join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    appendFileSync(path.join(dir, 'history.jsonl'), `${JSON.stringify(results)}\n`);
    if (results.steps) writeFileSync(path.join(dir, 'steps.svg'), stepsChart(results.steps as never, machine));
    process.stdout.write(printTable(results));
    progress('done', `bench/results/latest.json, history.jsonl${results.steps ? ', steps.svg' : ''} written; ${results.seconds} s in all`);
  } finally {
    if (ctx) {
      await closeDb(ctx.db);
      await ctx.pool.end();
    }
    if (args.keep) {
      progress('cleanup', `--keep: the database ${name} is left in place (DROP DATABASE "${name}" when done)`);
    } else {
      await adminQuery(product.url, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch((error) =>
        progress('cleanup', `could not drop ${name}: ${String(error)}`),
      );
    }
    if (product.embedded) await stopEmbeddedPostgres(product.embedded);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
