import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// A lint over the claims module (issue 3): every exported claim is one SQL statement in a
// Prisma tagged template, guarded by a version or status predicate, documented with the
// invariant it protects. And nowhere in the server is SQL built from strings.

const ROOT = path.resolve(import.meta.dirname, '../..');
const file = path.join(ROOT, 'server/engine/claims.ts');
const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);

interface Claim {
  name: string;
  doc: string;
  sql: string[];
}

function claims(): Claim[] {
  const found: Claim[] = [];
  source.forEachChild((node) => {
    if (!ts.isFunctionDeclaration(node) || !node.name) return;
    if (!node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return;
    const name = node.name.text;
    if (/^(read|find|is|lock)/.test(name)) return; // reads and locks, not state changes
    const sql: string[] = [];
    const visit = (n: ts.Node) => {
      if (ts.isTaggedTemplateExpression(n) && /\$(queryRaw|executeRaw)$/.test(n.tag.getText())) {
        const t = n.template;
        sql.push(
          ts.isNoSubstitutionTemplateLiteral(t)
            ? t.text
            : [t.head.text, ...t.templateSpans.map((s) => `$x${s.literal.text}`)].join(''),
        );
      }
      n.forEachChild(visit);
    };
    node.body?.forEachChild(visit);
    const doc = ts.getJSDocCommentsAndTags(node).map((d) => d.getText()).join('\n');
    found.push({ name, doc, sql });
  });
  return found;
}

describe('claims lint', () => {
  const all = claims();

  it('finds the claims', () => {
    expect(all.map((c) => c.name)).toEqual(
      expect.arrayContaining(['insertExecutions', 'claimReadySteps', 'claimStep', 'advanceExecution', 'parkExecution', 'claimWait', 'advanceFromWait']),
    );
  });

  it.each(all.map((c) => [c.name, c] as const))('%s is one statement with a version or status predicate and names its invariant', (_, claim) => {
    expect(claim.sql, 'exactly one SQL statement').toHaveLength(1);
    const sql = claim.sql[0]!;
    expect(sql.trim().replace(/;\s*$/, ''), 'no second statement').not.toContain(';');
    const guarded = /\bversion\s*=\s*\$x|\bstatus\s*(=|IN)|"resolvedBy" IS NULL|"leaseOwner" = \$x|"processedAt" IS NULL|ON CONFLICT/i.test(sql);
    expect(guarded, 'a version, status, lease or uniqueness predicate').toBe(true);
    expect(claim.doc, 'its comment names the invariant it protects').toMatch(/\bI[1-8]\b/);
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
