import { z } from 'zod';
import { workflowInput } from '../../engine/definition';
import { id, isStorableText } from '../../inputs';

/** Every string anywhere in a value that PostgreSQL would refuse, with its path. */
function unstorableStrings(value: unknown, path: (string | number)[], found: (string | number)[][]): void {
  if (found.length >= 10) return;
  if (typeof value === 'string') {
    if (!isStorableText(value)) found.push(path);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => unstorableStrings(v, [...path, i], found));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) unstorableStrings(v, [...path, k], found);
  }
}

/**
 * The engine's definition of a workflow (types, configs, graph rules), so a bad graph is
 * a BAD_REQUEST with paths into the input; plus what the engine leaves to its callers:
 * text PostgreSQL can store.
 */
export const createWorkflowInput = workflowInput.superRefine((wf, ctx) => {
  const found: (string | number)[][] = [];
  unstorableStrings(wf, [], found);
  for (const path of found) ctx.addIssue({ code: 'custom', message: 'must be valid Unicode text without NUL characters', path });
});

export const getWorkflowInput = z.object({ id });

export const setWorkflowEnabledInput = z.object({ id, enabled: z.boolean() });
