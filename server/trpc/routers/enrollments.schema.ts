import { z } from 'zod';
import { BULK_BYTES_MAX, BULK_ROWS_MAX } from '../../common/enrollment-csv';
import { email, id, jsonObject, type JsonObject } from '../../common/inputs';

export const enrollInput = z
  .object({
    workflowId: id,
    /** An existing contact of the project... */
    contactId: id.optional(),
    /** ...or an email, created as a contact if new. */
    email: email.optional(),
    /** Available to the workflow's steps as `context.<key>`. */
    context: jsonObject.optional(),
  })
  .superRefine((input, ctx) => {
    if ((input.contactId === undefined) === (input.email === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'give either contactId or email (exactly one)', path: ['email'] });
    }
  });

export const enrollOutput = z.object({ executionId: z.string().meta({ example: '7c9e6679-7425-40de-944b-e07fc1f90ae7' }) });

/** An enrollMany row. Typed for clients, but checked row by row in the handler, not here. */
export interface EnrollManyRow {
  email: string;
  data?: JsonObject;
}

/**
 * The rows' serialized size, stopping early past `max`. Values nested deeper than a row
 * may be are not descended into (the row is refused for its depth anyway), so a hostile
 * nesting cannot overflow the stack here.
 */
function approximateBytes(value: unknown, max: number, depth = 0): number {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object' || depth > 8) return 8;
  let total = 2;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    total += approximateBytes(item, max, depth + 1) + 1;
    if (total > max) return total;
  }
  return total + (Array.isArray(value) ? 0 : Object.keys(value).reduce((n, k) => n + k.length + 3, 0));
}

export const enrollManyInput = z.object({
  workflowId: id,
  // Rows pass unchecked here so that one bad row cannot fail the call: the handler
  // validates each on its own and reports it in its result.
  contacts: z
    .array(z.custom<EnrollManyRow>(() => true))
    .min(1)
    .max(BULK_ROWS_MAX)
    .superRefine((rows, ctx) => {
      if (approximateBytes(rows, BULK_BYTES_MAX) > BULK_BYTES_MAX) {
        ctx.addIssue({ code: 'custom', message: `at most ${BULK_BYTES_MAX / 1024 / 1024} MB of rows per call` });
      }
    }),
});

export const importCsvInput = z.object({
  workflowId: id,
  /** A header row with an `email` column; every other column becomes a key of the contact's data. */
  csv: z.string().min(1).max(BULK_BYTES_MAX),
});

/** The most rows of one POST /api/v1/enrollments/batch (enrollments.enrollBatch). */
export const ENROLL_BATCH_MAX = 1000;

/** enrollMany's input, bounded for /api/v1 (the console's CSV import takes up to BULK_ROWS_MAX). */
export const enrollBatchInput = z.object({
  workflowId: id.meta({ example: '0b5e2f4c-1d3a-4e6f-8a9b-0c1d2e3f4a5b' }),
  contacts: z
    .array(z.custom<EnrollManyRow>(() => true).meta({ type: 'object', additionalProperties: true, description: 'A row: `email` and optional `data` (merged into the contact).', example: { email: 'ada@example.com', data: { plan: 'pro' } } }))
    .min(1)
    .max(ENROLL_BATCH_MAX),
});

export const enrollBatchOutput = z.object({
  results: z.array(
    z.object({
      /** 1-based position in `contacts`. */
      row: z.number().int(),
      email: z.string().nullable(),
      executionId: z.string().optional(),
      error: z
        .object({
          reason: z.string().meta({ description: 'INVALID, ACTIVE_EXECUTION, REENTRY_BLOCKED, WORKFLOW_DISABLED, WORKFLOW_NOT_FOUND or FAILED.' }),
          message: z.string(),
          executionId: z.string().optional(),
        })
        .optional(),
    }),
  ),
  summary: z.object({ rows: z.number().int(), enrolled: z.number().int(), failed: z.number().int(), reasons: z.record(z.string(), z.number().int()) }),
});
