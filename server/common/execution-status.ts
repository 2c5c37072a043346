import { ExecutionStatus } from '../generated/prisma/enums';

// An execution's statuses, the one list every reader uses: the console's filters and
// legends, the API's input schemas, the read model, and (as SQL, through
// server/engine/claims/fragments.ts, executionIsActive) every statement that asks whether
// an execution is active. Plain constants from Prisma's generated enum, so the browser may
// import them too.

/** Every status, in the order the console lists them: active first, then the ends. */
export const EXECUTION_STATUSES = [
  ExecutionStatus.RUNNING,
  ExecutionStatus.WAITING,
  ExecutionStatus.COMPLETED,
  ExecutionStatus.EXITED,
  ExecutionStatus.FAILED,
  ExecutionStatus.CANCELLED,
] as const satisfies readonly ExecutionStatus[];

// A status the schema gains and this list lacks fails to compile here.
type Unlisted = Exclude<ExecutionStatus, (typeof EXECUTION_STATUSES)[number]>;
const everyStatusListed: [Unlisted] extends [never] ? true : never = true;
void everyStatusListed;

/** Active: the executions the I1 index counts (at most one per workflow and contact), and the ones workers and waits still move. */
export const ACTIVE_STATUSES = [ExecutionStatus.RUNNING, ExecutionStatus.WAITING] as const satisfies readonly ExecutionStatus[];

export function isActiveStatus(status: string): boolean {
  return (ACTIVE_STATUSES as readonly string[]).includes(status);
}

/**
 * Finished for good: no claim moves an execution out of these (server/engine/transitions.ts;
 * test/retention/policy.test.ts reads the table to prove it), so retention may remove one
 * without racing a worker or an operator. FAILED is not one of them: an operator may still
 * retry, skip or cancel it.
 */
export const FINISHED_STATUSES = [ExecutionStatus.COMPLETED, ExecutionStatus.EXITED, ExecutionStatus.CANCELLED] as const satisfies readonly ExecutionStatus[];
