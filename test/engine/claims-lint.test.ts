import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { delegatedClaim, exportedFunctions, statementsOf } from '../support/claims-source';

// A lint over the claims folder (server/engine/claims/): every exported claim is
// one SQL statement in a Prisma tagged template, guarded by a version or status predicate
// (the shared fragments it uses written out), documented with the invariant it protects.
// Every statement of the folder opens with a comment naming its function, so
// pg_stat_activity and lock waits say which claim is running. And nowhere in the server
// is SQL built from strings.

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Claim {
  name: string;
  doc: string;
  sql: string[];
  /** The batch claim this one hands its single claim to, sending no SQL of its own. */
  delegatesTo: string | null;
}

/** Every exported function of the folder that sends SQL, with its statements. */
function functions(): Claim[] {
  return exportedFunctions().map(({ name, node }) => ({
    name,
    doc: ts.getJSDocCommentsAndTags(node).map((d) => d.getText()).join('\n'),
    sql: statementsOf(node),
    delegatesTo: delegatedClaim(node),
  }));
}

function claims(): Claim[] {
  // Reads and locks are not state changes.
  return functions().filter((f) => !/^(read|find|is|lock)/.test(f.name));
}

describe('claims lint', () => {
  const all = claims();

  it('finds the claims', () => {
    expect(all.map((c) => c.name)).toEqual(
      expect.arrayContaining(['insertExecutions', 'claimReadySteps', 'claimStep', 'advanceExecutions', 'parkExecution', 'claimWait', 'advanceFromWaits']),
    );
  });

  it('a claim that sends no statement of its own is a batch of one of another claim', () => {
    const delegating = all.filter((c) => c.sql.length === 0);
    expect(delegating.map((c) => [c.name, c.delegatesTo])).toEqual([['advanceExecution', 'advanceExecutions'], ['advanceFromWait', 'advanceFromWaits']]);
    for (const claim of delegating) expect(claim.doc, 'its comment names the invariant it protects').toMatch(/\bI[1-8]\b/);
  });

  it.each(all.filter((c) => !c.delegatesTo).map((c) => [c.name, c] as const))('%s is one statement with a version or status predicate and names its invariant', (_, claim) => {
    expect(claim.sql, 'exactly one SQL statement').toHaveLength(1);
    const sql = claim.sql[0]!;
    expect(sql.trim().replace(/;\s*$/, ''), 'no second statement').not.toContain(';');
    const guarded = /\bversion\s*=\s*\$x|\bstatus\s*(=|IN)|"resolvedBy" IS NULL|"leaseOwner" = \$x|"processedAt" IS NULL|ON CONFLICT/i.test(sql);
    expect(guarded, 'a version, status, lease or uniqueness predicate').toBe(true);
    expect(claim.doc, 'its comment names the invariant it protects').toMatch(/\bI[1-8]\b/);
  });

  const named = functions().filter((f) => f.sql.length > 0);

  it('finds the statements to name', () => {
    expect(named.map((f) => f.name)).toEqual(expect.arrayContaining(['readExecutionState', 'lockDueWaits', 'claimWait', 'retryStep', 'readMessageState']));
  });

  it.each(named.map((f) => [f.name, f] as const))('%s opens each of its statements with a comment naming it', (name, f) => {
    for (const sql of f.sql) expect(sql.trimStart().split('\n')[0]!.trim(), 'the first line of its SQL').toBe(`-- ${name}`);
  });

  it('no SQL is built from strings anywhere in the server', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== 'generated') walk(p);
        } else if (/\.tsx?$/.test(entry.name) && /\$(queryRaw|executeRaw)Unsafe/.test(readFileSync(p, 'utf8'))) {
          offenders.push(path.relative(ROOT, p));
        }
      }
    };
    walk(path.join(ROOT, 'server'));
    expect(offenders).toEqual([]);
  });
});
