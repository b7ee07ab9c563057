import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { type ErrorJson, fieldsOf, type StepJson, workflowClient } from './definitions-helpers.js';

let t: TestApp;
let w: ReturnType<typeof workflowClient>;
beforeAll(async () => {
  t = await createTestApp();
  w = workflowClient(t);
});
afterAll(() => t.close());

async function setup() {
  const p = await w.fresh();
  const wf = await w.create(p);
  const post = (type: string, config: unknown) => w.call(p, 'POST', `/workflows/${wf.id}/steps`, { type, config });
  const fields = async (type: string, config: unknown) => {
    const res = await post(type, config);
    expect(res.statusCode, res.body).toBe(422);
    return fieldsOf(res.json<ErrorJson>());
  };
  const ok = async (type: string, config: unknown) => {
    const res = await post(type, config);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<StepJson>();
  };
  return { p, wf, post, fields, ok };
}

describe('step configs: each rule answers 422 naming the field', () => {
  it('SEND_EMAIL: the template must be in the project; CUSTOM needs a valid customEmail; template_id stored', async () => {
    const { p, fields, ok } = await setup();
    const other = await w.fresh();
    const mine = await w.template(p);
    const theirs = await w.template(other);
    expect(await fields('SEND_EMAIL', {})).toEqual(['config.templateId']);
    expect(await fields('SEND_EMAIL', { templateId: 'nope' })).toEqual(['config.templateId']);
    expect(await fields('SEND_EMAIL', { templateId: theirs })).toEqual(['config.templateId']);
    expect(await fields('SEND_EMAIL', { templateId: mine, recipient: { type: 'CUSTOM' } })).toEqual(['config.recipient.customEmail']);
    expect(await fields('SEND_EMAIL', { templateId: mine, recipient: { type: 'CUSTOM', customEmail: 'not-an-email' } })).toEqual(['config.recipient.customEmail']);
    expect(await fields('SEND_EMAIL', { templateId: mine, recipient: { type: 'OTHER' } })).toEqual(['config.recipient.type']);
    const step = await ok('SEND_EMAIL', { templateId: mine, recipient: { type: 'CUSTOM', customEmail: 'ops@example.com' } });
    const row = await t.db.db.selectFrom('workflow_steps').select('template_id').where('id', '=', step.id).executeTakeFirstOrThrow();
    expect(row.template_id).toBe(mine);
  });
  it('DELAY: amount > 0, a known unit, at most 365 days', async () => {
    const { fields, ok } = await setup();
    expect(await fields('DELAY', { amount: 0, unit: 'days' })).toEqual(['config.amount']);
    expect(await fields('DELAY', { amount: 'one', unit: 'days' })).toEqual(['config.amount']);
    expect(await fields('DELAY', { amount: 1, unit: 'weeks' })).toEqual(['config.unit']);
    expect(await fields('DELAY', { amount: 366, unit: 'days' })).toEqual(['config.amount']);
    expect(await fields('DELAY', { amount: 8761, unit: 'hours' })).toEqual(['config.amount']);
    await ok('DELAY', { amount: 365, unit: 'days' });
    await ok('DELAY', { amount: 525_600, unit: 'minutes' });
  });
  it('WAIT_FOR_EVENT: a valid event name; timeout seconds > 0, at most a year', async () => {
    const { fields, ok } = await setup();
    expect(await fields('WAIT_FOR_EVENT', {})).toEqual(['config.eventName']);
    expect(await fields('WAIT_FOR_EVENT', { eventName: 'email.whatever' })).toEqual(['config.eventName']);
    expect(await fields('WAIT_FOR_EVENT', { eventName: 'paid', timeout: 0 })).toEqual(['config.timeout']);
    expect(await fields('WAIT_FOR_EVENT', { eventName: 'paid', timeout: 365 * 86_400 + 1 })).toEqual(['config.timeout']);
    await ok('WAIT_FOR_EVENT', { eventName: 'email.click', timeout: 365 * 86_400 });
  });
  it('CONDITION: one filter or a tree, checked by the condition language with execution fields', async () => {
    const { fields, ok } = await setup();
    expect(await fields('CONDITION', { field: 'nope', operator: 'equals', value: 1 })).toEqual(['config.field']);
    expect(await fields('CONDITION', { field: 'data.plan', operator: 'triggered' })).toEqual(['config.operator']);
    expect(await fields('CONDITION', { field: 'data.plan', operator: 'equals', value: { a: 1 } })).toEqual(['config.value']);
    expect(await fields('CONDITION', { field: 'event.total', operator: 'greaterThan', value: 'lots' })).toEqual(['config.value']);
    expect(await fields('CONDITION', { condition: { logic: 'AND', groups: [{ filters: [{ field: 'context.x', operator: 'within', value: 1, unit: 'days' }] }] } })).toEqual([
      'config.condition.groups.0.filters.0.operator',
    ]);
    expect(await fields('CONDITION', {})).toContain('config.field');
    // event.<key> compares the execution's event; event.<name> with triggered… is the tracked event; context.<key>.
    await ok('CONDITION', { field: 'event.total', operator: 'greaterThan', value: 100 });
    await ok('CONDITION', { field: 'event.purchased', operator: 'triggeredWithin', value: 7, unit: 'days' });
    await ok('CONDITION', { field: 'context.tier', operator: 'exists' });
    const tree = { logic: 'OR', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@acme.com' }, { field: 'context.vip', operator: 'equals', value: true }] }] };
    expect((await ok('CONDITION', { condition: tree })).config).toEqual({ condition: tree });
  });
  it('WEBHOOK: http(s) url, method (default POST), no hop-by-hop/Host/Content-Length headers, JSON body', async () => {
    const { fields, ok } = await setup();
    expect(await fields('WEBHOOK', { url: 'ftp://example.com/x' })).toEqual(['config.url']);
    expect(await fields('WEBHOOK', { url: 'not a url' })).toEqual(['config.url']);
    expect(await fields('WEBHOOK', { url: 'https://example.com', method: 'TRACE' })).toEqual(['config.method']);
    expect(await fields('WEBHOOK', { url: 'https://example.com', headers: { Host: 'evil' } })).toEqual(['config.headers.Host']);
    expect(await fields('WEBHOOK', { url: 'https://example.com', headers: { 'content-length': '1' } })).toEqual(['config.headers.content-length']);
    expect(await fields('WEBHOOK', { url: 'https://example.com', headers: { Connection: 'close' } })).toEqual(['config.headers.Connection']);
    expect(await fields('WEBHOOK', { url: 'https://example.com', headers: { 'Bad Name': 'x' } })).toEqual(['config.headers.Bad Name']);
    expect(await fields('WEBHOOK', { url: 'https://example.com', headers: { 'X-A': 'a\r\nb' } })).toEqual(['config.headers.X-A']);
    const step = await ok('WEBHOOK', { url: 'https://example.com/hook', headers: { 'X-Token': 't' }, body: { a: [1, { b: null }] } });
    expect(step.config).toEqual({ url: 'https://example.com/hook', method: 'POST', headers: { 'X-Token': 't' }, body: { a: [1, { b: null }] } });
  });
  it("UPDATE_CONTACT: data rules on updates (reserved keys, key length); Plunk's subscriptionAction becomes subscribed", async () => {
    const { fields, ok } = await setup();
    expect(await fields('UPDATE_CONTACT', { updates: { email: 'x@example.com' } })).toEqual(['config.updates.email']);
    expect(await fields('UPDATE_CONTACT', { updates: { ['k'.repeat(101)]: 1 } })).toEqual([`config.updates.${'k'.repeat(101)}`]);
    expect(await fields('UPDATE_CONTACT', { updates: { a: { nested: true } } })).toEqual(['config.updates.a']);
    expect(await fields('UPDATE_CONTACT', { subscribed: 'yes' })).toEqual(['config.subscribed']);
    expect(await fields('UPDATE_CONTACT', { subscriptionAction: 'maybe' })).toEqual(['config.subscriptionAction']);
    expect(await fields('UPDATE_CONTACT', { subscriptionAction: 'subscribe', subscribed: false })).toEqual(['config.subscriptionAction']);
    expect((await ok('UPDATE_CONTACT', { updates: { plan: 'pro', old: null }, subscriptionAction: 'unsubscribe' })).config).toEqual({
      updates: { plan: 'pro', old: null },
      subscribed: false,
    });
    expect((await ok('UPDATE_CONTACT', { subscriptionAction: 'none' })).config).toEqual({});
  });
  it('EXIT: an optional reason', async () => {
    const { fields, ok } = await setup();
    expect(await fields('EXIT', { reason: 'r'.repeat(501) })).toEqual(['config.reason']);
    expect((await ok('EXIT', { reason: 'done' })).config).toEqual({ reason: 'done' });
  });
  it('unknown config keys are named config.<key>, for every type', async () => {
    const { p, fields } = await setup();
    const templateId = await w.template(p);
    const valid: Record<string, object> = {
      SEND_EMAIL: { templateId },
      DELAY: { amount: 1, unit: 'days' },
      WAIT_FOR_EVENT: { eventName: 'x' },
      CONDITION: { field: 'subscribed', operator: 'equals', value: true },
      WEBHOOK: { url: 'https://example.com' },
      UPDATE_CONTACT: {},
      EXIT: {},
    };
    for (const [type, config] of Object.entries(valid)) {
      expect(await fields(type, { ...config, bogus: 1 }), type).toEqual(['config.bogus']);
    }
  });
});
