import { z } from 'zod';
import { isStorableText } from './inputs';
import { describeTemplateIssue, templateIssues } from './templates';

// What a workflow is allowed to be: step types, their configs, their branches, and the
// graph rules (one trigger, acyclic, every step reachable, branches that exist for the
// step type). Validated once, when a workflow is created; the engine then trusts it.

export const STEP_TYPES = [
  'TRIGGER',
  'SEND_EMAIL',
  'DELAY',
  'WAIT_FOR_EVENT',
  'CONDITION',
  'UPDATE_CONTACT',
  'EXIT',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

const name = z.string().trim().min(1).max(200);
const eventName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only');

/** A path into the contact or the execution context, e.g. `contact.data.plan`. */
export const fieldPath = z
  .string()
  .trim()
  .max(200)
  .regex(
    /^(contact\.(email|subscribed|data(\.[A-Za-z0-9_-]+)+)|context(\.[A-Za-z0-9_-]+)+)$/,
    'must be contact.email, contact.subscribed, contact.data.<key>[.<key>…] or context.<key>[.<key>…]',
  );

/** A subject or body Liquid cannot parse: its syntax error, where it is (server/common/templates.ts). */
function liquidSyntax(template: string, ctx: z.RefinementCtx): void {
  for (const issue of templateIssues(template)) ctx.addIssue({ code: 'custom', message: describeTemplateIssue(issue) });
}

const jsonScalar = z.union([z.string().max(1000), z.number().finite(), z.boolean(), z.null()]);

export const stepConfigSchemas = {
  TRIGGER: z.object({}).strict(),
  SEND_EMAIL: z
    .object({
      /** Liquid, as body. */
      subject: z.string().trim().min(1).max(300).superRefine(liquidSyntax),
      /** Plain text in Liquid: {{contact.email}}, {{contact.firstName}} (contact.data.firstName), {{context.x}} (templates.ts). */
      body: z.string().min(1).max(50_000).superRefine(liquidSyntax),
    })
    .strict(),
  DELAY: z.object({ seconds: z.number().int().min(0).max(365 * 86400) }).strict(),
  WAIT_FOR_EVENT: z
    .object({
      eventName,
      timeoutSeconds: z.number().int().min(0).max(365 * 86400),
    })
    .strict(),
  CONDITION: z
    .object({
      field: fieldPath,
      op: z.enum(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists', 'not_exists']),
      value: jsonScalar.optional(),
    })
    .strict()
    .refine((c) => c.op === 'exists' || c.op === 'not_exists' || c.value !== undefined, {
      message: 'value is required for this operator',
      path: ['value'],
    }),
  UPDATE_CONTACT: z
    .object({
      /** Keys merged into contact.data; null removes a key. */
      set: z
        .record(z.string().regex(/^[A-Za-z0-9_-]{1,100}$/), jsonScalar)
        .refine((o) => Object.keys(o).length >= 1 && Object.keys(o).length <= 50, '1 to 50 keys'),
    })
    .strict(),
  EXIT: z.object({ reason: z.string().trim().max(200).optional() }).strict(),
} satisfies Record<StepType, z.ZodType>;

export type StepConfig<T extends StepType> = z.infer<(typeof stepConfigSchemas)[T]>;

/** The branches each step type may leave by. null is the plain "next". */
export const BRANCHES: Record<StepType, readonly (string | null)[]> = {
  TRIGGER: [null],
  SEND_EMAIL: [null],
  DELAY: [null],
  WAIT_FOR_EVENT: ['EVENT', 'TIMEOUT'],
  CONDITION: ['yes', 'no'],
  UPDATE_CONTACT: [null],
  EXIT: [],
};

const stepKey = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9_-]+$/, 'lower-case letters, digits, _ and - only');

export const stepInput = z.object({
  key: stepKey,
  type: z.enum(STEP_TYPES),
  name,
  config: z.record(z.string(), z.unknown()).default({}),
});

export const transitionInput = z.object({
  from: stepKey,
  to: stepKey,
  branch: z.enum(['yes', 'no', 'EVENT', 'TIMEOUT']).nullable().default(null),
});

export const workflowInput = z
  .object({
    name,
    description: z.string().trim().max(2000).optional(),
    trigger: z.enum(['EVENT', 'MANUAL']),
    triggerEvent: eventName.optional(),
    allowReentry: z.boolean().default(false),
    enabled: z.boolean().default(true),
    steps: z.array(stepInput).min(2).max(100),
    transitions: z.array(transitionInput).max(300),
  })
  .superRefine((wf, ctx) => {
    for (const issue of graphIssues(wf)) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  });

export type WorkflowInput = z.input<typeof workflowInput>;

interface GraphIssue {
  message: string;
  path: (string | number)[];
}

/** Every reason a workflow graph cannot run, with a path into the input. */
export function graphIssues(wf: {
  trigger: 'EVENT' | 'MANUAL';
  triggerEvent?: string | undefined;
  steps: { key: string; type: StepType; config: Record<string, unknown> }[];
  transitions: { from: string; to: string; branch: string | null }[];
}): GraphIssue[] {
  const issues: GraphIssue[] = [];
  if (wf.trigger === 'EVENT' && !wf.triggerEvent) {
    issues.push({ message: 'an EVENT-triggered workflow needs triggerEvent', path: ['triggerEvent'] });
  }
  if (wf.trigger === 'MANUAL' && wf.triggerEvent) {
    issues.push({ message: 'triggerEvent is only for EVENT-triggered workflows', path: ['triggerEvent'] });
  }

  const byKey = new Map<string, (typeof wf.steps)[number]>();
  wf.steps.forEach((step, i) => {
    if (byKey.has(step.key)) issues.push({ message: `duplicate step key "${step.key}"`, path: ['steps', i, 'key'] });
    byKey.set(step.key, step);
    const parsed = stepConfigSchemas[step.type].safeParse(step.config);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        issues.push({ message: issue.message, path: ['steps', i, 'config', ...issue.path.map((p) => p as string | number)] });
      }
    }
  });

  const triggers = wf.steps.filter((s) => s.type === 'TRIGGER');
  if (triggers.length !== 1) issues.push({ message: 'a workflow has exactly one TRIGGER step', path: ['steps'] });

  const seen = new Set<string>();
  wf.transitions.forEach((t, i) => {
    const from = byKey.get(t.from);
    const to = byKey.get(t.to);
    if (!from) issues.push({ message: `unknown step "${t.from}"`, path: ['transitions', i, 'from'] });
    if (!to) issues.push({ message: `unknown step "${t.to}"`, path: ['transitions', i, 'to'] });
    if (from && !BRANCHES[from.type].includes(t.branch)) {
      const allowed = BRANCHES[from.type].map((b) => b ?? 'null');
      issues.push({
        message: `a ${from.type} step cannot leave by branch ${t.branch ?? 'null'} (allowed: ${allowed.join(', ') || 'none'})`,
        path: ['transitions', i, 'branch'],
      });
    }
    if (to?.type === 'TRIGGER') issues.push({ message: 'nothing may lead into the TRIGGER step', path: ['transitions', i, 'to'] });
    const id = `${t.from}\u0000${t.branch}`;
    if (seen.has(id)) {
      issues.push({ message: `step "${t.from}" has two transitions for branch ${t.branch ?? 'null'}`, path: ['transitions', i] });
    }
    seen.add(id);
  });
  if (issues.length > 0) return issues;

  // CONDITION must say where both answers go; other branches may end the execution.
  wf.steps.forEach((step, i) => {
    if (step.type !== 'CONDITION') return;
    for (const branch of ['yes', 'no']) {
      if (!wf.transitions.some((t) => t.from === step.key && t.branch === branch)) {
        issues.push({ message: `CONDITION "${step.key}" has no "${branch}" transition`, path: ['steps', i] });
      }
    }
  });

  // Acyclic and fully reachable from the trigger.
  const next = new Map<string, string[]>();
  for (const t of wf.transitions) next.set(t.from, [...(next.get(t.from) ?? []), t.to]);
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (key: string, trail: string[]): void => {
    if (state.get(key) === 'done') return;
    if (state.get(key) === 'visiting') {
      issues.push({ message: `workflows are acyclic; cycle: ${[...trail, key].join(' -> ')}`, path: ['transitions'] });
      return;
    }
    state.set(key, 'visiting');
    for (const to of next.get(key) ?? []) visit(to, [...trail, key]);
    state.set(key, 'done');
  };
  const trigger = triggers[0]!;
  visit(trigger.key, []);
  wf.steps.forEach((step, i) => {
    if (!state.has(step.key)) {
      issues.push({ message: `step "${step.key}" cannot be reached from the trigger`, path: ['steps', i] });
      visit(step.key, []); // still report cycles among unreachable steps
    }
  });
  return issues;
}

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
 * The definition (types, configs, graph rules) plus text PostgreSQL can store: what
 * workflows.create accepts and the console's editor checks before sending, so a bad graph
 * is a BAD_REQUEST with paths into the input, and the editor shows the same paths.
 */
export const storableWorkflowInput = workflowInput.superRefine((wf, ctx) => {
  const found: (string | number)[][] = [];
  unstorableStrings(wf, [], found);
  for (const path of found) ctx.addIssue({ code: 'custom', message: 'must be valid Unicode text without NUL characters', path });
});
