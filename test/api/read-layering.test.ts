import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The console's read model (server/read) sits below the routers (DESIGN.md section 6):
// routers validate, authorize and call it; it may use the stuck predicates, the engine's
// configuration and the database, never the tRPC layer or the console above it.

const READ = path.join(import.meta.dirname, '..', '..', 'server', 'read');

describe('server/read', () => {
  it('imports nothing from the layers above it (server/trpc, server/auth, app)', () => {
    const upward: string[] = [];
    for (const file of readdirSync(READ).filter((f) => f.endsWith('.ts'))) {
      const source = readFileSync(path.join(READ, file), 'utf8');
      for (const [, specifier] of source.matchAll(/from '([^']+)'/g)) {
        if (/(^|\/)(trpc|auth|app)(\/|$)|^@\/app/.test(specifier!)) upward.push(`${file}: ${specifier}`);
      }
    }
    expect(upward).toEqual([]);
  });
});
