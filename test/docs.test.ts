import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The design lives in the repository (docs/), and the repository stands on its own:
// nothing tracked may point at the design brief the project started from, which lives
// outside it, and every relative link of the README and docs/ must lead to a file here
// (and, with a #fragment, to a heading of that file).

const ROOT = path.resolve(import.meta.dirname, '..');

// Spelled in pieces, so that this file does not name what it looks for.
const BRIEF_FILES = ['DESIGN', 'API', 'STYLE'].map((name) => `${name}.md`);
const OUTSIDE = [['..', 'shared'].join('/'), ['shared', 'design'].join('/')];
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A brief file's name standing alone: docs/api.md is ours, and a longer name ending in one is another file. */
const POINTS_OUTSIDE = new RegExp(
  [...BRIEF_FILES.map((f) => `(?<![A-Za-z0-9_])${escape(f)}`), ...OUTSIDE.map(escape)].join('|'),
);

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return out.split('\0').filter((f) => f !== '' && !f.startsWith('node_modules/') && !f.includes('/node_modules/'));
}

/** Every line of a tracked file outside docs/ that points at the brief or outside the repository. */
export function outsideReferences(files: string[], read: (file: string) => string | null): string[] {
  const found: string[] = [];
  for (const file of files) {
    if (file.startsWith('docs/')) continue;
    const text = read(file);
    if (text === null) continue;
    text.split('\n').forEach((line, i) => {
      if (POINTS_OUTSIDE.test(line)) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
    });
  }
  return found;
}

function readText(file: string): string | null {
  const full = path.join(ROOT, file);
  if (!existsSync(full)) return null; // deleted in the working tree, not yet in the index
  const bytes = readFileSync(full);
  return bytes.includes(0) ? null : bytes.toString('utf8');
}

// ---------------------------------------------------------------------------
// Links

/** The Markdown with its fenced code blocks and code spans blanked (their text is not a link or a heading). */
function prose(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/`[^`\n]*`/g, '``');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_~]/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

function linksOf(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const reference = [...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!);
  return [...inline, ...reference];
}

/** Every relative link of `file` (relative to ROOT) that leads nowhere in the repository. */
export function brokenLinks(file: string): string[] {
  const full = path.join(ROOT, file);
  const markdown = readFileSync(full, 'utf8');
  const broken: string[] = [];
  for (const link of linksOf(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//')) continue; // http:, https:, mailto:
    const [target = '', fragment] = link.split('#', 2);
    const resolved = target === '' ? full : path.resolve(path.dirname(full), decodeURIComponent(target));
    const inside = path.relative(ROOT, resolved);
    if (inside.startsWith('..') || path.isAbsolute(inside) || inside.split(path.sep).includes('node_modules')) {
      broken.push(`${file}: ${link} (outside the repository)`);
      continue;
    }
    if (!existsSync(resolved)) {
      broken.push(`${file}: ${link} (no such file)`);
      continue;
    }
    if (fragment && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(fragment)) {
      broken.push(`${file}: ${link} (no heading #${fragment} in ${inside})`);
    }
  }
  return broken;
}

const DOCS = ['README.md', 'bench/HISTORY.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('the repository stands on its own', () => {
  it('no tracked file outside docs/ points at the design brief or outside the repository', () => {
    const files = trackedFiles();
    // A broken listing (no git, an empty index) would pass for the wrong reason.
    expect(files.length).toBeGreaterThan(200);
    expect(files).toContain('server/engine/claims/index.ts');
    expect(outsideReferences(files, readText)).toEqual([]);
  });

  it('catches what it is meant to catch', () => {
    const sample: Record<string, string> = {
      'server/a.ts': `// see ${BRIEF_FILES[0]} section 4`,
      'prisma/b.prisma': `// The data model of ${OUTSIDE[0]}/design/x`,
      'test/c.ts': `it('has the procedures of ${BRIEF_FILES[1]}')`,
      'docs/d.md': `moved here from ${BRIEF_FILES[2]}`,
      'server/e.ts': `// docs/api.md, docs/architecture.md, OPEN${BRIEF_FILES[1]} and openapi.json are ours`,
    };
    expect(outsideReferences(Object.keys(sample), (f) => sample[f]!).map((l) => l.split(':')[0])).toEqual([
      'server/a.ts',
      'prisma/b.prisma',
      'test/c.ts',
    ]);
  });

  it('every relative link in the README, bench/HISTORY.md and docs/*.md resolves to a file in the repository', () => {
    expect(DOCS).toEqual(expect.arrayContaining(['docs/README.md', 'docs/architecture.md', 'docs/api.md']));
    expect(DOCS.flatMap(brokenLinks)).toEqual([]);
  });

  it('links to a heading by its GitHub anchor', () => {
    expect(slug('Fencing: version, claimToken and leases')).toBe('fencing-version-claimtoken-and-leases');
    expect(slug('REST: /api/v1')).toBe('rest-apiv1');
    expect(slug('Audit (I8)')).toBe('audit-i8');
  });

  it('the README stays a reference: under 200 lines', () => {
    const text = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(text.split('\n').length - (text.endsWith('\n') ? 1 : 0)).toBeLessThan(200);
  });
});
