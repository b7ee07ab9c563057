import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestProject } from '../../helpers/accounts.js';
import { randomUUID } from 'node:crypto';
import { ApiError } from '../../../src/http/errors.js';
import { insertStep } from '../../../src/modules/workflows/graph.repo.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { type ErrorJson, fieldsOf, type StepJson, type TransitionJson, workflowClient } from './definitions-helpers.js';

let t: TestApp;
let w: ReturnType<typeof workflowClient>;
beforeAll(async () => {
  t = await createTestApp();
  w = workflowClient(t);
});
afterAll(() => t.close());

const transitionsOf = (wfId: string) =>
  t.db.db.selectFrom('workflow_transitions').select(['from_step_id', 'to_step_id', 'branch']).where('workflow_id', '=', wfId).orderBy('created_at').execute();

/** A fresh project and workflow, with the trigger and a factory of steps. */
async function setup() {
  const p = await w.fresh();
  const wf = await w.create(p);
  const trig = await w.trigger(p, wf.id);
  const step = (type: string, config: object = {}, name = '') => w.addStep(p, wf.id, { type, config, name });
  const delay = () => step('DELAY', { amount: 5, unit: 'minutes' });
  const post = (body: object) => w.call(p, 'POST', `/workflows/${wf.id}/transitions`, body);
  return { p, wf, trig, step, delay, post };
}

const expect422 = (res: { statusCode: number; json: <T>() => T; body: string }, field: string) => {
  expect(res.statusCode, res.body).toBe(422);
  expect(fieldsOf(res.json<ErrorJson>())).toEqual([field]);
};

describe('POST /workflows/:id/transitions: rules', () => {
  it('links two steps (201, row stored)', async () => {
    const { wf, trig, delay, post } = await setup();
    const d = await delay();
    const res = await post({ fromStepId: trig.id, toStepId: d.id });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json<TransitionJson>()).toMatchObject({ fromStepId: trig.id, toStepId: d.id, branch: null });
    expect(await transitionsOf(wf.id)).toEqual([{ from_step_id: trig.id, to_step_id: d.id, branch: null }]);
  });
  it('refuses a self-link', async () => {
    const { delay, post } = await setup();
    const d = await delay();
    const res = await post({ fromStepId: d.id, toStepId: d.id });
    expect422(res, 'toStepId');
    expect(res.json<ErrorJson>().error.errors?.[0]).toMatchObject({ code: 'invalid_transition', message: 'A step cannot link to itself' });
  });
  it('refuses a cycle, however long', async () => {
    const { wf, delay, post } = await setup();
    const [a, b, c] = [await delay(), await delay(), await delay()];
    expect((await post({ fromStepId: a.id, toStepId: b.id })).statusCode).toBe(201);
    expect((await post({ fromStepId: b.id, toStepId: c.id })).statusCode).toBe(201);
    const res = await post({ fromStepId: c.id, toStepId: a.id });
    expect422(res, 'toStepId');
    expect(res.json<ErrorJson>().error.errors?.[0]?.code).toBe('cycle');
    expect(await transitionsOf(wf.id)).toHaveLength(2);
  });
  it('refuses links to the TRIGGER step', async () => {
    const { trig, delay, post } = await setup();
    const d = await delay();
    expect422(await post({ fromStepId: d.id, toStepId: trig.id }), 'toStepId');
  });
  it('refuses outgoing transitions from EXIT', async () => {
    const { step, delay, post } = await setup();
    const exit = await step('EXIT', { reason: 'done' });
    expect422(await post({ fromStepId: exit.id, toStepId: (await delay()).id }), 'fromStepId');
  });
  it('CONDITION: needs yes/no, one of each (a second yes is 409)', async () => {
    const { step, delay, post } = await setup();
    const cond = await step('CONDITION', { field: 'subscribed', operator: 'equals', value: true });
    const [a, b, c] = [await delay(), await delay(), await delay()];
    expect422(await post({ fromStepId: cond.id, toStepId: a.id }), 'branch');
    expect422(await post({ fromStepId: cond.id, toStepId: a.id, branch: 'event' }), 'branch');
    expect((await post({ fromStepId: cond.id, toStepId: a.id, branch: 'yes' })).statusCode).toBe(201);
    const twice = await post({ fromStepId: cond.id, toStepId: b.id, branch: 'yes' });
    expect(twice.statusCode).toBe(409);
    expect(twice.json<ErrorJson>().error.code).toBe('CONFLICT');
    expect((await post({ fromStepId: cond.id, toStepId: c.id, branch: 'no' })).statusCode).toBe(201);
  });
  it('non-branching steps: no branch, and a second outgoing transition is 409', async () => {
    const { trig, delay, post } = await setup();
    const [a, b] = [await delay(), await delay()];
    expect422(await post({ fromStepId: trig.id, toStepId: a.id, branch: 'yes' }), 'branch');
    expect((await post({ fromStepId: trig.id, toStepId: a.id })).statusCode).toBe(201);
    expect((await post({ fromStepId: trig.id, toStepId: b.id })).statusCode).toBe(409);
  });
  it('WAIT_FOR_EVENT: event/timeout branches; timeout only when the step has a timeout', async () => {
    const { step, delay, post } = await setup();
    const noTimeout = await step('WAIT_FOR_EVENT', { eventName: 'purchased' });
    const withTimeout = await step('WAIT_FOR_EVENT', { eventName: 'purchased', timeout: 3600 });
    const [a, b, c] = [await delay(), await delay(), await delay()];
    expect422(await post({ fromStepId: noTimeout.id, toStepId: a.id }), 'branch');
    const res = await post({ fromStepId: noTimeout.id, toStepId: a.id, branch: 'timeout' });
    expect422(res, 'branch');
    expect(res.json<ErrorJson>().error.errors?.[0]?.message).toContain('timeout');
    expect((await post({ fromStepId: noTimeout.id, toStepId: a.id, branch: 'event' })).statusCode).toBe(201);
    expect((await post({ fromStepId: withTimeout.id, toStepId: b.id, branch: 'timeout' })).statusCode).toBe(201);
    expect((await post({ fromStepId: withTimeout.id, toStepId: c.id, branch: 'timeout' })).statusCode).toBe(409);
  });
  it("accepts Plunk's aliases condition: {branch} and waitOutcome, and refuses contradicting forms", async () => {
    const { step, delay, post } = await setup();
    const cond = await step('CONDITION', { field: 'subscribed', operator: 'equals', value: true });
    const wait = await step('WAIT_FOR_EVENT', { eventName: 'x', timeout: 60 });
    const [a, b, c] = [await delay(), await delay(), await delay()];
    const yes = await post({ fromStepId: cond.id, toStepId: a.id, condition: { branch: 'yes' } });
    expect(yes.json<TransitionJson>().branch).toBe('yes');
    expect((await post({ fromStepId: wait.id, toStepId: b.id, waitOutcome: 'TIMEOUT' })).json<TransitionJson>().branch).toBe('timeout');
    expect((await post({ fromStepId: wait.id, toStepId: c.id, waitOutcome: 'EVENT', branch: 'event' })).json<TransitionJson>().branch).toBe('event');
    expect422(await post({ fromStepId: cond.id, toStepId: b.id, branch: 'no', condition: { branch: 'yes' } }), 'condition.branch');
  });
  it('refuses steps of another workflow', async () => {
    const { p, delay, post } = await setup();
    const other = await w.create(p);
    const foreign = await w.addStep(p, other.id, w.delay);
    expect422(await post({ fromStepId: (await delay()).id, toStepId: foreign.id }), 'toStepId');
    expect422(await post({ fromStepId: foreign.id, toStepId: (await delay()).id }), 'fromStepId');
  });
  it('serialises concurrent edits: two edges closing a cycle cannot both be added', async () => {
    const { delay, post } = await setup();
    // Several rounds: without the lock on the workflow row, both checks pass at once in some of them.
    for (let round = 0; round < 6; round++) {
      const [a, b] = [await delay(), await delay()];
      const [r1, r2] = await Promise.all([post({ fromStepId: a.id, toStepId: b.id }), post({ fromStepId: b.id, toStepId: a.id })]);
      expect([r1.statusCode, r2.statusCode].sort(), `round ${round}`).toEqual([201, 422]);
    }
  });
  it('DELETE /workflows/:id/transitions/:transitionId (204; 404 after)', async () => {
    const { p, wf, trig, delay } = await setup();
    const tr = await w.link(p, wf.id, trig.id, (await delay()).id);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/transitions/${tr.id}`)).statusCode).toBe(204);
    expect(await transitionsOf(wf.id)).toEqual([]);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/transitions/${tr.id}`)).statusCode).toBe(404);
  });
});

describe('steps: add, patch, delete', () => {
  it('adds a step stacked below the lowest one, or at the given position', async () => {
    const { p, wf } = await setup();
    const a = await w.addStep(p, wf.id, { ...w.delay, name: 'Wait' });
    expect(a).toMatchObject({ type: 'DELAY', name: 'Wait', config: { amount: 1, unit: 'hours' }, position: { x: 0, y: 150 } });
    const b = await w.addStep(p, wf.id, { ...w.delay, position: { x: 40, y: 900 } });
    expect(b.position).toEqual({ x: 40, y: 900 });
    expect((await w.addStep(p, wf.id, w.delay)).position).toEqual({ x: 40, y: 1050 });
    const row = await t.db.db.selectFrom('workflow_steps').selectAll().where('id', '=', a.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ workflow_id: wf.id, type: 'DELAY', position_y: 150, config: { amount: 1, unit: 'hours' } });
  });
  it('a template deleted between the config check and the write is a 422 on config.templateId, not a 500', async () => {
    const { p, wf } = await setup();
    const err: unknown = await t.db.db
      .transaction()
      .execute((trx) => insertStep(trx, p.id, wf.id, { type: 'SEND_EMAIL', name: '', config: {}, position: { x: 0, y: 0 }, templateId: randomUUID() }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ statusCode: 422, errors: [{ field: 'config.templateId' }] });
  });
  it('refuses TRIGGER as a new step', async () => {
    const { p, wf } = await setup();
    const res = await w.call(p, 'POST', `/workflows/${wf.id}/steps`, { type: 'TRIGGER', config: {} });
    expect422(res, 'type');
  });
  it('patches name, position and config (stored template_id follows config.templateId); the type never changes', async () => {
    const { p, wf } = await setup();
    const [t1, t2] = [await w.template(p, 'One'), await w.template(p, 'Two')];
    const send = await w.addStep(p, wf.id, { type: 'SEND_EMAIL', config: { templateId: t1 } });
    const res = await w.call(p, 'PATCH', `/workflows/${wf.id}/steps/${send.id}`, { name: 'Mail', position: { x: 5, y: 6 }, config: { templateId: t2 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<StepJson>()).toMatchObject({ type: 'SEND_EMAIL', name: 'Mail', position: { x: 5, y: 6 }, config: { templateId: t2 } });
    const row = await t.db.db.selectFrom('workflow_steps').selectAll().where('id', '=', send.id).executeTakeFirstOrThrow();
    expect(row.template_id).toBe(t2);
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}/steps/${send.id}`, { type: 'DELAY' })).statusCode).toBe(422);
    const wrongType = await w.call(p, 'PATCH', `/workflows/${wf.id}/steps/${send.id}`, { config: { amount: 1, unit: 'days' } });
    expect(wrongType.statusCode).toBe(422);
    expect(fieldsOf(wrongType.json<ErrorJson>())).toEqual(['config.templateId', 'config.amount', 'config.unit']);
  });
  it('removing a WAIT_FOR_EVENT timeout while a timeout transition exists is 409', async () => {
    const { p, wf, step, delay } = await setup();
    const wait = await step('WAIT_FOR_EVENT', { eventName: 'x', timeout: 60 });
    await w.link(p, wf.id, wait.id, (await delay()).id, { branch: 'timeout' });
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}/steps/${wait.id}`, { config: { eventName: 'x' } })).statusCode).toBe(409);
  });
  it('config edits are 409 while executions are at the step (details.waitingExecutions); rename and move are not', async () => {
    const { p, wf, delay } = await setup();
    const d = await delay();
    await atStep(p, wf.id, d.id, 'WAITING');
    const res = await w.call(p, 'PATCH', `/workflows/${wf.id}/steps/${d.id}`, { config: { amount: 2, unit: 'days' } });
    expect(res.statusCode).toBe(409);
    expect(res.json<ErrorJson>().error.details).toEqual({ waitingExecutions: 1 });
    expect((await w.call(p, 'PATCH', `/workflows/${wf.id}/steps/${d.id}`, { name: 'Renamed', position: { x: 1, y: 1 } })).statusCode).toBe(200);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/steps/${d.id}`)).statusCode).toBe(409);
  });
  it('deletes a step with its transitions (204); the TRIGGER is not deletable (409)', async () => {
    const { p, wf, trig, delay } = await setup();
    const [a, b] = [await delay(), await delay()];
    await w.link(p, wf.id, trig.id, a.id);
    await w.link(p, wf.id, a.id, b.id);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/steps/${a.id}`)).statusCode).toBe(204);
    expect(await transitionsOf(wf.id)).toEqual([]);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/steps/${trig.id}`)).statusCode).toBe(409);
    expect((await w.detail(p, wf.id)).steps.map((s) => s.id)).toEqual([trig.id, b.id]);
  });
  it('splice=true reconnects the predecessor to the successor, keeping its branch', async () => {
    const { p, wf, step, delay } = await setup();
    const cond = await step('CONDITION', { field: 'subscribed', operator: 'equals', value: true });
    const [mid, end] = [await delay(), await delay()];
    await w.link(p, wf.id, cond.id, mid.id, { branch: 'no' });
    await w.link(p, wf.id, mid.id, end.id);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/steps/${mid.id}?splice=true`)).statusCode).toBe(204);
    expect(await transitionsOf(wf.id)).toEqual([{ from_step_id: cond.id, to_step_id: end.id, branch: 'no' }]);
  });
  it('splice is 409 where ambiguous (several incoming), and nothing changes', async () => {
    const { p, wf, trig, step, delay } = await setup();
    const cond = await step('CONDITION', { field: 'subscribed', operator: 'equals', value: true });
    const [mid, end] = [await delay(), await delay()];
    await w.link(p, wf.id, trig.id, cond.id);
    await w.link(p, wf.id, cond.id, mid.id, { branch: 'yes' });
    await w.link(p, wf.id, cond.id, end.id, { branch: 'no' });
    const before = await transitionsOf(wf.id);
    // cond has one incoming but two outgoing.
    const res = await w.call(p, 'DELETE', `/workflows/${wf.id}/steps/${cond.id}?splice=true`);
    expect(res.statusCode).toBe(409);
    expect(res.json<ErrorJson>().error.details).toEqual({ incoming: 1, outgoing: 2 });
    expect(await transitionsOf(wf.id)).toEqual(before);
    // end has two incoming (no -> end, mid -> end).
    await w.link(p, wf.id, mid.id, end.id);
    const after = await w.addStep(p, wf.id, w.delay);
    await w.link(p, wf.id, end.id, after.id);
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/steps/${end.id}?splice=true`)).statusCode).toBe(409);
  });
  it('splice is 409 when the new edge would break a rule (predecessor branch not allowed there)', async () => {
    const { p, wf, trig, step } = await setup();
    const mid = await step('DELAY', { amount: 1, unit: 'days' });
    const exit = await step('EXIT');
    await w.link(p, wf.id, trig.id, mid.id);
    await w.link(p, wf.id, mid.id, exit.id);
    // A valid splice: trigger -> exit.
    expect((await w.call(p, 'DELETE', `/workflows/${wf.id}/steps/${mid.id}?splice=true`)).statusCode).toBe(204);
    expect(await transitionsOf(wf.id)).toEqual([{ from_step_id: trig.id, to_step_id: exit.id, branch: null }]);
  });
});

/** An execution of a fresh contact with a step execution at `stepId` in `status`. */
async function atStep(p: TestProject, wfId: string, stepId: string, status: 'PENDING' | 'WAITING' | 'RUNNING' | 'COMPLETED') {
  const c = await t.db.db.insertInto('contacts').values({ project_id: p.id, email: `${Math.random().toString(36).slice(2)}@example.com`, subscribed: true }).returning('id').executeTakeFirstOrThrow();
  const ex = await t.db.db.insertInto('workflow_executions').values({ project_id: p.id, workflow_id: wfId, contact_id: c.id, status: 'WAITING' }).returning('id').executeTakeFirstOrThrow();
  await t.db.db.insertInto('workflow_step_executions').values({ project_id: p.id, execution_id: ex.id, workflow_id: wfId, step_id: stepId, status }).execute();
}
