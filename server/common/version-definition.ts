import { z } from 'zod';
import { stepInput, storableWorkflowInput, transitionInput } from './workflow-definition';
import { isStorableText } from './inputs';

// A workflow version's definition: its steps and transitions. The workflow's name,
// trigger and flags are the workflow's own, not the version's (docs/versions.md). The
// console's editor and workflows.publish validate with the same rules as workflows.create.

/** The shape of a definition (what a draft may hold: any graph, finished or not). */
export const versionDefinition = z.object({
  steps: z.array(stepInput).max(100),
  transitions: z.array(transitionInput).max(300),
});
export type VersionDefinition = z.output<typeof versionDefinition>;

/** A draft: the shape, with every string storable (a draft may still break the graph rules). */
export const draftDefinition = versionDefinition.superRefine((definition, ctx) => {
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (typeof value === 'string') {
      if (!isStorableText(value)) ctx.addIssue({ code: 'custom', message: 'must be valid Unicode text without NUL characters', path });
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  walk(definition, []);
});

/**
 * What may be published under a workflow with this trigger: the definition rules of
 * workflows.create (types, configs, one trigger, acyclic, reachable, storable text),
 * issues at the same paths (`steps.2.config.subject`).
 */
export function publishableDefinition(workflow: { trigger: 'EVENT' | 'MANUAL'; triggerEvent: string | null }) {
  return versionDefinition.superRefine((definition, ctx) => {
    const whole = storableWorkflowInput.safeParse({
      name: 'workflow',
      trigger: workflow.trigger,
      ...(workflow.triggerEvent ? { triggerEvent: workflow.triggerEvent } : {}),
      steps: definition.steps,
      transitions: definition.transitions,
    });
    if (whole.success) return;
    for (const issue of whole.error.issues) {
      ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path.map((p) => p as string | number) });
    }
  });
}
