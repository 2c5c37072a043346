import { describe, expect, it } from 'vitest';
import { sourceTexts } from './support/source-files';

// Fault injection has one seam (server/engine/faults.ts): no other product file reads a
// WAYPOST_FAULT_* variable, so the product's behaviour without the drills' variables is
// visible in one file.

const SEAM = 'server/engine/faults.ts';

/** Files (relative path -> text) that read a fault variable outside the seam; comments do not count. */
export function faultReaders(files: Map<string, string>): string[] {
  return [...files]
    .filter(([rel, text]) => rel !== SEAM && /WAYPOST_FAULT_\w+/.test(text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')))
    .map(([rel]) => rel);
}

describe('the fault seam', () => {
  it('reads every WAYPOST_FAULT_* variable in server/engine/faults.ts alone', () => {
    const files = sourceTexts(['server', 'app', 'scripts']);
    expect(files.get(SEAM)).toMatch(/WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS/);
    expect(faultReaders(files)).toEqual([]);
  });

  it('fails on a seeded reader outside the seam', () => {
    const seeded = new Map([
      ['server/engine/run-steps.ts', "const pause = Number(process.env.WAYPOST_FAULT_PAUSE_AFTER_CLAIM_MS ?? 0);"],
      ['server/engine/sender.ts', '// WAYPOST_FAULT_MAIL_CONTROL is read by faults.ts'],
    ]);
    expect(faultReaders(seeded)).toEqual(['server/engine/run-steps.ts']);
  });
});
