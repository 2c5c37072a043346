import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBuild } from '../scripts/build';
import type { FaultKind } from './schedule';

// Shows that the drill's faults matter: for each guard below, remove it, run the quick
// drill, and expect it to report a violation (exit 1); then restore the code. As
// scripts/guard-mutations.ts does for the race suite.
//
//   npm run drill:mutations [-- NAME]      (NAME: a part of a guard's text)
//
// Each drill runs its guard's fault alone (`--only FAULT`, three times over the run), so a
// violation is that fault's doing. A guard in the workers' code (run from source) has its
// file's modification time put back after each edit, so the web server's production build
// is not remade for a change it does not run; a guard in the web tier (`webTier`) leaves
// the build stale, so the drill builds the mutant, and the build is made again from the
// restored code afterwards. Exits non-zero if a drill passes with its guard removed.

const ROOT = path.resolve(import.meta.dirname, '..');

interface Mutation {
  guard: string;
  /** The fault that makes the guard matter, and what it does. */
  only: FaultKind;
  fault: string;
  /** The guard is in the web server's code: the drill must build the mutant. */
  webTier?: boolean;
  edits: { file: string; find: string; replace: string }[];
}

// (advanceExecution's version fence, removed, was caught in one quick run of three: the
// stale writer needs a worker stalled past its lease at the right moment, which the
// drill's pause and pool exhaustion give only sometimes. The race suite proves that guard.)
const MUTATIONS: Mutation[] = [
  {
    guard: 'a sender claims only QUEUED emails, never one another sender holds (I5, at most once)',
    only: 'mail-hang',
    fault: 'half the senders held past their lease while the other half is free to take their emails',
    edits: [
      {
        file: 'server/engine/claims/outbox.ts',
        find: `       SELECT id FROM "Message" WHERE status = 'QUEUED'
        ORDER BY "createdAt" LIMIT \${opts.limit}::int
        FOR UPDATE SKIP LOCKED)
       AND status = 'QUEUED'`,
        replace: `       SELECT id FROM "Message" WHERE status = 'QUEUED' OR (status = 'SENDING' AND "leaseExpiresAt" < now())
        ORDER BY "createdAt" LIMIT \${opts.limit}::int
        FOR UPDATE SKIP LOCKED)`,
      },
    ],
  },
  {
    guard: 'a step whose lease ran out is re-claimed by another worker',
    only: 'worker-kill',
    fault: 'a SIGKILLed worker leaves its claimed steps RUNNING',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `       WHERE s.status IN ('PENDING', 'FAILED') OR (s.status = 'RUNNING' AND s."leaseExpiresAt" < now())`,
        replace: `       WHERE s.status IN ('PENDING', 'FAILED')`,
      },
    ],
  },
  {
    guard: 'a worker pass that meets an unreachable database backs off and tries again, instead of ending the worker',
    only: 'postgres-restart',
    fault: 'an immediate shutdown drops every connection, and new ones are refused until crash recovery ends',
    edits: [
      {
        file: 'server/engine/worker.ts',
        find: `        failures++;
        if (!databaseUnavailable(error)) {`,
        replace: `        if (databaseUnavailable(error)) throw error;
        failures++;
        if (!databaseUnavailable(error)) {`,
      },
    ],
  },
  {
    guard: 'a full server (too many clients, 53300) is an outage: the API answers 503 with Retry-After, not 500',
    only: 'pool-exhaust',
    fault: 'every connection slot taken, so a request that needs a new connection is refused one',
    webTier: true,
    edits: [
      { file: 'server/database-unavailable.ts', find: `|57P03|53300)$/;`, replace: `|57P03)$/;` },
      { file: 'server/database-unavailable.ts', find: `'SocketTimeout', 'TooManyConnections']`, replace: `'SocketTimeout']` },
    ],
  },
  {
    guard: 'an event whose dispatcher died mid-dispatch is dispatched again once its lease runs out',
    only: 'web-kill',
    fault: 'the web server SIGKILLed under load, with events it stored and was dispatching inline',
    edits: [
      {
        file: 'server/engine/claims/outbox.ts',
        find: `        WHERE "processedAt" IS NULL AND "deadAt" IS NULL AND "nextDispatchAt" <= now()
          AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())`,
        replace: `        WHERE "processedAt" IS NULL AND "deadAt" IS NULL AND "nextDispatchAt" <= now()
          AND "leaseExpiresAt" IS NULL`,
      },
    ],
  },
  {
    guard: 'a completion is fenced by its claim (version, status, step, claim token): a stale writer loses (I6)',
    only: 'worker-pause',
    fault: 'a worker stopped past its lease while it holds claimed steps, which others take and finish, then continued',
    edits: [
      {
        file: 'server/engine/claims/fragments.ts',
        find: `  return Prisma.sql\`e.id = \${claim.executionId} AND e.version = \${claim.version}
         AND e.status = 'RUNNING' AND e."currentStepId" = \${claim.stepId}
         AND EXISTS (SELECT 1 FROM "StepExecution" s WHERE \${stepStillClaimed(claim, opts)})\`;`,
        replace: `  void opts;
  return Prisma.sql\`e.id = \${claim.executionId}\`;`,
      },
    ],
  },
  {
    guard: 'a send the provider refused is recorded FAILED, never SENT',
    only: 'mail-fail',
    fault: 'the mail provider refusing every send for 6 s',
    edits: [
      {
        file: 'server/engine/sender.ts',
        find: `        return { messageId: message.id, version: message.version, error: text };`,
        replace: `        return { messageId: message.id, version: message.version, providerId: null };`,
      },
    ],
  },
];

function applyEdits(m: Mutation): Map<string, { text: string; mtime: Date; atime: Date }> {
  const originals = new Map<string, { text: string; mtime: Date; atime: Date }>();
  for (const edit of m.edits) {
    const file = path.join(ROOT, edit.file);
    if (!originals.has(file)) {
      const st = statSync(file);
      originals.set(file, { text: readFileSync(file, 'utf8'), mtime: st.mtime, atime: st.atime });
    }
    const current = readFileSync(file, 'utf8');
    if (!current.includes(edit.find)) throw new Error(`guard text not found in ${edit.file} (the mutation is out of date):\n${edit.find}`);
    writeFileSync(file, current.split(edit.find).join(edit.replace));
    const o = originals.get(file)!;
    if (!m.webTier) utimesSync(file, o.atime, o.mtime);
  }
  return originals;
}

function restore(m: Mutation, originals: Map<string, { text: string; mtime: Date; atime: Date }>): void {
  for (const [file, o] of originals) {
    writeFileSync(file, o.text);
    // A web-tier file keeps its new time: the mutant's build is stale, and is remade below.
    if (!m.webTier) utimesSync(file, o.atime, o.mtime);
  }
  if (m.webTier) ensureBuild((line) => console.log(`        (build from the restored code: ${line})`));
}

const only = process.argv[2];
const selected = only ? MUTATIONS.filter((m) => m.guard.includes(only) || m.only === only || m.fault.includes(only)) : MUTATIONS;
let missed = 0;
for (const m of selected) {
  const originals = applyEdits(m);
  const results = mkdtempSync(path.join(os.tmpdir(), 'waypost-drill-mutation-'));
  const started = Date.now();
  let code: number | null;
  let violations: { check: string; count: number }[] = [];
  let faultNotes: string[] = [];
  try {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'drill/run.ts', '--quick', '--only', m.only, '--results', results], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], timeout: 600_000 });
    code = run.status;
    try {
      const report = JSON.parse(readFileSync(path.join(results, 'latest.json'), 'utf8')) as { violations: typeof violations; faults: { log: { kind: string; note: string }[] } };
      violations = report.violations;
      faultNotes = report.faults.log.filter((f) => f.kind !== 'worker-kill' || m.only === 'worker-kill').map((f) => `${f.kind}: ${f.note}`);
    } catch {
      // no report: the drill failed before its checks (exit 2)
    }
  } finally {
    restore(m, originals);
    rmSync(results, { recursive: true, force: true });
  }
  const caught = code === 1 && violations.length > 0;
  if (!caught) missed++;
  console.log(`${caught ? 'caught' : 'MISSED'}  ${m.guard}  [${m.only} alone: ${m.fault}; exit ${code}, ${Math.round((Date.now() - started) / 1000)} s]`);
  for (const v of violations) console.log(`        violation: ${v.check}: ${v.count}`);
  if (!caught) for (const n of faultNotes) console.log(`        (fault ${n})`);
}
console.log(`${selected.length - missed} caught, ${missed} missed`);
process.exit(missed === 0 ? 0 : 1);
