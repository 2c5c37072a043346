import { describe, expect, it } from 'vitest';
import {
  describeTemplateIssue,
  renderTemplate,
  TemplateError,
  templateIssues,
  templateScope,
  type TemplateContact,
} from '../../server/common/templates';
import { stepConfigSchemas, workflowInput } from '../../server/common/workflow-definition';
import { runStep } from '../../server/engine/steps';

// Email templates are Liquid (server/common/templates.ts), and every template written for
// the placeholders before it renders as it did: {{contact.email}}, {{contact.data.x}} and
// {{context.x}} filled, unknown fields empty, objects and lists as JSON. Beyond that:
// {{contact.<key>}} is contact.data.<key>, filters, and nothing that reaches past the scope.

const contact: TemplateContact = {
  email: 'ann@example.com',
  subscribed: true,
  data: { plan: 'pro', visits: 7, tags: ['a', 'b'], address: { city: 'Oslo' }, 'first-name': 'Ann', firstName: 'Ann', email: 'data@example.com', subscribed: 'no' },
};
const context = { order: { total: 120, lines: [{ sku: 'x' }] }, trigger: { name: 'purchase' } };
const render = (template: string) => renderTemplate(template, templateScope({ contact, context }));

describe('renderTemplate: the placeholders of before, unchanged', () => {
  it.each([
    ['{{contact.email}}', 'ann@example.com'],
    ['{{ contact.email }}', 'ann@example.com'],
    ['{{contact.data.plan}}/{{contact.data.visits}}', 'pro/7'],
    ['{{contact.data.address.city}}', 'Oslo'],
    ['{{contact.data.first-name}}', 'Ann'],
    ['{{contact.subscribed}}', 'true'],
    ['{{ context.trigger.name }}/{{context.order}}', 'purchase/{"total":120,"lines":[{"sku":"x"}]}'],
    ['{{contact.data.tags}}', '["a","b"]'],
    ['{{contact.data.address}}', '{"city":"Oslo"}'],
    ['[{{contact.data.nope}}][{{contact.data.nope.deeper}}][{{context.nope}}][{{nope}}]', '[][][][]'],
    ['Total {{context.order.total}}{{contact.data.nope}}', 'Total 120'],
    ['no placeholders: 100% {plain} text', 'no placeholders: 100% {plain} text'],
  ])('%s → %s', (template, expected) => {
    expect(render(template)).toBe(expected);
  });
});

describe('renderTemplate: Liquid', () => {
  it('{{contact.<key>}} is contact.data.<key>, except the contact’s own email, subscribed, id and data', () => {
    expect(render('{{contact.firstName}} {{contact.plan}} {{contact.address.city}}')).toBe('Ann pro Oslo');
    expect(render('{{contact.email}} {{contact.subscribed}} {{contact.data.email}}')).toBe('ann@example.com true data@example.com');
    const withId = templateScope({ contact: { ...contact, id: 'c-1', data: { id: 'data-id', data: 'x' } } });
    expect(renderTemplate('{{contact.id}} {{contact.data.id}} {{contact.data}}', withId)).toBe('c-1 data-id {"id":"data-id","data":"x"}');
  });

  it('filters, conditions and loops; no contact renders empty', () => {
    expect(render('{{ contact.firstName | upcase }} {{ contact.nope | default: "friend" }} {{ context.order.total | plus: 5 }}')).toBe('ANN friend 125');
    expect(render('{% if contact.plan == "pro" %}Pro{% else %}Free{% endif %}: {% for t in contact.tags %}{{t}}{% endfor %}')).toBe('Pro: ab');
    expect(render('{{ contact.tags | join: ", " }}')).toBe('a, b');
    expect(renderTemplate('[{{contact.email}}][{{contact.firstName}}]', templateScope({ contact: null }))).toBe('[][]');
  });

  it('nothing past the scope: no prototype, no files', () => {
    expect(render('[{{contact.constructor}}][{{contact.__proto__}}][{{contact.email.constructor}}][{{context.toString}}]')).toBe('[][][][]');
    for (const tag of ['include', 'render', 'layout']) {
      expect(() => render(`{% ${tag} "/etc/passwd" %}`)).toThrow(TemplateError);
      expect(templateIssues(`{% ${tag} 'x' %}`)).toEqual([{ message: `{% ${tag} %} is not available in email templates`, line: 1, column: 1 }]);
    }
  });

  it('a render past its bounds is a TemplateError, not a hang', () => {
    expect(() => render('{% for i in (1..100000000) %}x{% endfor %}')).toThrow(TemplateError);
    expect(() => render('{% for i in (1..5000) %}{% for j in (1..5000) %}xx{% endfor %}{% endfor %}')).toThrow(TemplateError);
  });
});

describe('templateIssues', () => {
  it('none for a template that parses', () => {
    expect(templateIssues('Hi {{contact.firstName | default: "there"}}, {% if contact.plan %}pro{% endif %}')).toEqual([]);
  });

  it('a syntax error with its line and column, and as a sentence', () => {
    const [issue] = templateIssues('Hello\n\n    {% if contact.plan %}pro');
    expect(issue).toEqual({ message: 'tag {% if contact.plan %} not closed', line: 3, column: 5 });
    expect(describeTemplateIssue(issue!)).toBe('tag {% if contact.plan %} not closed at line 3, column 5');
    expect(templateIssues('{{ contact.email | nope }}')).toEqual([{ message: 'undefined filter: nope', line: 1, column: 1 }]);
    expect(templateIssues('Hi {{ contact.email')).toEqual([{ message: 'output "{{ contact.email" not closed', line: 1, column: 4 }]);
  });
});

describe('a SEND_EMAIL config that does not parse', () => {
  it('is refused at subject or body with the error and its place', () => {
    const parsed = stepConfigSchemas.SEND_EMAIL.safeParse({ subject: 'Hi {{ x | nope }}', body: 'a\nb\n    {% unless x %}' });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['subject', 'undefined filter: nope at line 1, column 4'],
      ['body', 'tag {% unless x %} not closed at line 3, column 5'],
    ]);
  });

  it('makes a workflow definition BAD at steps.N.config.body', () => {
    const wf = workflowInput.safeParse({
      name: 'liquid',
      trigger: 'MANUAL',
      steps: [
        { key: 'start', type: 'TRIGGER', name: 'Start' },
        { key: 'mail', type: 'SEND_EMAIL', name: 'Mail', config: { subject: 'Hi', body: '{% if %}' } },
      ],
      transitions: [{ from: 'start', to: 'mail' }],
    });
    expect(wf.success).toBe(false);
    expect(wf.error!.issues.map((i) => i.path.join('.'))).toEqual(['steps.1.config.body']);
  });

  it('fails the step (the worker records a failed attempt) rather than sending the raw text', () => {
    expect(() => runStep({ type: 'SEND_EMAIL', config: { subject: 'Hi', body: '{% if x %}' }, contact, context })).toThrow();
  });
});
