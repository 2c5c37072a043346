import type { RawDb } from '../db';
import { advanceExecutions, type Advance, type CompleteResult, type Completion, type StepClaim } from './claims';

// A worker drives the executions of a pass side by side, so they finish a step at about
// the same moment. The completions recorded in one turn of the event loop are sent
// together, as one advanceExecutions statement: one round trip and one commit for the
// batch instead of one per step. Each row is still fenced on its own (a lost row is a
// Lost result for its caller alone), and a batch whose statement fails is sent again
// row by row, so one bad row never fails the others.

/** Rows per statement, at most. */
const MAX_BATCH = 64;

interface Pending {
  completion: Completion;
  resolve: (result: CompleteResult) => void;
  reject: (error: unknown) => void;
}

export class CompletionBatch {
  private pending: Pending[] = [];
  private scheduled = false;

  constructor(private readonly db: RawDb) {}

  /** Complete a claimed step and advance its execution, with whatever else completes in this turn. */
  record(claim: StepClaim, advance: Advance): Promise<CompleteResult> {
    return new Promise((resolve, reject) => {
      this.pending.push({ completion: { claim, advance }, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const pending = this.pending;
    this.pending = [];
    for (const batch of batches(pending)) void this.send(batch);
  }

  private async send(batch: Pending[]): Promise<void> {
    try {
      const results = await advanceExecutions(this.db, batch.map((p) => p.completion));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      await Promise.all(batch.map((p) => this.send([p])));
    }
  }
}

/**
 * Split what is pending into statements: at most MAX_BATCH rows each, and a contact's
 * data patched at most once per statement (an UPDATE applies one of two patches of a row).
 */
function batches(pending: Pending[]): Pending[][] {
  const out: { rows: Pending[]; patched: Set<string> }[] = [];
  for (const p of pending) {
    const contact = p.completion.advance.contactPatch ? p.completion.claim.contactId : null;
    let home = out.find((b) => b.rows.length < MAX_BATCH && (contact === null || !b.patched.has(contact)));
    if (!home) {
      home = { rows: [], patched: new Set() };
      out.push(home);
    }
    home.rows.push(p);
    if (contact !== null) home.patched.add(contact);
  }
  return out.map((b) => b.rows);
}
