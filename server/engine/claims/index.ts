// Every state change of the engine, one named function each, one SQL statement each.
//
// The shape is always a compare-and-swap: UPDATE ... SET ..., version = version + 1
// WHERE id = $id AND version = $expected AND status = $expected_status ... RETURNING.
// Zero rows means the caller lost; it gets a typed Lost result, never an exception.
// A multi-table change is one statement with data-modifying CTEs, so it commits (or
// not) as a unit with a single round trip and a single WAL flush: fewer, shorter
// transactions per step is what makes the engine fast (docs/architecture.md, "Constraints and choices").
//
// Lock order: a claim that touches an execution and its step row locks the execution row
// first (its UPDATE or a FOR UPDATE comes first in the statement), so no two claims can
// deadlock; the timer's batch claim takes its locks with SKIP LOCKED and never waits.
//
// One file per table and audience: execution.ts (enroll, claim a step, keep its lease),
// completion.ts (advance, park, fail a claimed step), waits.ts (event, timer and operator
// resolving a wait), continuation.ts (moving past resolved waits, one or a batch), outbox.ts (tracked events and queued emails),
// operator.ts (server/repair's claims), migration.ts (moving an execution to another version), fragments.ts (the SQL pieces several statements
// share: the completion fence, intervals, the event channel, the operators' guards) and
// result.ts (Won and Lost, what every claim answers). The first comment line of each function names the invariant it protects;
// its SQL opens with `-- <function name>`, so pg_stat_activity and lock waits say which
// claim is running. test/engine/claims-lint.test.ts checks both, and that every exported
// claim is one statement with a version or status predicate.

export type { Lost, Won } from './result';

export * from './execution';
export * from './completion';
export * from './waits';
export * from './continuation';
export * from './outbox';
export * from './operator';
export * from './migration';
