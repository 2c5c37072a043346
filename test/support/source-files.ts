import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// The project's own files, for the lints over its sources (layering, database modes, the
// fault seam, file size): walked from the root, never into generated code, installed
// packages, build output or git.

export const ROOT = path.resolve(import.meta.dirname, '../..');

const NEVER = new Set(['node_modules', 'generated', '.next', '.git', '.data', 'test-results', 'playwright-report', 'screenshots']);

/** Absolute paths of the files under `dir` whose name `accept` matches. */
export function sourcePaths(dir: string, accept: RegExp = /\.tsx?$/): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (NEVER.has(name)) return [];
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourcePaths(full, accept) : accept.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The path from the root, with forward slashes. */
export const relativePath = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');

/** Path from the root -> text, of the files under these folders (from the root) that `accept` matches. */
export function sourceTexts(dirs: string[], accept?: RegExp): Map<string, string> {
  return new Map(dirs.flatMap((dir) => sourcePaths(path.join(ROOT, dir), accept)).map((file) => [relativePath(file), readFileSync(file, 'utf8')]));
}
