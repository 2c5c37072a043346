import { TRPCError } from '@trpc/server';
import { ZodRealError } from 'zod';
import { enrollAudited, type EnrollRejection } from '../../engine/enrollment';
import { enrollRows, importCsv, refuseUnlessEnrollable } from '../../engine/enrollment-import/enroll-rows';
import { parseRow, type BulkRow } from '../../common/enrollment-csv';
import type { Acting } from '../../engine/audit';
import type { Db } from '../../db';
import { acting } from '../audit';
import { ConflictError, conflictError, marketerProcedure, router } from '../trpc';
import { enrollBatchInput, enrollBatchOutput, enrollInput, enrollManyInput, enrollOutput, importCsvInput, type EnrollManyRow } from './enrollments.schema';

/**
 * The API's answer to a refused enrollment. A disabled workflow is PRECONDITION_FAILED,
 * not CONFLICT: nothing raced the caller, the workflow is switched off and stays so
 * until someone enables it. Its reason still travels in `data.conflict` so programs read
 * every refusal's reason from the same place.
 */
export function enrollmentError(rejection: EnrollRejection): TRPCError {
  switch (rejection.reason) {
    case 'WORKFLOW_NOT_FOUND':
      return new TRPCError({ code: 'NOT_FOUND', message: 'No such workflow in this project.' });
    case 'CONTACT_NOT_FOUND':
      return new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
    case 'WORKFLOW_DISABLED':
      return new TRPCError({
        code: 'PRECONDITION_FAILED',
        message: 'The workflow is disabled; enable it to enroll contacts.',
        cause: new ConflictError({ reason: 'WORKFLOW_DISABLED' }),
      });
    case 'ACTIVE_EXECUTION':
      return conflictError(
        { reason: rejection.reason, executionId: rejection.executionId },
        'The contact already has an active execution of this workflow.',
      );
    case 'REENTRY_BLOCKED':
      return conflictError(
        { reason: rejection.reason, executionId: rejection.executionId },
        'The contact has been through this workflow, which does not allow re-entry.',
      );
  }
}

/** A bulk call's workflow must exist in the caller's project and be enabled before any row is read. */
async function requireEnrollable(db: Db, by: Acting, workflowId: string, action: string): Promise<void> {
  const rejection = await refuseUnlessEnrollable(db, by, workflowId, action);
  if (rejection) throw enrollmentError(rejection);
}

/** BAD_REQUEST for the `csv` field, with the same zodError shape as schema failures. */
function csvError(message: string): TRPCError {
  return new TRPCError({
    code: 'BAD_REQUEST',
    message,
    cause: new ZodRealError([{ code: 'custom', path: ['csv'], message, input: undefined }]),
  });
}

/** enrollMany's rows into a workflow that must be enrollable first, each row answered on its own. */
async function enrollContacts(db: Db, by: Acting, workflowId: string, contacts: EnrollManyRow[]) {
  await requireEnrollable(db, by, workflowId, 'enrollments.enrollMany');
  function* rows(): Generator<BulkRow> {
    for (const raw of contacts) yield parseRow(raw);
  }
  return enrollRows({ db, by, workflowId, action: 'enrollments.enrollMany', source: 'rows' }, rows());
}

export const enrollmentsRouter = router({
  /** Enroll one contact (by id or email) into a workflow. */
  enroll: marketerProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/enrollments',
        tags: ['enrollments'],
        operationId: 'enrollContact',
        summary: 'Enroll a contact into a workflow',
        description:
          'Give contactId or email (a new email creates the contact). 409 CONFLICT with conflict.reason ACTIVE_EXECUTION or REENTRY_BLOCKED when the contact may not enter; 412 when the workflow is disabled.',
        protect: true,
        errorResponses: [400, 401, 403, 404, 409, 412],
      },
    })
    .input(enrollInput)
    .output(enrollOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await enrollAudited(ctx.db, acting(ctx.actor), {
        workflowId: input.workflowId,
        contactId: input.contactId ?? null,
        email: input.email ?? null,
        context: input.context ?? {},
      });
      if (!result.ok) throw enrollmentError(result);
      return { executionId: result.executionId };
    }),

  /** Enroll up to 10,000 contacts by email; each row is answered on its own. */
  enrollMany: marketerProcedure.input(enrollManyInput).mutation(({ ctx, input }) => enrollContacts(ctx.db, acting(ctx.actor), input.workflowId, input.contacts)),

  /** enrollMany for /api/v1, up to 1,000 rows: the same rows, outcomes and audit. */
  enrollBatch: marketerProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/enrollments/batch',
        operationId: 'enrollContacts',
        tags: ['enrollments'],
        summary: 'Enroll up to 1,000 contacts',
        description:
          'Each row (`email`, optional `data`) answered on its own in `results` as enrollMany answers it: `executionId`, or `error` with its reason (INVALID, ACTIVE_EXECUTION, REENTRY_BLOCKED, ...). 500 rows per transaction; the call is audited `enrollments.enrollMany`. A workflow that is not the project\'s is 404, a disabled one 412, before any row is read.',
        protect: true,
        errorResponses: [400, 401, 403, 404, 412],
      },
    })
    .input(enrollBatchInput)
    .output(enrollBatchOutput)
    .mutation(({ ctx, input }) => enrollContacts(ctx.db, acting(ctx.actor), input.workflowId, input.contacts)),

  /** enrollMany from a CSV text: a header row with `email`, other columns into the contact's data. */
  importCsv: marketerProcedure.input(importCsvInput).mutation(async ({ ctx, input }) => {
    const run = { db: ctx.db, by: acting(ctx.actor), workflowId: input.workflowId, action: 'enrollments.importCsv', source: 'csv' };
    const result = await importCsv(run, input.csv);
    if (result.ok) return { results: result.results, summary: result.summary };
    if (result.reason === 'INVALID_CSV') throw csvError(result.message);
    throw enrollmentError(result);
  }),
});
