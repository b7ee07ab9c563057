import { describe, expect, it } from 'vitest';
import { defaultConfig, fromDraft, parseLiteral, toDraft } from '../../web/src/pages/workflows/config.js';

/** A stored config through the side panel's form and back, unchanged. */
const roundTrip = (type: Parameters<typeof fromDraft>[0], config: Record<string, unknown>) => fromDraft(type, toDraft(config));

describe('step config forms', () => {
  it('round-trips every step type', () => {
    const cases: [Parameters<typeof fromDraft>[0], Record<string, unknown>][] = [
      ['SEND_EMAIL', { templateId: 't-1' }],
      ['SEND_EMAIL', { templateId: 't-1', recipient: { type: 'CUSTOM', customEmail: 'ops@example.com' } }],
      ['DELAY', { amount: 2, unit: 'days' }],
      ['WAIT_FOR_EVENT', { eventName: 'paid' }],
      ['WAIT_FOR_EVENT', { eventName: 'paid', timeout: 7200 }],
      ['CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' }],
      ['CONDITION', { field: 'data.age', operator: 'greaterThan', value: 30 }],
      ['CONDITION', { field: 'email', operator: 'exists' }],
      ['CONDITION', { field: 'createdAt', operator: 'within', value: 3, unit: 'days' }],
      ['CONDITION', { condition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@' }] }] } }],
      ['WEBHOOK', { url: 'https://x.test/h', method: 'PUT', headers: { 'X-Key': 'a:b' }, body: { a: [1, 2] } }],
      ['UPDATE_CONTACT', { updates: { tier: 'gold', score: 3, vip: true, old: null } }],
      ['UPDATE_CONTACT', { subscribed: false }],
      ['EXIT', { reason: 'Done' }],
      ['EXIT', {}],
    ];
    for (const [type, config] of cases) expect(roundTrip(type, config), `${type} ${JSON.stringify(config)}`).toEqual({ config, errors: {} });
  });

  it('checks what the form can before the API', () => {
    expect(fromDraft('SEND_EMAIL', toDraft({})).errors).toEqual({ 'config.templateId': 'Choose a template' });
    expect(fromDraft('DELAY', { ...toDraft({}), amount: '0' }).errors).toEqual({ 'config.amount': 'A number greater than 0' });
    expect(fromDraft('WAIT_FOR_EVENT', toDraft({})).errors).toHaveProperty(['config.eventName']);
    expect(fromDraft('WEBHOOK', { ...toDraft({ url: 'https://x.test' }), headers: 'no colon' }).errors).toHaveProperty(['config.headers']);
    expect(fromDraft('WEBHOOK', { ...toDraft({ url: 'https://x.test' }), body: '{oops' }).errors).toEqual({ 'config.body': 'Not valid JSON' });
    expect(fromDraft('UPDATE_CONTACT', toDraft({})).errors).toHaveProperty(['config.updates']);
    expect(fromDraft('CONDITION', { ...toDraft({ condition: {} }), tree: '[' }).errors).toEqual({ 'config.condition': 'Not valid JSON' });
  });

  it('types literal values and starts each type from a usable config', () => {
    expect([parseLiteral('42'), parseLiteral('-1.5'), parseLiteral('true'), parseLiteral('null'), parseLiteral('pro'), parseLiteral('007a'), parseLiteral('01234'), parseLiteral('0.5')]).toEqual([42, -1.5, true, null, 'pro', '007a', '01234', 0.5]);
    expect(fromDraft('DELAY', toDraft(defaultConfig('DELAY')))).toEqual({ config: { amount: 1, unit: 'days' }, errors: {} });
  });
});
