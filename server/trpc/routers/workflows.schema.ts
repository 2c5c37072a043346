import { z } from 'zod';
import { id } from '../../common/inputs';
import { storableWorkflowInput } from '../../common/workflow-definition';

/** workflows.create's input: the shared definition, with every string storable (server/common/workflow-definition.ts). */
export const createWorkflowInput = storableWorkflowInput;

export const getWorkflowInput = z.object({ id });

export const setWorkflowEnabledInput = z.object({ id, enabled: z.boolean() });
