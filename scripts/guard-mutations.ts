import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLAIMS_AND_EVENTS_MUTATIONS } from './guard-mutations/claims-and-events';
import { DELIVERY_AND_DATABASE_MUTATIONS } from './guard-mutations/delivery-and-database';
import { VERSIONS_MUTATIONS } from './guard-mutations/versions';
import { WEBHOOKS_MUTATIONS } from './guard-mutations/webhooks';
import { API_MUTATIONS } from './guard-mutations/api';
import { RETENTION_MUTATIONS } from './guard-mutations/retention';
import type { Mutation } from './guard-mutations/mutation';

// Shows that the race suite can fail: for each guard in the code, remove it, run the
// race scenario that depends on it, and expect that run to FAIL; then restore the code.
// (Guards that are database indexes are proven inside the suite by its control tests.)
//
//   npm run test:mutations            (needs DATABASE_URL or boots an embedded PostgreSQL)
//   npm run test:mutations -- --check (only check that every guard's text is still in its file)
//
// Exits non-zero if any scenario still passes with its guard removed.

const ROOT = path.resolve(import.meta.dirname, '..');


// The mutations, by area, in scripts/guard-mutations/.
const MUTATIONS: Mutation[] = [...DELIVERY_AND_DATABASE_MUTATIONS, ...CLAIMS_AND_EVENTS_MUTATIONS, ...VERSIONS_MUTATIONS, ...WEBHOOKS_MUTATIONS, ...API_MUTATIONS, ...RETENTION_MUTATIONS];

function applyEdits(m: Mutation): Map<string, string> {
  const originals = new Map<string, string>();
  for (const edit of m.edits) {
    const file = path.join(ROOT, edit.file);
    const text = originals.get(file) ?? readFileSync(file, 'utf8');
    if (!originals.has(file)) originals.set(file, text);
    const current = readFileSync(file, 'utf8');
    const count = current.split(edit.find).length - 1;
    if (count === 0) throw new Error(`guard text not found in ${edit.file} (the mutation is out of date):\n${edit.find}`);
    writeFileSync(file, current.split(edit.find).join(edit.replace));
  }
  return originals;
}

function restore(originals: Map<string, string>) {
  for (const [file, text] of originals) writeFileSync(file, text);
}

// `--check`: every mutation's text is still where it says, and nothing runs.
if (process.argv[2] === '--check') {
  const stale = MUTATIONS.flatMap((m) => m.edits.filter((e) => !readFileSync(path.join(ROOT, e.file), 'utf8').includes(e.find)).map((e) => `${m.guard} (${e.file})`));
  for (const line of stale) console.log(`out of date: ${line}`);
  console.log(`${MUTATIONS.length - stale.length} of ${MUTATIONS.length} mutations find their guard`);
  process.exit(stale.length ? 1 : 0);
}

// `npm run test:mutations -- event-delivery` runs only the guards whose test or guard text matches.
const only = process.argv[2];
const selected = only ? MUTATIONS.filter((m) => m.test.includes(only) || m.guard.includes(only)) : MUTATIONS;

let survivors = 0;
for (const m of selected) {
  const originals = applyEdits(m);
  const started = Date.now();
  let failed = false;
  let evidence = '';
  try {
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', m.test, '-t', m.scenario, '--bail', '1'],
      { cwd: ROOT, env: { ...process.env, RACE_ROUNDS: String(m.rounds ?? 20) }, stdio: 'pipe', timeout: 600_000 },
    );
  } catch (error) {
    failed = true;
    // The first assertion that broke, so a reader can see *why* the run failed.
    const out = `${(error as { stdout?: Buffer }).stdout ?? ''}${(error as { stderr?: Buffer }).stderr ?? ''}`.replace(/\x1b\[[0-9;]*m/g, '');
    evidence = out.split('\n').find((line) => /AssertionError|Error:|timed out/.test(line))?.trim() ?? '(no assertion line found)';
  } finally {
    restore(originals);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (!failed) survivors++;
  console.log(`${failed ? 'caught ' : 'MISSED '} ${m.guard}  [scenario "${m.scenario}", ${seconds} s]`);
  if (evidence) console.log(`         ${evidence.slice(0, 200)}`);
}
console.log(`${selected.length - survivors} passed, ${survivors} failed`);
process.exit(survivors === 0 ? 0 : 1);
