import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The quick fault drill (npm run drill -- --quick) as part of npm test: its own embedded
// PostgreSQL, the real web server and 4 workers, every fault kind of the schedule, and
// the drill's checks. The drill is the assertion: it exits 0 only with zero violations.
// Its report goes to a temporary directory, so the committed full-run results stay.

const ROOT = path.resolve(import.meta.dirname, '../..');
const results = mkdtempSync(path.join(os.tmpdir(), 'waypost-quick-drill-'));

afterAll(() => rmSync(results, { recursive: true, force: true }));

describe('npm run drill -- --quick', () => {
  it('injects every fault kind and ends with zero violations', async () => {
    const env = { ...process.env };
    delete env.DRILL_DATABASE_URL; // the drill owns its server, so it can restart it
    const child = spawn(process.execPath, ['--import', 'tsx', 'drill/run.ts', '--quick', '--results', results], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-200_000)));
    child.stderr.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-200_000)));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code, output.slice(-6000)).toBe(0);

    const report = JSON.parse(readFileSync(path.join(results, 'latest.json'), 'utf8')) as {
      violations: unknown[];
      faults: { byKind: Record<string, { scheduled: number; injected: number }> };
      invariants: Record<string, number>;
      executions: Record<string, number>;
    };
    expect(report.violations).toEqual([]);
    expect(Object.values(report.invariants).every((n) => n === 0)).toBe(true);
    for (const kind of ['worker-kill', 'worker-pause', 'postgres-restart', 'pool-exhaust', 'web-kill', 'mail-fail', 'mail-hang']) {
      expect(report.faults.byKind[kind]?.injected, `${kind} injected`).toBeGreaterThan(0);
    }
    expect(Object.values(report.executions).reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
  }, 400_000);
});
