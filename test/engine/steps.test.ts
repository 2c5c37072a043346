import { describe, expect, it } from 'vitest';
import { renderTemplate, templateScope } from '../../server/common/templates';
import { readField, runStep, type StepInput } from '../../server/engine/steps';

const contact = { email: 'ann@example.com', data: { plan: 'pro', visits: 7, tags: ['a', 'b'], address: { city: 'Oslo' } }, subscribed: true };
const context = { order: { total: 120 }, trigger: { name: 'purchase' } };
const input = (type: StepInput['type'], config: Record<string, unknown>, over: Partial<StepInput> = {}): StepInput => ({
  type,
  config,
  contact,
  context,
  ...over,
});

describe('step types', () => {
  it('TRIGGER advances by the plain next transition', () => {
    expect(runStep(input('TRIGGER', {}))).toEqual({ kind: 'advance', branch: null, output: {} });
  });

  it('SEND_EMAIL queues one rendered message to the contact', () => {
    const out = runStep(input('SEND_EMAIL', { subject: 'Hi {{contact.data.address.city}}', body: 'Total {{context.order.total}}{{contact.data.nope}}' }));
    expect(out).toEqual({
      kind: 'advance',
      branch: null,
      output: { queued: true },
      message: { to: 'ann@example.com', subject: 'Hi Oslo', body: 'Total 120' },
    });
  });

  it('SEND_EMAIL skips an unsubscribed contact visibly, without a message', () => {
    const out = runStep(input('SEND_EMAIL', { subject: 's', body: 'b' }, { contact: { ...contact, subscribed: false } }));
    expect(out).toEqual({ kind: 'advance', branch: null, output: { skipped: 'contact unsubscribed' } });
  });

  it('DELAY parks for its seconds; WAIT_FOR_EVENT parks until its timeout', () => {
    expect(runStep(input('DELAY', { seconds: 90 }))).toMatchObject({ kind: 'park', dueInSeconds: 90 });
    expect(runStep(input('WAIT_FOR_EVENT', { eventName: 'purchase', timeoutSeconds: 3600 }))).toMatchObject({
      kind: 'park',
      dueInSeconds: 3600,
      output: { eventName: 'purchase' },
    });
  });

  it.each([
    [{ field: 'contact.data.plan', op: 'eq', value: 'pro' }, 'yes'],
    [{ field: 'contact.data.plan', op: 'eq', value: 'free' }, 'no'],
    [{ field: 'contact.data.plan', op: 'neq', value: 'free' }, 'yes'],
    [{ field: 'contact.data.visits', op: 'gt', value: 5 }, 'yes'],
    [{ field: 'contact.data.visits', op: 'gte', value: 7 }, 'yes'],
    [{ field: 'contact.data.visits', op: 'lt', value: 7 }, 'no'],
    [{ field: 'contact.data.visits', op: 'lte', value: '7' }, 'yes'],
    [{ field: 'contact.data.tags', op: 'contains', value: 'b' }, 'yes'],
    [{ field: 'contact.email', op: 'contains', value: '@example' }, 'yes'],
    [{ field: 'context.order.total', op: 'gt', value: 100 }, 'yes'],
    [{ field: 'context.order.coupon', op: 'exists' }, 'no'],
    [{ field: 'context.order.coupon', op: 'not_exists' }, 'yes'],
    [{ field: 'contact.data.missing', op: 'gt', value: 1 }, 'no'],
    [{ field: 'contact.subscribed', op: 'eq', value: true }, 'yes'],
  ])('CONDITION %o takes the %s branch', (config, branch) => {
    expect(runStep(input('CONDITION', config))).toMatchObject({ kind: 'advance', branch });
  });

  it('UPDATE_CONTACT carries the keys to merge (null removes)', () => {
    expect(runStep(input('UPDATE_CONTACT', { set: { customer: true, plan: null } }))).toMatchObject({
      kind: 'advance',
      contactPatch: { customer: true, plan: null },
    });
  });

  it('EXIT ends the execution with its reason', () => {
    expect(runStep(input('EXIT', { reason: 'done' }))).toEqual({ kind: 'exit', reason: 'done' });
    expect(runStep(input('EXIT', {}))).toEqual({ kind: 'exit', reason: 'exit step reached' });
  });

  it('a config the engine cannot read throws (the worker records a failed attempt)', () => {
    expect(() => runStep(input('SEND_EMAIL', { template_id: 17 }))).toThrow();
  });

  it('reads nested fields and renders placeholders defensively', () => {
    expect(readField('contact.data.address.city', { contact, context })).toBe('Oslo');
    expect(readField('contact.data.plan.length', { contact, context })).toBeUndefined();
    expect(renderTemplate('{{ context.trigger.name }}/{{context.order}}', templateScope({ contact, context }))).toBe('purchase/{"total":120}');
  });
});
