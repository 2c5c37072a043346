import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// docs/architecture.md ("Layers") as a check: imports point down only,
//   app -> server/http -> server/trpc -> server/auth -> server/read -> server/repair -> server/engine -> base
// (base: server/db/, server/env.ts, the generated Prisma client and the other modules at
// server/'s top level). Type-only and dynamic imports count: a type that lives above its
// user drags the layer above into every change. The entry points (scripts/, prisma/,
// test/, e2e/, proxy.ts, the configs) may import anything; nothing under app/ or server/
// imports them.

const ROOT = path.resolve(import.meta.dirname, '..');

/** Top first; a file may import from its own layer and those after it. */
const LAYERS = ['app', 'server/http', 'server/trpc', 'server/auth', 'server/read', 'server/repair', 'server/engine', 'server'] as const;
type Layer = (typeof LAYERS)[number];

function layerOf(file: string): Layer | 'entry' | 'outside' {
  const rel = path.relative(ROOT, file).split(path.sep).join('/');
  if (rel.startsWith('..') || rel.includes('node_modules/')) return 'outside';
  for (const layer of LAYERS) if (rel.startsWith(`${layer}/`)) return layer;
  return 'entry';
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (name === 'generated' || name === 'node_modules') continue;
    if (statSync(full).isDirectory()) out.push(...sources(full));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.json'), {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => {
    throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  },
})!;

/** Every upward import in the given files, as "importer -> imported (layer -> layer)". */
export function upwardImports(files: string[], read: (file: string) => string = ts.sys.readFile as (f: string) => string): string[] {
  const found: string[] = [];
  for (const file of files) {
    const from = layerOf(file);
    if (from === 'entry' || from === 'outside') continue;
    const { importedFiles } = ts.preProcessFile(read(file), true, true);
    for (const { fileName: specifier } of importedFiles) {
      const resolved = ts.resolveModuleName(specifier, file, config.options, ts.sys).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport) continue;
      const to = layerOf(resolved.resolvedFileName);
      if (to === 'outside') continue;
      const upward = to === 'entry' || LAYERS.indexOf(to) < LAYERS.indexOf(from);
      if (upward) {
        found.push(`${path.relative(ROOT, file)} -> ${path.relative(ROOT, resolved.resolvedFileName)} (${from} -> ${to})`);
      }
    }
  }
  return found;
}

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
  const files = [...sources(path.join(ROOT, 'app')), ...sources(path.join(ROOT, 'server'))];

  it('walks the whole product', () => {
    // A broken walk (no files, or imports that no longer resolve) would pass for the wrong reason.
    expect(files.length).toBeGreaterThan(100);
    const trpc = files.find((f) => f.endsWith(path.join('server', 'trpc', 'trpc.ts')))!;
    const { importedFiles } = ts.preProcessFile(ts.sys.readFile(trpc)!, true, true);
    const resolved = importedFiles.map((i) => ts.resolveModuleName(i.fileName, trpc, config.options, ts.sys).resolvedModule);
    expect(resolved.filter((r) => r && !r.isExternalLibraryImport).length).toBeGreaterThan(2);
  });

  it('has no import that points up the layers', () => {
    expect(upwardImports(files)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(importCycles(importGraph(files))).toEqual([]);
  });

  it('sees an upward import when one is added (type-only, relative or through @/)', () => {
    const actor = path.join(ROOT, 'server', 'auth', 'actor.ts');
    const engine = path.join(ROOT, 'server', 'engine', 'enrollment.ts');
    const withUpward = (file: string, line: string) => (f: string) => (f === file ? `${line}\n${ts.sys.readFile(f)}` : ts.sys.readFile(f)!);
    expect(upwardImports([actor], withUpward(actor, "import type { Context } from '../trpc/trpc';"))).toEqual([
      'server/auth/actor.ts -> server/trpc/trpc.ts (server/auth -> server/trpc)',
    ]);
    expect(upwardImports([engine], withUpward(engine, "import { REPAIRS } from '@/server/repair/actions';"))).toEqual([
      'server/engine/enrollment.ts -> server/repair/actions.ts (server/engine -> server/repair)',
    ]);
    const procedures = path.join(ROOT, 'server', 'trpc', 'trpc.ts');
    expect(upwardImports([procedures], withUpward(procedures, "import { apiRateLimits } from '../http/rate-limits';"))).toEqual([
      'server/trpc/trpc.ts -> server/http/rate-limits.ts (server/trpc -> server/http)',
    ]);
    expect(upwardImports([engine], withUpward(engine, "const seed = await import('../../prisma/seed');"))).toEqual([
      'server/engine/enrollment.ts -> prisma/seed.ts (server/engine -> entry)',
    ]);
  });
});

// Pages read through the server caller (server/http/server-caller.ts: the tRPC caller on
// the very context /api/trpc builds, and the few reads a page needs before it knows who
// is asking), never the database or the actor lookup themselves: one place decides who is
// asking, and the procedures decide what they may see.
it('has no file under app/ that imports server/db or server/auth/actor', () => {
  const forbidden = (resolved: string) => {
    const rel = path.relative(ROOT, resolved).split(path.sep).join('/');
    return rel.startsWith('server/db/') || rel === 'server/auth/actor.ts';
  };
  const appFiles = sources(path.join(ROOT, 'app'));
  expect(appFiles.length).toBeGreaterThan(20);
  const found: string[] = [];
  for (const file of appFiles) {
    for (const { fileName } of ts.preProcessFile(ts.sys.readFile(file)!, true, true).importedFiles) {
      const resolved = ts.resolveModuleName(fileName, file, config.options, ts.sys).resolvedModule;
      if (resolved && !resolved.isExternalLibraryImport && forbidden(resolved.resolvedFileName)) {
        found.push(`${path.relative(ROOT, file)} -> ${path.relative(ROOT, resolved.resolvedFileName)}`);
      }
    }
  }
  expect(found).toEqual([]);
});
