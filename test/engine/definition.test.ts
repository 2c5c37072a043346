import { describe, expect, it } from 'vitest';
import { workflowInput } from '../../server/common/workflow-definition';
import { waitWorkflow } from '../support/fixtures';

function issues(input: unknown): string[] {
  const r = workflowInput.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('workflow definitions', () => {
  it('accepts a well-formed workflow', () => {
    expect(issues(waitWorkflow())).toEqual([]);
  });

  it('rejects a cycle', () => {
    const wf = waitWorkflow();
    wf.transitions = [...wf.transitions, { from: 'thanks', to: 'hello', branch: null }];
    expect(issues(wf).join('\n')).toMatch(/acyclic; cycle: .*hello/);
  });

  it('rejects a branch the step type does not have, and a second plain next', () => {
    const wf = waitWorkflow();
    wf.transitions = [...wf.transitions, { from: 'hello', to: 'thanks', branch: 'yes' }, { from: 'hello', to: 'reminder', branch: null }];
    const found = issues(wf).join('\n');
    expect(found).toMatch(/a SEND_EMAIL step cannot leave by branch yes/);
    expect(found).toMatch(/step "hello" has two transitions for branch null/);
  });

  it('rejects unreachable steps, missing or extra triggers, and transitions into the trigger', () => {
    const wf = waitWorkflow();
    wf.steps = [...wf.steps, { key: 'orphan', type: 'EXIT', name: 'Orphan', config: {} }, { key: 'start2', type: 'TRIGGER', name: 'Again', config: {} }];
    wf.transitions = [...wf.transitions, { from: 'thanks', to: 'start', branch: null }];
    const found = issues(wf).join('\n');
    expect(found).toMatch(/exactly one TRIGGER/);
    expect(found).toMatch(/nothing may lead into the TRIGGER step/);
  });

  it('requires both answers of a CONDITION and a valid step config, with field paths', () => {
    const found = issues({
      name: 'c',
      trigger: 'EVENT',
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'S', config: {} },
        { key: 'check', type: 'CONDITION', name: 'C', config: { field: 'contact.password', op: 'eq', value: 1 } },
        { key: 'mail', type: 'SEND_EMAIL', name: 'M', config: { subject: '' } },
      ],
      transitions: [
        { from: 'start', to: 'check', branch: null },
        { from: 'check', to: 'mail', branch: 'yes' },
      ],
    });
    expect(found).toContain('triggerEvent: an EVENT-triggered workflow needs triggerEvent');
    expect(found.some((f) => f.startsWith('steps.1.config.field: must be contact.email'))).toBe(true);
    expect(found.some((f) => f.startsWith('steps.2.config.subject'))).toBe(true);
    expect(found.some((f) => f.startsWith('steps.2.config.body'))).toBe(true);
  });

  it('requires the CONDITION "no" branch', () => {
    const found = issues({
      name: 'c',
      trigger: 'MANUAL',
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'S', config: {} },
        { key: 'check', type: 'CONDITION', name: 'C', config: { field: 'contact.email', op: 'exists' } },
        { key: 'done', type: 'EXIT', name: 'D', config: {} },
      ],
      transitions: [
        { from: 'start', to: 'check', branch: null },
        { from: 'check', to: 'done', branch: 'yes' },
      ],
    });
    expect(found.join('\n')).toMatch(/CONDITION "check" has no "no" transition/);
  });
});
