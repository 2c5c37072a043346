import { z } from 'zod';
import { id } from '../../common/inputs';
import { storableWorkflowInput } from '../../common/workflow-definition';
import { draftDefinition, versionDefinition } from '../../common/version-definition';
import { idOutput, pageOutput, timestamp } from '../rest';

/** workflows.create's input: the shared definition, with every string storable (server/common/workflow-definition.ts). */
export const createWorkflowInput = storableWorkflowInput;

const versionNumber = z.number().int().min(1).max(1_000_000);

/** `version` absent: the latest published version. */
export const getWorkflowInput = z.object({ id, version: versionNumber.optional() });

export const setWorkflowEnabledInput = z.object({ id, enabled: z.boolean() });

export const workflowVersionsInput = z.object({ workflowId: id });

/** publish and publishPreview: the definition's shape here; its graph rules in the handler (paths into `definition`). */
export const publishInput = z.object({ workflowId: id, basedOnVersion: versionNumber, definition: versionDefinition });

export const saveDraftInput = z.object({ workflowId: id, basedOnVersion: versionNumber, definition: draftDefinition });

export const discardDraftInput = z.object({ workflowId: id });

// ---------------------------------------------------------------------------
// /api/v1 (meta.openapi)

export const workflowPageInput = z.object({});

const executionCountsOutput = z.record(z.string(), z.number().int()).meta({ description: 'Executions by status.', example: { RUNNING: 3, WAITING: 12, COMPLETED: 140, EXITED: 2, FAILED: 0, CANCELLED: 1 } });

export const workflowOutput = z.object({
  id: idOutput,
  name: z.string().meta({ example: 'Welcome series' }),
  description: z.string().nullable(),
  trigger: z.enum(['EVENT', 'MANUAL']),
  triggerEvent: z.string().nullable().meta({ example: 'signup' }),
  enabled: z.boolean(),
  allowReentry: z.boolean(),
  createdAt: timestamp,
  latestVersion: z.number().int().meta({ example: 2 }),
  stepCount: z.number().int().meta({ description: 'Steps of the latest version.' }),
  executions: executionCountsOutput,
  countsAsOf: timestamp.nullable().meta({ description: 'Null: counted for this call; else when the counts were counted.' }),
});

/** The project's workflows are few: one page, `next` always null (the shape of every list). */
export const workflowPageOutput = pageOutput(workflowOutput);

export const workflowDetailInput = z.object({ id, version: z.coerce.number().int().min(1).max(1_000_000).optional().meta({ description: 'The version to show the graph of (default: the latest).', example: 1 }) });

export const workflowDetailOutput = z.looseObject({
  id: idOutput,
  name: z.string(),
  description: z.string().nullable(),
  trigger: z.enum(['EVENT', 'MANUAL']),
  triggerEvent: z.string().nullable(),
  enabled: z.boolean(),
  allowReentry: z.boolean(),
  version: z.object({ number: z.number().int(), basedOn: z.number().int().nullable(), publishedBy: z.string(), publishedAt: timestamp }),
  latestVersion: z.number().int(),
  steps: z.array(z.looseObject({ id: idOutput, key: z.string(), type: z.string(), name: z.string(), config: z.unknown(), live: z.number().int() })),
  transitions: z.array(z.looseObject({ from: z.string(), to: z.string(), branch: z.string().nullable() })),
  versions: z
    .array(z.object({ number: z.number().int(), basedOn: z.number().int().nullable(), publishedBy: z.string(), publishedAt: timestamp, stepCount: z.number().int(), active: z.number().int() }))
    .meta({ description: 'Every published version, newest first: who published it and when, its step count, its active executions.' }),
});
