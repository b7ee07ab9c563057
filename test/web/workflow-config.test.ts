import { describe, expect, it } from 'vitest';
import type { Card, DataType, FilterRow } from '../../web/src/pages/segments/conditions.js';
import { conditionProblems, defaultConfig, fromDraft, parseLiteral, toDraft } from '../../web/src/pages/workflows/config.js';

/** A stored config through the side panel's form and back, unchanged. */
const roundTrip = (type: Parameters<typeof fromDraft>[0], config: Record<string, unknown>) => {
  const { config: out, errors } = fromDraft(type, toDraft(config));
  return { config: out, errors };
};

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
      ['CONDITION', { field: 'data.plan', operator: 'exists' }],
      ['CONDITION', { field: 'createdAt', operator: 'within', value: 3, unit: 'days' }],
      ['CONDITION', { field: 'event.plan', operator: 'equals', value: 'pro' }],
      ['CONDITION', { field: 'context.score', operator: 'greaterThanOrEqual', value: 10 }],
      ['CONDITION', { field: 'event.signup', operator: 'triggeredWithin', value: 2, unit: 'hours' }],
      ['CONDITION', { condition: { logic: 'OR', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@' }] }, { filters: [{ field: 'event.vip', operator: 'equals', value: true }] }] } }],
      ['CONDITION', { condition: { logic: 'AND', groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }], conditions: { logic: 'OR', groups: [{ filters: [{ field: 'context.a', operator: 'exists' }] }, { filters: [{ field: 'data.plan', operator: 'notEquals', value: 'free' }] }] } }] } }],
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
    expect(fromDraft('CONDITION', toDraft(defaultConfig('CONDITION'))).errors).toEqual({ 'config.condition': 'Complete the condition' });
  });

  it('types literal values and starts each type from a usable config', () => {
    expect([parseLiteral('42'), parseLiteral('-1.5'), parseLiteral('true'), parseLiteral('null'), parseLiteral('pro'), parseLiteral('007a'), parseLiteral('01234'), parseLiteral('0.5')]).toEqual([42, -1.5, true, null, 'pro', '007a', '01234', 0.5]);
    expect(fromDraft('DELAY', toDraft(defaultConfig('DELAY')))).toEqual({ config: { amount: 1, unit: 'days' }, errors: {} });
  });

  it('CONDITION: a one-filter tree is stored as the single filter; a group of two as {condition}', () => {
    const stored = { condition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@' }] }] } };
    expect(roundTrip('CONDITION', stored).config).toEqual({ field: 'email', operator: 'contains', value: '@' });
    const draft = toDraft({ field: 'event.plan', operator: 'equals', value: 'pro' });
    const [first] = draft.condition.items as FilterRow[];
    const second: FilterRow = { kind: 'filter', id: 'x2', field: 'context.score', operator: 'greaterThan', value: '3', unit: 'days' };
    const two: Card = { ...draft.condition, items: [...draft.condition.items, second] };
    expect(fromDraft('CONDITION', { ...draft, condition: two }).config).toEqual({
      condition: { logic: 'AND', groups: [{ filters: [{ field: 'event.plan', operator: 'equals', value: 'pro' }, { field: 'context.score', operator: 'greaterThan', value: 3 }] }] },
    });
    expect(first?.field).toBe('event.plan');
  });

  it('CONDITION: values take the seen type of a key; unknown keys type numbers and booleans', () => {
    const types = new Map<string, DataType>([['event.code', 'string']]);
    const draft = (field: string, value: string) => toDraft({ field, operator: 'equals', value });
    expect(fromDraft('CONDITION', draft('event.code', '0042'), types).config).toMatchObject({ value: '0042' });
    expect(fromDraft('CONDITION', { ...draft('event.code', 'x'), condition: { ...draft('event.code', 'x').condition, items: [{ kind: 'filter', id: 'q', field: 'event.code', operator: 'equals', value: '42', unit: 'days' }] } }, types).config).toMatchObject({ value: '42' });
    expect(fromDraft('CONDITION', { ...draft('context.n', 'x'), condition: { kind: 'card', id: 'c', logic: 'AND', items: [{ kind: 'filter', id: 'q', field: 'context.n', operator: 'equals', value: '42', unit: 'days' }] } }).config).toMatchObject({ value: 42 });
  });

  it("CONDITION: the builder's problems block the save; the API's 422 lands on the row sent", () => {
    const row = (id: string, field: string, operator: FilterRow['operator'], value = ''): FilterRow => ({ kind: 'filter', id, field, operator, value, unit: 'days' });
    const base = toDraft({});
    const bad = fromDraft('CONDITION', { ...base, condition: { kind: 'card', id: 'root', logic: 'AND', items: [row('a', 'event.', ''), row('b', 'context.n', 'greaterThan', 'abc')] } });
    expect(bad.errors).toEqual({ 'config.condition': 'Complete the condition' });
    expect(bad.condition?.problems.map((p) => [p.id, p.part])).toEqual([
      ['a', 'field'],
      ['b', 'value'],
    ]);
    // A single filter: the API names config.value.
    const single = fromDraft('CONDITION', { ...base, condition: { kind: 'card', id: 'root', logic: 'AND', items: [row('a', 'data.plan', 'equals', 'x')] } });
    expect(single.config).toEqual({ field: 'data.plan', operator: 'equals', value: 'x' });
    if (!single.condition) throw new Error('no condition');
    expect(conditionProblems([{ field: 'config.value', message: 'Value must be…' }], single.condition.sent)).toEqual([{ id: 'a', part: 'value', message: 'Value must be…' }]);
    // A tree: config.condition.<path>.
    const tree = fromDraft('CONDITION', { ...base, condition: { kind: 'card', id: 'root', logic: 'OR', items: [row('a', 'email', 'contains', '@'), row('b', 'event.x', 'greaterThan', '1')] } });
    if (!tree.condition) throw new Error('no condition');
    expect(conditionProblems([{ field: 'config.condition.groups.1.filters.0.operator', message: 'No' }, { field: 'config.condition', message: 'Too deep' }], tree.condition.sent)).toEqual([
      { id: 'b', part: 'operator', message: 'No' },
      { id: 'root', part: 'card', message: 'Too deep' },
    ]);
  });
});
