import { describe, expect, it } from 'vitest';
import { sourceTexts } from './support/source-files';

// One concern per file, measured: no source file of the project (TypeScript, the Prisma
// schema, SQL migrations, styles, the CI script) is over 400 lines. Generated code, the
// lockfile and Markdown are not sources.

export const MAX_LINES = 400;
const SOURCE = /(\.(ts|tsx|mts|js|mjs|cjs|prisma|sql|css)|^run)$/;

/** Files (relative path -> text) over the limit, with their line counts. */
export function oversized(files: Map<string, string>): string[] {
  return [...files]
    .map(([rel, text]) => [rel, text.replace(/\n$/, '').split('\n').length] as const)
    .filter(([, lines]) => lines > MAX_LINES)
    .map(([rel, lines]) => `${rel}: ${lines} lines`);
}

describe('file size', () => {
  it(`keeps every source file at or under ${MAX_LINES} lines`, () => {
    const files = sourceTexts(['.'], SOURCE);
    expect(files.size).toBeGreaterThan(100);
    expect(oversized(files)).toEqual([]);
  });

  it('fails on a seeded file over the limit', () => {
    const long = Array.from({ length: MAX_LINES + 1 }, (_, i) => `const line${i} = ${i};`).join('\n');
    expect(oversized(new Map([['server/engine/big.ts', long], ['server/engine/ok.ts', 'export {};\n']]))).toEqual(['server/engine/big.ts: 401 lines']);
  });
});
