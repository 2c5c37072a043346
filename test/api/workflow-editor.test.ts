import { describe, expect, it } from 'vitest';
import { drawable, formatPath, pathLines, validateDefinition } from '../../app/workflows/_components/definition';
import { createWorkflowInput } from '../../server/trpc/routers/workflows.schema';
import { waitWorkflow } from '../support/fixtures';

// The workflow editor validates in the browser with workflows.create's own schema: what it
// accepts the server accepts, its issues carry the server's paths, and a JSON syntax error
// says where it is whatever the browser's message says.

describe('the workflow editor', () => {
  it('a JSON syntax error is placed at its line and column', () => {
    const v = validateDefinition('{\n  "name": "x",\n  "steps": [\n}');
    expect(v.ok).toBe(false);
    expect(v.issues).toEqual([expect.objectContaining({ path: '(JSON)', line: 4, column: 1 })]);
    // Text that stops early: the end.
    expect(validateDefinition('{\n  "name": "x",').issues[0]).toMatchObject({ line: 2, column: 15 });
    expect(validateDefinition('   ').issues[0]).toMatchObject({ message: 'the definition is empty' });
  });

  it('a bad transition is reported at the path the server reports, written transitions[3].to', () => {
    const bad = waitWorkflow({ name: 'editor' });
    bad.transitions = [...bad.transitions.slice(0, 3), { from: 'wait', to: 'foo', branch: 'TIMEOUT' }];
    const text = JSON.stringify(bad, null, 2);
    const v = validateDefinition(text);
    // ... on the line of that transition's "to".
    const line = text.split('\n').findIndex((l) => l.includes('"to": "foo"')) + 1;
    expect(v.issues).toEqual([{ path: 'transitions[3].to', message: 'unknown step "foo"', line }]);
    const server = createWorkflowInput.safeParse(bad);
    expect(server.success).toBe(false);
    expect(server.error!.issues.map((i) => formatPath(i.path))).toEqual(v.issues.map((i) => i.path));
    // The server's zodError paths (dotted) read the same way.
    expect(formatPath('transitions.3.to')).toBe('transitions[3].to');
    expect(formatPath('steps.0.config.subject')).toBe('steps[0].config.subject');
    // What can be drawn is drawn: the transition to a missing step is left out.
    expect(drawable(v.draft).transitions).toHaveLength(3);
  });

  it('finds the line of every path, and of the nearest ancestor of a missing key', () => {
    const text = '{\n  "name": "x",\n  "steps": [\n    { "key": "a",\n      "config": { "n": [1,\n 2] } },\n    "s"\n  ]\n}';
    const lines = pathLines(text);
    expect(Object.fromEntries(lines)).toMatchObject({ name: 2, steps: 3, 'steps[0]': 4, 'steps[0].key': 4, 'steps[0].config': 5, 'steps[0].config.n[0]': 5, 'steps[0].config.n[1]': 6, 'steps[1]': 7 });
    const v = validateDefinition(JSON.stringify({ ...waitWorkflow({ name: 'x' }), trigger: 'EVENT' }, null, 2));
    // triggerEvent is missing: the issue is reported at the root, which has no line.
    expect(v.issues).toEqual([{ path: 'triggerEvent', message: 'an EVENT-triggered workflow needs triggerEvent' }]);
  });

  it('accepts exactly what the server accepts, including its storable-text rule', () => {
    expect(validateDefinition(JSON.stringify(waitWorkflow({ name: 'fine' }))).ok).toBe(true);
    const nul = waitWorkflow({ name: 'with \u0000 NUL' });
    expect(validateDefinition(JSON.stringify(nul)).issues.map((i) => i.path)).toContain('name');
  });
});
