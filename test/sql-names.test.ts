import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// Every SQL statement of the product is named: its text opens with a `-- <name>` line
// (the claims folder's rule, test/engine/claims-lint.test.ts, for all of server/ and
// scripts/), so pg_stat_activity, lock waits, slow-query logs and EXPLAIN output say which
// statement is running. A name is the function that sends it or its purpose, and no two
// statements share one.
//
// What counts as a statement: a `$queryRaw` / `$executeRaw` (/ `...Unsafe`) or
// `Prisma.sql` tagged template, or the string literal given to a node-postgres
// `.query(...)`, whose text starts (after whitespace and comments) with SELECT, WITH,
// INSERT, UPDATE or DELETE. A fragment, a piece of SQL that is no statement (a predicate,
// a SET list, a `${query} LIMIT ...` around a named statement), starts with none of them and
// is exempt. BEGIN, COMMIT, DDL are not named.

const ROOT = path.resolve(import.meta.dirname, '..');
const DIRS = ['server', 'scripts'];

/**
 * Files whose statements are being renamed by a change in flight elsewhere (the wait
 * repairs' rewrite, and stuck.ts's move to another folder): named there, so as not to
 * conflict. Temporary: the merge names their statements and empties this list (the
 * test fails on an entry whose file has nothing left to name, or no longer exists).
 */
const PENDING_NAMES: readonly string[] = [
];

const STATEMENT = /^(SELECT|WITH|INSERT|UPDATE|DELETE)\b/i;
const NAME_LINE = /^--[ \t]+([A-Za-z_][\w.]*)[ \t]*$/;

interface Sql {
  file: string;
  line: number;
  /** The statement's text up to its first substitution. */
  head: string;
}

function files(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'generated' && entry.name !== 'node_modules') walk(p);
      } else if (/\.tsx?$/.test(entry.name)) found.push(p);
    }
  };
  for (const dir of DIRS) walk(path.join(ROOT, dir));
  return found.sort();
}

function headOf(t: ts.TemplateLiteral | ts.StringLiteral): string {
  return ts.isTemplateExpression(t) ? t.head.text : t.text;
}

/** Every raw SQL text of a file: the tagged templates and `.query(` literals. */
function sqlOf(file: string): Sql[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Sql[] = [];
  const at = (n: ts.Node, head: string) =>
    found.push({ file: path.relative(ROOT, file), line: source.getLineAndCharacterOfPosition(n.getStart()).line + 1, head });
  const visit = (n: ts.Node) => {
    if (ts.isTaggedTemplateExpression(n)) {
      const tag = n.tag.getText();
      if (/\$(queryRaw|executeRaw)(Unsafe)?$/.test(tag) || tag === 'Prisma.sql') at(n, headOf(n.template));
    } else if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && /^(query|\$queryRawUnsafe|\$executeRawUnsafe)$/.test(n.expression.name.text)) {
      const arg = n.arguments[0];
      if (arg && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg) || ts.isTemplateExpression(arg))) at(n, headOf(arg));
    }
    n.forEachChild(visit);
  };
  visit(source);
  return found;
}

/** The text without its leading whitespace and comments. */
function body(sql: string): string {
  let text = sql;
  for (;;) {
    const next = text.replace(/^\s+/, '').replace(/^--[^\n]*(\n|$)/, '').replace(/^\/\*[\s\S]*?\*\//, '');
    if (next === text) return text;
    text = next;
  }
}

const isStatement = (sql: Sql) => STATEMENT.test(body(sql.head));
const nameOf = (sql: Sql) => NAME_LINE.exec(sql.head.trimStart().split('\n')[0]!.trim())?.[1] ?? null;
const where = (sql: Sql) => `${sql.file}:${sql.line} ${body(sql.head).split('\n')[0]!.trim().slice(0, 60)}`;

describe('every SQL statement is named', () => {
  const all = files().flatMap(sqlOf);
  const statements = all.filter(isStatement);

  it('finds the statements', () => {
    const names = statements.map(nameOf);
    expect(names).toEqual(expect.arrayContaining(['claimWait', 'retryStep', 'writeAudit', 'loadVersionGraph']));
    expect(statements.length).toBeGreaterThan(150);
  });

  it('each opens with a `-- <name>` line', () => {
    const unnamed = statements.filter((s) => !nameOf(s) && !PENDING_NAMES.includes(s.file)).map(where);
    expect(unnamed, `${unnamed.length} statements without a leading "-- <name>" line`).toEqual([]);
  });

  it('no two statements share a name', () => {
    const byName = new Map<string, string[]>();
    for (const s of statements) {
      const name = nameOf(s);
      if (name) byName.set(name, [...(byName.get(name) ?? []), where(s)]);
    }
    expect([...byName].filter(([, at]) => at.length > 1)).toEqual([]);
  });

  // A router checks its input and calls the server's read models (server/read/) and
  // changes (server/engine/, server/repair/); the SQL is theirs, named and tested there.
  it('no tRPC router sends SQL of its own', () => {
    expect(all.filter((s) => s.file.startsWith('server/trpc/')).map(where)).toEqual([]);
  });

  it('PENDING_NAMES lists only files that still have statements to name', () => {
    const pending = new Set(statements.filter((s) => !nameOf(s)).map((s) => s.file));
    expect(PENDING_NAMES.filter((file) => !pending.has(file)), 'name them, then drop the file from PENDING_NAMES').toEqual([]);
  });
});
