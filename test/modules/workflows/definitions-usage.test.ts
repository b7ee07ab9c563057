import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { type ErrorJson, workflowClient } from './definitions-helpers.js';

let t: TestApp;
let w: ReturnType<typeof workflowClient>;
beforeAll(async () => {
  t = await createTestApp();
  w = workflowClient(t);
});
afterAll(() => t.close());

describe('templates used by SEND_EMAIL steps', () => {
  it('GET /templates/:id/usage lists the steps; DELETE /templates/:id is 409 naming them, 204 once unused', async () => {
    const p = await w.fresh();
    const templateId = await w.template(p);
    const unused = await w.template(p, 'Unused');
    const wf = await w.create(p, { name: 'Flow' });
    const step = await w.addStep(p, wf.id, { type: 'SEND_EMAIL', name: 'Mail', config: { templateId } });
    const usage = await w.call(p, 'GET', `/templates/${templateId}/usage`);
    expect(usage.statusCode, usage.body).toBe(200);
    const use = { id: wf.id, name: 'Flow', workflowId: wf.id, workflowName: 'Flow', stepId: step.id, stepName: 'Mail' };
    expect(usage.json()).toEqual({ templateId, campaigns: [], workflows: [use] });
    const del = await w.call(p, 'DELETE', `/templates/${templateId}`);
    expect(del.statusCode).toBe(409);
    expect(del.json<ErrorJson>().error.details).toEqual({ workflows: [{ workflowId: wf.id, workflowName: 'Flow', stepId: step.id, stepName: 'Mail' }] });
    expect(await t.db.db.selectFrom('templates').select('id').where('id', '=', templateId).executeTakeFirst()).toBeDefined();
    expect((await w.call(p, 'DELETE', `/templates/${unused}`)).statusCode).toBe(204);
    // Once the step sends another template, the first one can go.
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}/steps/${step.id}`, { config: { templateId: await w.template(p) } })).statusCode).toBe(200);
    expect((await w.call(p, 'GET', `/templates/${templateId}/usage`)).json<{ workflows: unknown[] }>().workflows).toEqual([]);
    expect((await w.call(p, 'DELETE', `/templates/${templateId}`)).statusCode).toBe(204);
  });
});

describe('GET /events/:eventName/usage', () => {
  it('reports workflows triggered by the event, waiting for it, or with a CONDITION on the tracked event', async () => {
    const p = await w.fresh();
    await w.create(p, { name: 'Triggered', eventName: 'paid' });
    const waiting = await w.create(p, { name: 'Waiting', eventName: 'signed_up' });
    await w.addStep(p, waiting.id, { type: 'WAIT_FOR_EVENT', config: { eventName: 'paid' } });
    const conditional = await w.create(p, { name: 'Conditional', eventName: 'signed_up' });
    await w.addStep(p, conditional.id, { type: 'CONDITION', config: { field: 'event.paid', operator: 'triggered' } });
    // event.<key> comparisons read the execution's data: not a use of the tracked event "paid".
    const dataOnly = await w.create(p, { name: 'Data only', eventName: 'signed_up' });
    await w.addStep(p, dataOnly.id, { type: 'CONDITION', config: { field: 'event.paid', operator: 'equals', value: true } });
    const res = await w.call(p, 'GET', '/events/paid/usage');
    expect(res.statusCode, res.body).toBe(200);
    const names = res.json<{ workflows: { id: string; name: string }[] }>().workflows.map((x) => x.name).sort();
    expect(names).toEqual(['Conditional', 'Triggered', 'Waiting']);
    const other = await w.fresh();
    expect((await w.call(other, 'GET', '/events/paid/usage')).json<{ workflows: unknown[] }>().workflows).toEqual([]);
  });
});

describe('GET /contacts/fields/:field/usage', () => {
  it('reports CONDITION steps filtering on data.<key> and UPDATE_CONTACT steps writing it', async () => {
    const p = await w.fresh();
    const reads = await w.create(p, { name: 'Reads' });
    await w.addStep(p, reads.id, {
      type: 'CONDITION',
      config: { condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } },
    });
    const writes = await w.create(p, { name: 'Writes' });
    await w.addStep(p, writes.id, { type: 'UPDATE_CONTACT', config: { updates: { plan: null } } });
    const unrelated = await w.create(p, { name: 'Unrelated' });
    await w.addStep(p, unrelated.id, { type: 'UPDATE_CONTACT', config: { updates: { tier: 'a' } } });
    const res = await w.call(p, 'GET', '/contacts/fields/plan/usage');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<{ workflows: { name: string }[] }>().workflows.map((x) => x.name).sort()).toEqual(['Reads', 'Writes']);
  });
});

describe('GET /workflows/fields', () => {
  it('lists contact fields and data keys, and with eventName the keys seen on that event', async () => {
    const p = await w.fresh();
    const c = await t.db.db.insertInto('contacts').values({ project_id: p.id, email: 'a@example.com', subscribed: true, data: JSON.stringify({ plan: 'pro' }) }).returning('id').executeTakeFirstOrThrow();
    await t.db.db
      .insertInto('events')
      .values([
        { project_id: p.id, contact_id: c.id, name: 'purchased', data: JSON.stringify({ total: 10, sku: 'a' }) },
        { project_id: p.id, contact_id: c.id, name: 'purchased', data: JSON.stringify({ total: 12 }) },
        { project_id: p.id, contact_id: c.id, name: 'other', data: JSON.stringify({ secret: 1 }) },
      ])
      .execute();
    const res = await w.call(p, 'GET', '/workflows/fields?eventName=purchased');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ data: { field: string; source: string; type: string; operators: string[]; hint: boolean; count?: number }[]; eventName: string; sampledEvents: number }>();
    expect(body).toMatchObject({ eventName: 'purchased', sampledEvents: 2 });
    const byField = new Map(body.data.map((f) => [f.field, f]));
    expect([...byField.keys()]).toEqual(
      expect.arrayContaining(['email', 'subscribed', 'createdAt', 'updatedAt', 'data.plan', 'event.total', 'event.sku', 'event.purchased', 'event.<key>', 'context.<key>']),
    );
    expect(byField.has('event.secret')).toBe(false);
    expect(byField.get('event.total')).toMatchObject({ source: 'event', type: 'number', count: 2, hint: false });
    expect(byField.get('event.purchased')?.operators).toContain('triggered');
    expect(byField.get('data.plan')).toMatchObject({ source: 'data', type: 'string', count: 1 });
    expect(byField.get('subscribed')?.operators).toEqual(['equals', 'notEquals']);
    expect(byField.get('context.<key>')).toMatchObject({ hint: true });
    const without = (await w.call(p, 'GET', '/workflows/fields')).json<{ data: { field: string }[]; eventName: null; sampledEvents: number }>();
    expect(without).toMatchObject({ eventName: null, sampledEvents: 0 });
    expect(without.data.some((f) => f.field === 'event.total')).toBe(false);
  });
});
