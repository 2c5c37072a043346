import { z } from 'zod';
import { id } from '../../common/inputs';
import { storableWorkflowInput } from '../../common/workflow-definition';
import { draftDefinition, versionDefinition } from '../../common/version-definition';

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
