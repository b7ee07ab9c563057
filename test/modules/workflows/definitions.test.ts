import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { type ErrorJson, fieldsOf, type WorkflowJson, workflowClient } from './definitions-helpers.js';

let t: TestApp;
let w: ReturnType<typeof workflowClient>;
beforeAll(async () => {
  t = await createTestApp();
  w = workflowClient(t);
});
afterAll(() => t.close());

const rowOf = (id: string) => t.db.db.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirst();

describe('POST /workflows', () => {
  it('creates a disabled EVENT workflow with one TRIGGER step (201)', async () => {
    const p = await w.fresh();
    const wf = await w.create(p, { name: 'Onboarding', description: 'd', allowReentry: true });
    expect(wf).toMatchObject({ name: 'Onboarding', description: 'd', triggerType: 'EVENT', triggerConfig: { eventName: 'signed_up' }, enabled: false, allowReentry: true });
    expect(await rowOf(wf.id)).toMatchObject({ project_id: p.id, trigger_event: 'signed_up', enabled: false });
    const steps = await t.db.db.selectFrom('workflow_steps').selectAll().where('workflow_id', '=', wf.id).execute();
    expect(steps.map((s) => s.type)).toEqual(['TRIGGER']);
  });
  it('accepts system trigger names and 422s reserved names never recorded', async () => {
    const p = await w.fresh();
    for (const eventName of ['contact.subscribed', 'segment.vip-users.entry', 'email.open', 'email.bounce']) await w.create(p, { eventName });
    for (const eventName of ['email.whatever', 'segment.VIP.entry', ' ']) {
      const res = await w.call(p, 'POST', '/workflows', { name: 'X', eventName });
      expect(res.statusCode, eventName).toBe(422);
      expect(fieldsOf(res.json<ErrorJson>())).toContain('eventName');
    }
    expect((await w.call(p, 'POST', '/workflows', { name: 'x'.repeat(201), eventName: 'a' })).statusCode).toBe(422);
  });
});

describe('GET /workflows', () => {
  it('pages, searches name and description, filters by status, sorts, with counts from one grouped query', async () => {
    const p = await w.fresh();
    const a = await w.create(p, { name: 'Alpha', description: 'first' });
    const b = await w.create(p, { name: 'beta', description: 'Second 100%' });
    const c = await w.create(p, { name: 'Gamma' });
    await w.addStep(p, a.id, w.delay);
    await t.db.db.updateTable('workflows').set({ enabled: true }).where('id', '=', c.id).execute();
    const list = async (q: string) => {
      const res = await w.call(p, 'GET', `/workflows${q}`);
      expect(res.statusCode, res.body).toBe(200);
      return res.json<{ data: (WorkflowJson & { stepCount: number; executionCount: number; activeExecutionCount: number })[]; total: number; page: number; pageSize: number; totalPages: number }>();
    };
    const all = await list('');
    expect(all.data.map((x) => x.name)).toEqual(['Gamma', 'beta', 'Alpha']);
    expect(all).toMatchObject({ total: 3, page: 1, pageSize: 20, totalPages: 1 });
    expect(all.data.find((x) => x.id === a.id)).toMatchObject({ stepCount: 2, executionCount: 0, activeExecutionCount: 0 });
    expect((await list('?sort=name&dir=asc')).data.map((x) => x.id)).toEqual([a.id, b.id, c.id]);
    expect((await list('?sort=bogus&dir=asc')).data.map((x) => x.id)).toEqual([a.id, b.id, c.id]);
    expect((await list('?search=SECOND')).data.map((x) => x.id)).toEqual([b.id]);
    expect((await list('?search=100%25')).data.map((x) => x.id)).toEqual([b.id]);
    expect((await list('?search=%25')).data.map((x) => x.id)).toEqual([b.id]);
    expect((await list('?status=active')).data.map((x) => x.id)).toEqual([c.id]);
    expect((await list('?status=disabled')).total).toBe(2);
    const paged = await list('?pageSize=2&page=2&sort=name&dir=asc');
    expect(paged).toMatchObject({ total: 3, totalPages: 2, pageSize: 2, page: 2 });
    expect(paged.data.map((x) => x.id)).toEqual([c.id]);
    expect((await list('?pageSize=1000')).pageSize).toBe(100);
    expect((await w.call(p, 'GET', '/workflows?status=paused')).statusCode).toBe(400);
  });
  it('counts executions, active ones apart', async () => {
    const p = await w.fresh();
    const wf = await w.create(p);
    const contacts = await t.db.db
      .insertInto('contacts')
      .values([1, 2, 3].map((i) => ({ project_id: p.id, email: `c${i}@example.com`, subscribed: true })))
      .returning('id')
      .execute();
    await t.db.db
      .insertInto('workflow_executions')
      .values(contacts.map((c, i) => ({ project_id: p.id, workflow_id: wf.id, contact_id: c.id, status: i === 0 ? 'WAITING' : 'COMPLETED' })))
      .execute();
    const res = await w.call(p, 'GET', '/workflows');
    expect(res.json<{ data: unknown[] }>().data[0]).toMatchObject({ stepCount: 1, executionCount: 3, activeExecutionCount: 1 });
  });
});

describe('GET, PATCH, DELETE /workflows/:id', () => {
  it('is 404 for another project and for malformed ids (no cross-project leak)', async () => {
    const p = await w.fresh();
    const other = await w.fresh();
    const wf = await w.create(p);
    const step = await w.addStep(p, wf.id, w.delay);
    for (const [method, url, body] of [
      ['GET', `/workflows/${wf.id}`],
      ['PATCH', `/workflows/${wf.id}`, { name: 'Stolen' }],
      ['DELETE', `/workflows/${wf.id}`],
      ['POST', `/workflows/${wf.id}/duplicate`],
      ['POST', `/workflows/${wf.id}/steps`, w.delay],
      ['PATCH', `/workflows/${wf.id}/steps/${step.id}`, { name: 'x' }],
      ['DELETE', `/workflows/${wf.id}/steps/${step.id}`],
      ['POST', `/workflows/${wf.id}/transitions`, { fromStepId: step.id, toStepId: step.id }],
    ] as const) {
      expect((await w.call(other, method, url, body)).statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await rowOf(wf.id))?.name).toBe('Welcome');
    expect((await w.call(other, 'GET', '/workflows')).json<{ total: number }>().total).toBe(0);
    for (const url of ['/workflows/nope', `/workflows/${wf.id}/steps/nope`, `/workflows/${wf.id}/transitions/nope`]) {
      const method = url.endsWith('/workflows/nope') ? 'GET' : 'DELETE';
      expect((await w.call(p, method, url)).statusCode, url).toBe(404);
    }
  });
  it('patches metadata and the trigger; other trigger types are 422', async () => {
    const p = await w.fresh();
    const wf = await w.create(p);
    const res = await w.call(p, 'PATCH', `/workflows/${wf.id}`, { name: 'New', description: 'x', allowReentry: true, triggerType: 'EVENT', triggerConfig: { eventName: 'purchased' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<WorkflowJson>()).toMatchObject({ name: 'New', description: 'x', allowReentry: true, triggerConfig: { eventName: 'purchased' } });
    expect(await rowOf(wf.id)).toMatchObject({ trigger_event: 'purchased', allow_reentry: true });
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}`, { triggerType: 'SCHEDULE' })).statusCode).toBe(422);
    const bad = await w.call(p, 'PATCH', `/workflows/${wf.id}`, { triggerConfig: { eventName: 'email.nope' } });
    expect(fieldsOf(bad.json<ErrorJson>())).toEqual(['triggerConfig.eventName']);
  });
  it('refuses a trigger change of an enabled workflow with active executions (409 with the count), not of a disabled one', async () => {
    const p = await w.fresh();
    const wf = await w.create(p);
    const c = await t.db.db.insertInto('contacts').values({ project_id: p.id, email: 'a@example.com', subscribed: true }).returning('id').executeTakeFirstOrThrow();
    await t.db.db.insertInto('workflow_executions').values({ project_id: p.id, workflow_id: wf.id, contact_id: c.id, status: 'RUNNING' }).execute();
    await t.db.db.updateTable('workflows').set({ enabled: true }).where('id', '=', wf.id).execute();
    const res = await w.call(p, 'PATCH', `/workflows/${wf.id}`, { triggerConfig: { eventName: 'other' } });
    expect(res.statusCode).toBe(409);
    expect(res.json<ErrorJson>().error.details).toEqual({ activeExecutions: 1 });
    expect((await rowOf(wf.id))?.trigger_event).toBe('signed_up');
    // Same name: no change, allowed; disabled: allowed.
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}`, { triggerConfig: { eventName: 'signed_up' } })).statusCode).toBe(200);
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}`, { enabled: false })).statusCode).toBe(200);
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}`, { triggerConfig: { eventName: 'other' } })).statusCode).toBe(200);
  });
  it('enables only a runnable graph: 422 naming the step', async () => {
    const p = await w.fresh();
    const wf = await w.create(p);
    const trig = await w.trigger(p, wf.id);
    let res = await w.call(p, 'PATCH', `/workflows/${wf.id}`, { enabled: true });
    expect(res.statusCode).toBe(422);
    expect(fieldsOf(res.json<ErrorJson>())).toEqual([`steps.${trig.id}`]);
    const templateId = await w.template(p);
    const send = await w.addStep(p, wf.id, { type: 'SEND_EMAIL', name: 'Mail', config: { templateId } });
    await w.link(p, wf.id, trig.id, send.id);
    // A template gone behind the step's back (only possible outside the API): named.
    await t.db.db.updateTable('workflow_steps').set({ template_id: null }).where('id', '=', send.id).execute();
    res = await w.call(p, 'PATCH', `/workflows/${wf.id}`, { enabled: true });
    expect(res.statusCode).toBe(422);
    expect(fieldsOf(res.json<ErrorJson>())).toEqual([`steps.${send.id}.config.templateId`]);
    expect(res.json<ErrorJson>().error.errors?.[0]?.message).toContain('"Mail"');
    await t.db.db.updateTable('workflow_steps').set({ template_id: templateId }).where('id', '=', send.id).execute();
    res = await w.call(p, 'PATCH', `/workflows/${wf.id}`, { enabled: true });
    expect(res.statusCode, res.body).toBe(200);
    expect((await rowOf(wf.id))?.enabled).toBe(true);
  });
  it('deletes (204, steps gone); 409 with the count while executions are active', async () => {
    const p = await w.fresh();
    const wf = await w.create(p);
    const c = await t.db.db.insertInto('contacts').values({ project_id: p.id, email: 'a@example.com', subscribed: true }).returning('id').executeTakeFirstOrThrow();
    const ex = await t.db.db.insertInto('workflow_executions').values({ project_id: p.id, workflow_id: wf.id, contact_id: c.id, status: 'WAITING' }).returning('id').executeTakeFirstOrThrow();
    const res = await w.call(p, 'DELETE', `/workflows/${wf.id}`);
    expect(res.statusCode).toBe(409);
    expect(res.json<ErrorJson>().error.details).toEqual({ activeExecutions: 1 });
    await t.db.db.updateTable('workflow_executions').set({ status: 'CANCELLED' }).where('id', '=', ex.id).execute();
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}`)).statusCode).toBe(204);
    expect(await rowOf(wf.id)).toBeUndefined();
    expect(await t.db.db.selectFrom('workflow_steps').select('id').where('workflow_id', '=', wf.id).execute()).toEqual([]);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}`)).statusCode).toBe(404);
  });
});

describe('POST /workflows/:id/duplicate', () => {
  it('copies disabled, "<name> (Copy)", with new step ids and remapped transitions', async () => {
    const p = await w.fresh();
    const wf = await w.create(p, { name: 'x'.repeat(200) });
    await t.db.db.updateTable('workflows').set({ enabled: true }).where('id', '=', wf.id).execute();
    const trig = await w.trigger(p, wf.id);
    const cond = await w.addStep(p, wf.id, { type: 'CONDITION', name: 'Pro?', config: { field: 'data.plan', operator: 'equals', value: 'pro' }, position: { x: 10, y: 20 } });
    const exit = await w.addStep(p, wf.id, { type: 'EXIT', config: { reason: 'free' } });
    await w.link(p, wf.id, trig.id, cond.id);
    await w.link(p, wf.id, cond.id, exit.id, { branch: 'no' });
    const res = await w.call(p, 'POST', `/workflows/${wf.id}/duplicate`);
    expect(res.statusCode, res.body).toBe(201);
    const copy = res.json<WorkflowJson>();
    expect(copy.name).toBe(`${'x'.repeat(193)} (Copy)`);
    expect(copy.enabled).toBe(false);
    const [orig, dup] = [await w.detail(p, wf.id), await w.detail(p, copy.id)];
    const oldIds = new Set(orig.steps.map((s) => s.id));
    expect(dup.steps.some((s) => oldIds.has(s.id))).toBe(false);
    const shape = (d: typeof orig) => {
      const nameOf = new Map(d.steps.map((s) => [s.id, `${s.type}:${s.name}`]));
      return {
        steps: d.steps.map((s) => ({ type: s.type, name: s.name, config: s.config, position: s.position })).sort((a, b) => a.type.localeCompare(b.type)),
        transitions: d.transitions.map((tr) => [nameOf.get(tr.fromStepId), nameOf.get(tr.toStepId), tr.branch]).sort(),
      };
    };
    expect(shape(dup)).toEqual(shape(orig));
    expect(dup.transitions.every((tr) => dup.steps.some((s) => s.id === tr.fromStepId))).toBe(true);
  });
});
