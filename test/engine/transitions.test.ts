import { describe, expect, it } from 'vitest';
import { ACTIVE_STATUSES } from '../../server/common/execution-status';
import { TRANSITIONS, type Transition } from '../../server/engine/transitions';
import { delegatedClaim, exportedFunctions, statementsOf } from '../support/claims-source';
import { fromStatusMismatches } from '../support/status-guards';

// A lint over the state machine: every
// exported claim of server/engine/claims/ has an entry in server/engine/transitions.ts,
// every entry names a claim that exists, each claim's SQL guards on exactly the statuses
// its entry moves from (workers' claims and operators' alike), and the operators' claims
// read their from-statuses from the table rather than spelling them out again.

/**
 * Exported functions of the claims folder that change state (reads are named read*, find*,
 * is*), but a batch claim's form for one claim, which moves what the batch moves.
 */
function exportedClaims(): Map<string, string> {
  const found = new Map<string, string>();
  for (const { name, node } of exportedFunctions()) {
    if (/^(read|find|is)/.test(name) || delegatedClaim(node)) continue;
    found.set(name, node.body?.getText() ?? '');
  }
  return found;
}

describe('the transitions table', () => {
  const claims = exportedClaims();
  const table: Record<string, Transition> = TRANSITIONS;

  it('finds the claims', () => {
    expect([...claims.keys()]).toEqual(expect.arrayContaining(['claimStep', 'parkExecution', 'claimWait', 'cancelExecution', 'retryStep', 'skipStep']));
  });

  it.each([...claims.keys()])('%s has an entry', (name) => {
    expect(Object.keys(table), `add "${name}" to TRANSITIONS in server/engine/transitions.ts`).toContain(name);
    expect(table[name]!.does.length).toBeGreaterThan(0);
  });

  it('every entry names an exported claim', () => {
    expect(Object.keys(table).filter((name) => !claims.has(name))).toEqual([]);
  });

  it('moves are well formed: no empty lists; only inserts start from NONE', () => {
    for (const [name, t] of Object.entries(table)) {
      for (const moves of [t.execution, t.step, t.event, t.message]) {
        if (!moves) continue;
        expect(moves.from.length, name).toBeGreaterThan(0);
        expect(moves.to.length, name).toBeGreaterThan(0);
        expect(moves.to, name).not.toContain('NONE');
      }
    }
    expect(ACTIVE_STATUSES).toEqual(['RUNNING', 'WAITING']);
  });

  // A claim that can make an execution active (a new row, or
  // one that had ended) can meet the I1 index; it must turn that into a value (ON
  // CONFLICT DO NOTHING, or unlessActiveExecution's savepoint), never an exception.
  it('every claim that can make an execution active again answers I1 with a value, not an exception', () => {
    const active = ACTIVE_STATUSES as readonly string[];
    const reactivating = Object.entries(table)
      .filter(([, t]) => t.execution && t.execution.from.some((s) => !active.includes(s)) && t.execution.to.some((s) => active.includes(s)))
      .map(([name]) => name);
    expect(reactivating.sort()).toEqual(['insertExecutions', 'retryStep', 'skipStep']);
    for (const name of reactivating) {
      expect(claims.get(name), `${name} must not throw on the I1 index`).toMatch(/unlessActiveExecution\(|ON CONFLICT DO NOTHING/);
    }
  });

  it.each(['cancelExecution', 'retryStep', 'skipStep'])('%s reads its from-statuses from the table', (name) => {
    const body = claims.get(name)!;
    expect(body).toMatch(new RegExp(`(executionFrom|stepFrom|executionMayMove|stepRowMayMove|TRANSITIONS)\\W+${name}\\b`));
    // No execution status list spelled out in its own SQL.
    expect(body).not.toMatch(/status IN \('/);
  });

  const sqlOf = new Map(exportedFunctions().map(({ name, node }) => [name, statementsOf(node)]));

  it("each claim's SQL guards on the statuses its entry moves from: executions, step rows and messages", () => {
    expect(fromStatusMismatches(table, sqlOf)).toEqual([]);
  });

  it('fails when the table and a claim disagree (seeded both ways)', () => {
    // The table widened: claimWait said to move RUNNING executions too.
    const widened = { ...table, claimWait: { ...table.claimWait!, execution: { from: ['WAITING', 'RUNNING'], to: ['WAITING'] } } } as Record<string, Transition>;
    expect(fromStatusMismatches(widened, sqlOf)).toEqual([expect.stringContaining('claimWait: the table moves executions from [RUNNING,WAITING]')]);
    // The SQL widened: a sender claiming FAILED messages besides QUEUED ones.
    const claimQueued = sqlOf.get('claimQueuedMessages')!.map((sql) => sql.replace("WHERE status = 'QUEUED'", "WHERE status IN ('QUEUED', 'FAILED')"));
    expect(claimQueued).not.toEqual(sqlOf.get('claimQueuedMessages'));
    expect(fromStatusMismatches(table, new Map([...sqlOf, ['claimQueuedMessages', claimQueued]]))).toEqual([
      expect.stringContaining('claimQueuedMessages: the table moves messages from [QUEUED], its SQL guards on [FAILED,QUEUED]'),
    ]);
    // A step guard dropped: park a claimed step whatever its row's status.
    const park = sqlOf.get('parkExecution')!.map((sql) => sql.replaceAll(/AND s\.status = 'RUNNING'/g, ''));
    expect(fromStatusMismatches(table, new Map([...sqlOf, ['parkExecution', park]]))).toEqual([expect.stringContaining('parkExecution: the table moves step rows')]);
  });
});
