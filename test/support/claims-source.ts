import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { executionFrom, stepFrom, TRANSITIONS, type ClaimName } from '../../server/engine/transitions';

// The claims folder (server/engine/claims/) as source, for the lints over it
// (test/engine/claims-lint.test.ts, test/engine/transitions.test.ts): the functions its
// index exports (`export * from` each claim file; fragments.ts is not one), and the SQL
// of each with the shared fragments it uses written out.

const ROOT = path.resolve(import.meta.dirname, '../..');
export const CLAIMS_DIR = path.join(ROOT, 'server/engine/claims');

const sources = readdirSync(CLAIMS_DIR)
  .filter((name) => name.endsWith('.ts'))
  .sort()
  .map((name) => {
    const file = path.join(CLAIMS_DIR, name);
    return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  });

export interface ExportedFunction {
  name: string;
  /** The file, relative to the claims folder. */
  file: string;
  node: ts.FunctionDeclaration;
}

/** The files index.ts re-exports whole: the claim files. */
function claimFiles(): ts.SourceFile[] {
  const index = sources.find((s) => path.basename(s.fileName) === 'index.ts')!;
  const files = index.statements
    .filter((s): s is ts.ExportDeclaration => ts.isExportDeclaration(s) && !s.exportClause && !!s.moduleSpecifier)
    .map((s) => `${(s.moduleSpecifier as ts.StringLiteral).text.replace(/^\.\//, '')}.ts`);
  return files.map((name) => sources.find((s) => path.basename(s.fileName) === name)!);
}

/** Every exported function declaration of the claim files, file by file. */
export function exportedFunctions(): ExportedFunction[] {
  const found: ExportedFunction[] = [];
  for (const source of claimFiles()) {
    source.forEachChild((node) => {
      if (!ts.isFunctionDeclaration(node) || !node.name) return;
      if (!node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return;
      found.push({ name: node.name.text, file: path.basename(source.fileName), node });
    });
  }
  return found;
}

/** Each `Prisma.sql` template in a node, outermost first. */
function sqlTemplates(node: ts.Node): ts.TaggedTemplateExpression[] {
  const found: ts.TaggedTemplateExpression[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isTaggedTemplateExpression(n) && n.tag.getText() === 'Prisma.sql') found.push(n);
    n.forEachChild(visit);
  };
  visit(node);
  return found;
}

/**
 * The SQL fragments of the folder (fragments.ts and any file's own): a top-level
 * function or const built from Prisma.sql templates, by name.
 */
const fragments = new Map<string, ts.Node>();
for (const source of sources) {
  source.forEachChild((node) => {
    if (ts.isFunctionDeclaration(node) && node.name && sqlTemplates(node).length > 0) fragments.set(node.name.text, node);
    if (ts.isVariableStatement(node)) {
      for (const d of node.declarationList.declarations) {
        if (ts.isIdentifier(d.name) && d.initializer && sqlTemplates(d.initializer).length > 0) fragments.set(d.name.text, d.initializer);
      }
    }
  });
}

/** A string literal argument, or a parameter bound to one by the fragment call that holds it. */
function literalArg(arg: ts.Expression | undefined, bound: Map<string, string>): string | undefined {
  if (!arg) return undefined;
  if (ts.isStringLiteral(arg)) return arg.text;
  if (ts.isIdentifier(arg)) return bound.get(arg.text);
  return undefined;
}

/** The transitions table's lists the operators' guards read (`executionStatuses(executionFrom('retryStep'))`), written out. */
const TABLE_LISTS: Record<string, { list: (claim: ClaimName) => readonly string[]; of: string }> = {
  executionStatuses: { list: executionFrom, of: 'executionFrom' },
  stepStatuses: { list: stepFrom, of: 'stepFrom' },
};

/**
 * A substitution's text: a fragment written out (all its templates, its string-literal
 * arguments bound to its parameters), a list read from the transitions table as its
 * literals, any other value `$x`.
 */
function substitution(expression: ts.Expression, seen: Set<string>, bound: Map<string, string>): string {
  const callee = ts.isCallExpression(expression) ? expression.expression : expression;
  const name = ts.isIdentifier(callee) ? callee.text : null;
  if (name && ts.isCallExpression(expression) && TABLE_LISTS[name]) {
    const inner = expression.arguments[0];
    if (inner && ts.isCallExpression(inner) && ts.isIdentifier(inner.expression) && inner.expression.text === TABLE_LISTS[name].of) {
      const claim = literalArg(inner.arguments[0], bound);
      if (claim && claim in TRANSITIONS) return TABLE_LISTS[name].list(claim as ClaimName).map((s) => `'${s}'`).join(', ');
    }
  }
  const fragment = name && !seen.has(name) ? fragments.get(name) : undefined;
  if (!fragment || !name) return '$x';
  const inner = new Set(seen).add(name);
  const binds = new Map(bound);
  if (ts.isFunctionDeclaration(fragment) && ts.isCallExpression(expression)) {
    fragment.parameters.forEach((p, i) => {
      const value = literalArg(expression.arguments[i], bound);
      if (ts.isIdentifier(p.name) && value !== undefined) binds.set(p.name.text, value);
    });
  }
  return sqlTemplates(fragment).map((t) => templateText(t.template, inner, binds)).join(' ');
}

function templateText(t: ts.TemplateLiteral, seen: Set<string>, bound: Map<string, string> = new Map()): string {
  return ts.isNoSubstitutionTemplateLiteral(t)
    ? t.text
    : [t.head.text, ...t.templateSpans.map((s) => `${substitution(s.expression, seen, bound)}${s.literal.text}`)].join('');
}

/** The statements a function sends ($queryRaw / $executeRaw templates), fragments written out. */
export function statementsOf(fn: ts.FunctionDeclaration): string[] {
  const sql: string[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isTaggedTemplateExpression(n) && /\$(queryRaw|executeRaw)$/.test(n.tag.getText())) sql.push(templateText(n.template, new Set()));
    n.forEachChild(visit);
  };
  fn.body?.forEachChild(visit);
  return sql;
}

/**
 * The claim a function hands its work to, when it sends no SQL of its own: a single
 * claim's form of a batch claim of the folder (advanceExecution, a batch of one of
 * advanceExecutions). Null for a function that sends its own statements or calls no claim.
 */
export function delegatedClaim(fn: ts.FunctionDeclaration): string | null {
  if (statementsOf(fn).length > 0) return null;
  const claims = new Set(exportedFunctions().filter((f) => f.node !== fn && statementsOf(f.node).length > 0).map((f) => f.name));
  let found: string | null = null;
  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && claims.has(n.expression.text)) found ??= n.expression.text;
    n.forEachChild(visit);
  };
  fn.body?.forEachChild(visit);
  return found;
}
