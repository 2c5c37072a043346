import { renderTemplate, templateScope } from '../common/templates';
import { stepConfigSchemas, type StepType } from '../common/workflow-definition';
import type { OutgoingMessage } from './claims';

// What each step type does, as a pure function of the step's config, the contact and the
// execution's context. No I/O here: the worker turns the outcome into one claim
// (advance, park, exit or fail), so every effect is fenced by the execution's version.

export interface StepInput {
  type: StepType;
  config: Record<string, unknown>;
  contact: { email: string; data: Record<string, unknown>; subscribed: boolean };
  context: Record<string, unknown>;
}

export type StepOutcome =
  | {
      kind: 'advance';
      branch: string | null;
      output: Record<string, unknown>;
      contactPatch?: Record<string, unknown>;
      message?: OutgoingMessage;
    }
  /** eventName: a WAIT_FOR_EVENT, which an event of that name resolves. */
  | { kind: 'park'; dueInSeconds: number; output: Record<string, unknown>; eventName?: string }
  | { kind: 'exit'; reason: string }
  | { kind: 'fail'; error: string };

/** Read `contact.email`, `contact.data.plan`, `context.order.total`, ... */
export function readField(path: string, input: Pick<StepInput, 'contact' | 'context'>): unknown {
  const [root, ...rest] = path.split('.');
  let value: unknown = root === 'contact' ? input.contact : root === 'context' ? input.context : undefined;
  for (const key of rest) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function compare(op: string, actual: unknown, expected: unknown): boolean {
  switch (op) {
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'not_exists':
      return actual === undefined || actual === null;
    case 'eq':
      return actual === expected || (actual != null && expected != null && String(actual) === String(expected));
    case 'neq':
      return !compare('eq', actual, expected);
    case 'contains':
      if (typeof actual === 'string') return actual.includes(String(expected));
      if (Array.isArray(actual)) return actual.some((v) => compare('eq', v, expected));
      return false;
    default: {
      const a = Number(actual);
      const b = Number(expected);
      if (actual === null || actual === undefined || Number.isNaN(a) || Number.isNaN(b)) return false;
      if (op === 'gt') return a > b;
      if (op === 'gte') return a >= b;
      if (op === 'lt') return a < b;
      return a <= b; // lte
    }
  }
}

export function runStep(input: StepInput): StepOutcome {
  switch (input.type) {
    case 'TRIGGER':
      return { kind: 'advance', branch: null, output: {} };

    case 'SEND_EMAIL': {
      const config = stepConfigSchemas.SEND_EMAIL.parse(input.config);
      if (!input.contact.subscribed) {
        // A marketer expects unsubscribed contacts to be skipped, visibly, not failed.
        return { kind: 'advance', branch: null, output: { skipped: 'contact unsubscribed' } };
      }
      // Liquid (server/common/templates.ts); a template that cannot render throws (a failed attempt).
      const scope = templateScope(input);
      return {
        kind: 'advance',
        branch: null,
        output: { queued: true },
        message: {
          to: input.contact.email,
          subject: renderTemplate(config.subject, scope),
          body: renderTemplate(config.body, scope),
        },
      };
    }

    case 'DELAY': {
      const config = stepConfigSchemas.DELAY.parse(input.config);
      return { kind: 'park', dueInSeconds: config.seconds, output: { delaySeconds: config.seconds } };
    }

    case 'WAIT_FOR_EVENT': {
      const config = stepConfigSchemas.WAIT_FOR_EVENT.parse(input.config);
      return {
        kind: 'park',
        dueInSeconds: config.timeoutSeconds,
        eventName: config.eventName,
        output: { eventName: config.eventName, timeoutSeconds: config.timeoutSeconds },
      };
    }

    case 'CONDITION': {
      const config = stepConfigSchemas.CONDITION.parse(input.config);
      const actual = readField(config.field, input);
      const result = compare(config.op, actual, config.value);
      return {
        kind: 'advance',
        branch: result ? 'yes' : 'no',
        output: { field: config.field, op: config.op, value: config.value ?? null, actual: actual ?? null, result },
      };
    }

    case 'UPDATE_CONTACT': {
      const config = stepConfigSchemas.UPDATE_CONTACT.parse(input.config);
      return { kind: 'advance', branch: null, output: { set: config.set }, contactPatch: config.set };
    }

    case 'EXIT': {
      const config = stepConfigSchemas.EXIT.parse(input.config);
      return { kind: 'exit', reason: config.reason ?? 'exit step reached' };
    }
  }
}
