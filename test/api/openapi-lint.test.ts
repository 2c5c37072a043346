import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../server/http/openapi';

// The /api/v1 document as trpc-to-openapi writes it from the procedures' zod schemas (plus
// what server/http/openapi.ts adds): it lints clean with Redocly's recommended rules
// (redocly.yaml), warnings included, and says what every integration needs of each
// operation: an operationId, a summary and description, an example, its error answers as
// the one Problem schema, and the Idempotency-Key header on every POST.

const ROOT = path.resolve(import.meta.dirname, '../..');

type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
};

function operations(): [string, Operation][] {
  const doc = openApiDocument() as unknown as { paths: Record<string, Record<string, Operation>> };
  return Object.entries(doc.paths).flatMap(([p, item]) => Object.entries(item).map(([method, op]) => [`${method.toUpperCase()} ${p}`, op] as [string, Operation]));
}

describe('the /api/v1 OpenAPI document', () => {
  it('lints clean with @redocly/cli (recommended rules, no warnings)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'waypost-openapi-'));
    try {
      const file = path.join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(openApiDocument(), null, 2));
      const run = await promisify(execFile)(process.execPath, [path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', '--format=stylish', '--config', path.join(ROOT, 'redocly.yaml'), file], { cwd: ROOT }).catch(
        (error: { stdout: string; stderr: string; code: number }) => error,
      );
      // Without the CLI's boxed notice about Node.js versions, which is no finding.
      const output = `${run.stdout}\n${run.stderr}`.split('\n').filter((line) => !/[║╔╚]/.test(line)).join('\n');
      expect(output).toMatch(/valid/i);
      expect(output).not.toMatch(/warning|error/i);
      expect('code' in run ? run.code : 0, output).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('every operation has an operationId, summary, description and error answers that are the Problem schema as problem+json', () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThanOrEqual(14);
    const ids = ops.map(([, op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [name, op] of ops) {
      expect(op.operationId, name).toMatch(/^[a-z][A-Za-z]+$/);
      expect(op.summary, name).toBeTruthy();
      expect(op.description?.length ?? 0, name).toBeGreaterThan(20);
      const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
      expect(errors.map(([status]) => status), name).toEqual(expect.arrayContaining(['401', '403', '429']));
      for (const [status, response] of errors) {
        expect(Object.keys(response.content ?? {}), `${name} ${status}`).toEqual(['application/problem+json']);
        expect(response.content!['application/problem+json']!.schema, `${name} ${status}`).toEqual({ $ref: '#/components/schemas/Problem' });
      }
      const idempotency = (op.parameters ?? []).some((p) => p.in === 'header' && p.name === 'Idempotency-Key');
      expect(idempotency, name).toBe(name.startsWith('POST '));
    }
  });

  it('every operation shows an example (its request or its answer)', () => {
    for (const [name, op] of operations()) expect(JSON.stringify({ body: op.requestBody, ok: op.responses['200'], params: op.parameters }), name).toMatch(/"example"/);
  });
});
