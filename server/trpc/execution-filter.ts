import { TRPCError } from '@trpc/server';
import type { z } from 'zod';
import type { DbTx } from '../db';
import { contactInProject, type ExecutionFilter } from '../read/executions';
import { id as idSchema } from '../common/inputs';
import type { executionFilterInput } from './routers/executions.schema';
import { requireWorkflow } from './scope';

// An executions filter as a caller gives it (executions.list, a bulk repair over a list's
// filter) made into the read model's: the workflow must be the caller's project's, and
// `contact` is a contact's id (which must be the project's) or the start of an email.

export type ExecutionFilterInput = z.infer<typeof executionFilterInput>;

export async function executionFilterOf(
  db: DbTx,
  projectId: string,
  input: ExecutionFilterInput,
): Promise<Omit<ExecutionFilter, 'limit' | 'cursor' | 'before'>> {
  await requireWorkflow(db, projectId, input.workflowId);
  let contact: ExecutionFilter['contact'] = null;
  if (input.contact && idSchema.safeParse(input.contact).success) {
    if (!(await contactInProject(db, projectId, input.contact))) {
      throw new TRPCError({ code: 'NOT_FOUND', message: 'No such contact in this project.' });
    }
    contact = { id: input.contact };
  } else if (input.contact) {
    contact = { emailPrefix: input.contact };
  }
  return {
    projectId,
    workflowId: input.workflowId,
    stepId: input.stepId,
    status: input.status,
    stuck: input.stuck,
    contact,
    since: input.since,
    until: input.until,
  };
}
