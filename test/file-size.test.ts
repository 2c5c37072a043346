import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// One concern per file, measured: no source file of the project (TypeScript, the Prisma
// schema, SQL migrations, styles, the CI script) is over 400 lines. Generated code, the
// lockfile and Markdown are not sources.

const ROOT = path.resolve(import.meta.dirname, '..');
export const MAX_LINES = 400;
const SOURCE = /\.(ts|tsx|mts|js|mjs|cjs|prisma|sql|css)$/;
const SKIP = new Set(['node_modules', '.next', '.git', 'generated', 'test-results', 'playwright-report', 'screenshots']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sources(full) : SOURCE.test(name) || name === 'run' ? [full] : [];
  });
}

/** Files (relative path -> text) over the limit, with their line counts. */
export function oversized(files: Map<string, string>): string[] {
  return [...files]
    .map(([rel, text]) => [rel, text.replace(/\n$/, '').split('\n').length] as const)
    .filter(([, lines]) => lines > MAX_LINES)
    .map(([rel, lines]) => `${rel}: ${lines} lines`);
}

describe('file size', () => {
  it(`keeps every source file at or under ${MAX_LINES} lines`, () => {
    const files = new Map(sources(ROOT).map((f) => [path.relative(ROOT, f).split(path.sep).join('/'), readFileSync(f, 'utf8')]));
    expect(files.size).toBeGreaterThan(100);
    expect(oversized(files)).toEqual([]);
  });

  it('fails on a seeded file over the limit', () => {
    const long = Array.from({ length: MAX_LINES + 1 }, (_, i) => `const line${i} = ${i};`).join('\n');
    expect(oversized(new Map([['server/engine/big.ts', long], ['server/engine/ok.ts', 'export {};\n']]))).toEqual(['server/engine/big.ts: 401 lines']);
  });
});
