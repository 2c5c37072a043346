import type { DbTx } from '../db';
import { insertExecution } from './claims';
import { resolveContact } from './contacts';

// One enrollment function for every entry point: the API, the console, CSV import and
// tracked events. The read-side checks only produce the friendlier answer; the unique
// indexes behind insertExecution decide every race (I1, I3, and once-only re-entry).

export interface EnrollInput {
  projectId: string;
  workflowId: string;
  /** Either an existing contact of the project... */
  contactId?: string | null;
  /** ...or an email, upserted as a contact of the project. */
  email?: string | null;
  contactData?: Record<string, unknown>;
  context?: Record<string, unknown>;
  /** The tracked event that caused this enrollment (I3: at most one per workflow). */
  sourceEventId?: string | null;
}

export type EnrollRejection =
  | { reason: 'WORKFLOW_NOT_FOUND' }
  | { reason: 'WORKFLOW_DISABLED' }
  | { reason: 'CONTACT_NOT_FOUND' }
  | { reason: 'ACTIVE_EXECUTION'; executionId: string }
  | { reason: 'REENTRY_BLOCKED'; executionId: string };

export type EnrollResult =
  | { ok: true; executionId: string; created: boolean }
  | ({ ok: false } & EnrollRejection);

interface WorkflowForEnrollment {
  id: string;
  enabled: boolean;
  allowReentry: boolean;
  triggerStepId: string | null;
}

interface Blocking {
  id: string;
  active: boolean;
  sameEvent: boolean;
}

/** The execution that keeps this contact out, if any (or that this event already made). */
async function findBlocking(
  db: DbTx,
  workflow: WorkflowForEnrollment,
  contactId: string,
  sourceEventId: string | null,
): Promise<Blocking | null> {
  const rows = await db.$queryRaw<Blocking[]>`
    SELECT id, status IN ('RUNNING', 'WAITING') AS active,
           (${sourceEventId}::uuid IS NOT NULL AND "sourceEventId" = ${sourceEventId}::uuid) AS "sameEvent"
      FROM "WorkflowExecution"
     WHERE "workflowId" = ${workflow.id}::uuid
       AND (("contactId" = ${contactId}::uuid
             AND (status IN ('RUNNING', 'WAITING') OR "enrollOnce" OR NOT ${workflow.allowReentry}))
            OR ("sourceEventId" = ${sourceEventId}::uuid))
     ORDER BY 3 DESC, 2 DESC, "startedAt" DESC
     LIMIT 1`;
  return rows[0] ?? null;
}

function rejectionFor(blocking: Blocking): EnrollResult {
  if (blocking.sameEvent) return { ok: true, executionId: blocking.id, created: false };
  if (blocking.active) return { ok: false, reason: 'ACTIVE_EXECUTION', executionId: blocking.id };
  return { ok: false, reason: 'REENTRY_BLOCKED', executionId: blocking.id };
}

export async function enroll(db: DbTx, input: EnrollInput): Promise<EnrollResult> {
  const [workflow] = await db.$queryRaw<WorkflowForEnrollment[]>`
    SELECT w.id, w.enabled, w."allowReentry",
           (SELECT s.id FROM "WorkflowStep" s WHERE s."workflowId" = w.id AND s.type = 'TRIGGER' LIMIT 1) AS "triggerStepId"
      FROM "Workflow" w
     WHERE w.id = ${input.workflowId}::uuid AND w."projectId" = ${input.projectId}::uuid`;
  if (!workflow || !workflow.triggerStepId) return { ok: false, reason: 'WORKFLOW_NOT_FOUND' };
  if (!workflow.enabled) return { ok: false, reason: 'WORKFLOW_DISABLED' };

  const contactId = await resolveContact(db, input.projectId, {
    contactId: input.contactId,
    email: input.email,
    data: input.contactData,
  });
  if (contactId === null || contactId === 'none') return { ok: false, reason: 'CONTACT_NOT_FOUND' };

  const sourceEventId = input.sourceEventId ?? null;
  const before = await findBlocking(db, workflow, contactId, sourceEventId);
  if (before) return rejectionFor(before);

  const created = await insertExecution(db, {
    projectId: input.projectId,
    workflowId: workflow.id,
    contactId,
    firstStepId: workflow.triggerStepId,
    context: input.context ?? {},
    sourceEventId,
    enrollOnce: !workflow.allowReentry,
  });
  if (created) return { ok: true, executionId: created.id, created: true };

  // Lost a race: a unique index refused the row. The winner has committed (ON CONFLICT
  // waits for it), so it is visible now; name it.
  const winner = await findBlocking(db, workflow, contactId, sourceEventId);
  if (winner) return rejectionFor(winner);
  // The conflicting row was removed again between the two statements: say so plainly.
  throw new Error('enrollment conflicted with an execution that no longer exists; retry');
}
