import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { sourcePaths } from './support/source-files';

// docs/architecture.md ("Layers") as a check. The diagram there is the definition: this
// file reads its arrows and fails on any import under app/ or server/ that is not one of
// them (type-only and dynamic imports count: a type that lives above its user drags the
// module above into every change), on an arrow no import uses, on any import cycle, and
// on a 'use client' file that reaches past the browser boundary. The entry points
// (scripts/, prisma/, test/, e2e/, bench/, drill/, proxy.ts, the configs) may import
// anything; nothing under app/ or server/ imports them.

const ROOT = path.resolve(import.meta.dirname, '..');

/** The modules, by folder: a file belongs to the first whose folder holds it ('base' is server/'s top level). */
const MODULES: [string, string][] = [
  ['app', 'app/'],
  ['http', 'server/http/'],
  ['trpc', 'server/trpc/'],
  ['auth', 'server/auth/'],
  ['read', 'server/read/'],
  ['repair', 'server/repair/'],
  ['stuck', 'server/stuck/'],
  ['webhooks', 'server/webhooks/'],
  ['retention', 'server/retention/'],
  ['engine', 'server/engine/'],
  ['metrics', 'server/metrics/'],
  ['db', 'server/db/'],
  ['common', 'server/common/'],
  ['generated', 'server/generated/'],
  ['base', 'server/'],
];

function relative(file: string): string {
  return path.relative(ROOT, file).split(path.sep).join('/');
}

function moduleOf(file: string): string {
  const rel = relative(file);
  if (rel.startsWith('..') || rel.includes('node_modules/')) return 'outside';
  return MODULES.find(([, folder]) => rel.startsWith(folder))?.[0] ?? 'entry';
}

/** The arrows of docs/architecture.md's mermaid diagram, as "from -> to" (`a --> b & c` is two). */
export function drawnEdges(markdown: string): Set<string> {
  const block = /```mermaid\n([\s\S]*?)```/.exec(markdown.slice(markdown.indexOf('## Layers')));
  if (!block) throw new Error('docs/architecture.md has no mermaid diagram under "## Layers"');
  const edges = new Set<string>();
  for (const line of block[1]!.split('\n')) {
    const arrow = /^\s*(\w+)\s*-->\s*(.+)$/.exec(line);
    if (!arrow) continue;
    for (const to of arrow[2]!.split('&')) edges.add(`${arrow[1]} -> ${to.trim()}`);
  }
  return edges;
}

const ALLOWED = drawnEdges(readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8'));

const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.json'), {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => {
    throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  },
})!;

function resolvedImports(file: string, text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map(({ fileName }) => ts.resolveModuleName(fileName, file, config.options, ts.sys).resolvedModule)
    .flatMap((r) => (r && !r.isExternalLibraryImport ? [r.resolvedFileName] : []));
}

const read0 = ts.sys.readFile as (file: string) => string;

/** Every import in the given files that the diagram does not draw, as "importer -> imported (from -> to)"; and the arrows used. */
export function importEdges(files: string[], read: (file: string) => string = read0): { undrawn: string[]; used: Set<string> } {
  const undrawn: string[] = [];
  const used = new Set<string>();
  for (const file of files) {
    const from = moduleOf(file);
    if (from === 'entry' || from === 'outside') continue;
    for (const target of resolvedImports(file, read(file))) {
      const to = moduleOf(target);
      if (to === 'outside' || to === from) continue;
      const edge = `${from} -> ${to}`;
      if (to !== 'entry' && ALLOWED.has(edge)) used.add(edge);
      else undrawn.push(`${relative(file)} -> ${relative(target)} (${edge})`);
    }
  }
  return { undrawn, used };
}

/**
 * The files a 'use client' file brings into the browser: it and every file it imports by
 * value, transitively (an import whose every name is `type` is erased, and so is
 * `import type`). Each past the boundary as "file (brought in by importer)".
 */
export function pastBrowserBoundary(clientFiles: string[], read: (file: string) => string = read0): string[] {
  const mayRun = (rel: string) => rel.startsWith('app/') || rel.startsWith('server/common/') || rel === 'server/generated/prisma/enums.ts';
  const seen = new Set<string>();
  const found: string[] = [];
  const stack: [string, string][] = clientFiles.map((file) => [file, '']);
  while (stack.length > 0) {
    const [file, by] = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (!mayRun(relative(file))) {
      found.push(`${relative(file)} (brought in by ${by})`);
      continue;
    }
    const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);
    for (const statement of source.statements) {
      let specifier: ts.Expression | undefined;
      if (ts.isImportDeclaration(statement)) {
        const clause = statement.importClause;
        const bindings = clause?.namedBindings;
        const typesOnly =
          clause?.isTypeOnly ||
          (clause && !clause.name && bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly));
        if (!typesOnly) specifier = statement.moduleSpecifier;
      } else if (ts.isExportDeclaration(statement) && !statement.isTypeOnly) {
        specifier = statement.moduleSpecifier;
      }
      if (!specifier || !ts.isStringLiteral(specifier)) continue;
      const resolved = ts.resolveModuleName(specifier.text, file, config.options, ts.sys).resolvedModule;
      if (resolved && !resolved.isExternalLibraryImport) stack.push([resolved.resolvedFileName, relative(file)]);
    }
  }
  return found.sort();
}

const isClientFile = (text: string) => /^\s*(\/\/[^\n]*\n\s*)*['"]use client['"]/.test(text);

/** The app/ and server/ files each file imports (type-only and dynamic imports included). */
function importGraph(files: string[], read: (file: string) => string = ts.sys.readFile as (f: string) => string): Map<string, string[]> {
  const inside = new Set(files);
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(read(file), true, true);
      const targets = importedFiles
        .map(({ fileName }) => ts.resolveModuleName(fileName, file, config.options, ts.sys).resolvedModule)
        .flatMap((r) => (r && !r.isExternalLibraryImport && inside.has(r.resolvedFileName) ? [r.resolvedFileName] : []));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** Every import cycle (Tarjan's strongly connected components of more than one file, or a file importing itself), each sorted. */
export function importCycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let top: string;
    do {
      top = stack.pop()!;
      onStack.delete(top);
      component.push(path.relative(ROOT, top).split(path.sep).join('/'));
    } while (top !== file);
    if (component.length > 1 || graph.get(file)!.includes(file)) cycles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

describe('layering (docs/architecture.md, Layers)', () => {
  const files = [...sourcePaths(path.join(ROOT, 'app')), ...sourcePaths(path.join(ROOT, 'server'))];
  /** A read() that puts `line` at the top of `file`. */
  const withLine = (file: string, line: string) => (f: string) => (f === file ? `${line}\n${read0(f)}` : read0(f));
  const at = (...parts: string[]) => path.join(ROOT, ...parts);

  it('walks the whole product and reads the diagram', () => {
    // A broken walk (no files, imports that no longer resolve, no arrows read) would pass for the wrong reason.
    expect(files.length).toBeGreaterThan(100);
    const trpc = files.find((f) => f.endsWith(path.join('server', 'trpc', 'trpc.ts')))!;
    expect(resolvedImports(trpc, read0(trpc)).length).toBeGreaterThan(2);
    expect(ALLOWED.size).toBeGreaterThan(20);
    for (const edge of ALLOWED) for (const end of edge.split(' -> ')) expect(MODULES.map(([name]) => name)).toContain(end);
  });

  it('has no import the diagram does not draw, and no arrow that no import uses', () => {
    const { undrawn, used } = importEdges(files);
    expect(undrawn).toEqual([]);
    expect([...ALLOWED].filter((edge) => !used.has(edge))).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(importCycles(importGraph(files))).toEqual([]);
  });

  it("keeps every 'use client' file's imports inside the browser boundary", () => {
    const clients = files.filter((f) => f.includes(`${path.sep}app${path.sep}`) && isClientFile(read0(f)));
    expect(clients.length).toBeGreaterThan(20);
    expect(pastBrowserBoundary(clients)).toEqual([]);
  });

  it('sees an import the diagram does not draw (type-only, relative, through @/, dynamic, an entry point)', () => {
    const actor = at('server', 'auth', 'actor.ts');
    const engine = at('server', 'engine', 'enrollment.ts');
    const procedures = at('server', 'trpc', 'trpc.ts');
    const page = at('app', 'executions', 'page.tsx');
    const undrawn = (file: string, line: string) => importEdges([file], withLine(file, line)).undrawn;
    expect(undrawn(actor, "import type { Context } from '../trpc/trpc';")).toEqual(['server/auth/actor.ts -> server/trpc/trpc.ts (auth -> trpc)']);
    expect(undrawn(engine, "import { REPAIRS } from '@/server/repair/actions';")).toEqual(['server/engine/enrollment.ts -> server/repair/actions.ts (engine -> repair)']);
    expect(undrawn(procedures, "import { apiRateLimits } from '../http/rate-limits';")).toEqual(['server/trpc/trpc.ts -> server/http/rate-limits.ts (trpc -> http)']);
    expect(undrawn(engine, "const seed = await import('../../prisma/seed');")).toEqual(['server/engine/enrollment.ts -> prisma/seed.ts (engine -> entry)']);
    // Sideways as well as up: a page reading the database, the browser's folder reaching the engine.
    expect(undrawn(page, "import { db } from '@/server/db';")).toEqual(['app/executions/page.tsx -> server/db/index.ts (app -> db)']);
    expect(undrawn(page, "import { resolveActor } from '@/server/auth/actor';")).toEqual(['app/executions/page.tsx -> server/auth/actor.ts (app -> auth)']);
    const roles = at('server', 'common', 'roles.ts');
    expect(undrawn(roles, "import type { Db } from '../db';")).toEqual(['server/common/roles.ts -> server/db/index.ts (common -> db)']);
  });

  it('sees an arrow that no import uses', () => {
    const drawn = drawnEdges('## Layers\n```mermaid\ngraph TD\n  app --> http & db\n```\n');
    expect([...drawn]).toEqual(['app -> http', 'app -> db']);
    const { used } = importEdges(files);
    expect(used.has('app -> db')).toBe(false);
  });

  it('sees a cycle, type-only included', () => {
    // server/repair/target.ts imports planner.ts's types; planner.ts importing target.ts's types back closes a cycle.
    const planner = at('server', 'repair', 'planner.ts');
    const target = at('server', 'repair', 'target.ts');
    expect(importGraph(files).get(target)).toContain(planner);
    const cycles = importCycles(importGraph(files, withLine(planner, "import type { RepairRequest } from './target';")));
    expect(cycles).toEqual([['server/repair/planner.ts', 'server/repair/target.ts']]);
  });

  it('sees a client file that brings server code into the browser, and not one that only names its types', () => {
    const csvFile = at('app', 'enroll', 'csv-file.ts');
    const view = at('app', 'enroll', 'enroll-view.tsx');
    expect(isClientFile(read0(view))).toBe(true);
    // enroll-view.tsx imports csv-file.ts: an engine import there reaches the browser through it.
    const seeded = pastBrowserBoundary([view], withLine(csvFile, "import { enrollRows } from '@/server/engine/enrollment-import/enroll-rows';"));
    expect(seeded).toEqual(['server/engine/enrollment-import/enroll-rows.ts (brought in by app/enroll/csv-file.ts)']);
    expect(pastBrowserBoundary([view], withLine(csvFile, "import { type RowResult } from '@/server/engine/enrollment-import/enroll-rows';"))).toEqual([]);
    expect(pastBrowserBoundary([view], withLine(csvFile, "import type { Db } from '@/server/db';"))).toEqual([]);
  });
});
