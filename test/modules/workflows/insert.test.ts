import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { type ErrorJson, fieldsOf, type StepJson, type TransitionJson, workflowClient } from './definitions-helpers.js';

/** POST /workflows/:id/steps with `insert` / `after`: the step and its links in one transaction. */

let t: TestApp;
let w: ReturnType<typeof workflowClient>;
beforeAll(async () => {
  t = await createTestApp();
  w = workflowClient(t);
});
afterAll(() => t.close());

type Added = StepJson & { transitions?: TransitionJson[] };

const edgesOf = async (wfId: string) =>
  (await t.db.db.selectFrom('workflow_transitions').select(['from_step_id as from', 'to_step_id as to', 'branch']).where('workflow_id', '=', wfId).execute()).sort((a, b) =>
    `${a.from}${a.branch}`.localeCompare(`${b.from}${b.branch}`),
  );
const stepCount = async (wfId: string) => (await t.db.db.selectFrom('workflow_steps').select('id').where('workflow_id', '=', wfId).execute()).length;
const sorted = <T extends { from: string; branch: string | null }>(edges: T[]) => [...edges].sort((a, b) => `${a.from}${a.branch}`.localeCompare(`${b.from}${b.branch}`));

/** A project, a workflow TRIGGER → DELAY, and a way to add steps. */
async function setup() {
  const p = await w.fresh();
  const wf = await w.create(p);
  const trig = await w.trigger(p, wf.id);
  const d = await w.addStep(p, wf.id, { ...w.delay, name: 'Wait' });
  const edge = await w.link(p, wf.id, trig.id, d.id);
  const add = (body: object) => w.call(p, 'POST', `/workflows/${wf.id}/steps`, body);
  return { p, wf, trig, d, edge, add };
}
const condition = { type: 'CONDITION', config: { field: 'subscribed', operator: 'equals', value: true } };

describe('POST /workflows/:id/steps with insert (on a transition)', () => {
  it('puts the step on the edge: source → new with the old branch, new → target, the old edge gone', async () => {
    const { wf, trig, d, edge, add } = await setup();
    const res = await add({ ...w.delay, name: 'Between', insert: { transitionId: edge.id } });
    expect(res.statusCode, res.body).toBe(201);
    const step = res.json<Added>();
    expect(step).toMatchObject({ type: 'DELAY', name: 'Between', config: { amount: 1, unit: 'hours' } });
    expect(step.transitions).toEqual([
      { id: expect.any(String), fromStepId: trig.id, toStepId: step.id, branch: null },
      { id: expect.any(String), fromStepId: step.id, toStepId: d.id, branch: null },
    ]);
    expect(await edgesOf(wf.id)).toEqual(sorted([{ from: trig.id, to: step.id, branch: null }, { from: step.id, to: d.id, branch: null }]));
    expect(step.transitions?.map((x) => x.id)).not.toContain(edge.id);
  });

  it('a CONDITION in the middle continues on yes; a WAIT_FOR_EVENT on event', async () => {
    const { wf, trig, d, edge, add } = await setup();
    const cond = (await add({ ...condition, insert: { transitionId: edge.id } })).json<Added>();
    expect(cond.transitions?.[1]).toMatchObject({ fromStepId: cond.id, toStepId: d.id, branch: 'yes' });
    const wait = await add({ type: 'WAIT_FOR_EVENT', config: { eventName: 'paid', timeout: 60 }, insert: { transitionId: cond.transitions?.[1]?.id } });
    expect(wait.statusCode, wait.body).toBe(201);
    const waitStep = wait.json<Added>();
    expect(await edgesOf(wf.id)).toEqual(
      sorted([
        { from: trig.id, to: cond.id, branch: null },
        { from: cond.id, to: waitStep.id, branch: 'yes' },
        { from: waitStep.id, to: d.id, branch: 'event' },
      ]),
    );
  });

  it("on a CONDITION's no edge: the new step takes the no branch", async () => {
    const { p, wf, trig, add } = await setup();
    const cond = await w.addStep(p, wf.id, condition);
    const target = await w.addStep(p, wf.id, w.delay);
    const no = await w.link(p, wf.id, cond.id, target.id, { branch: 'no' });
    const res = await add({ ...w.delay, insert: { transitionId: no.id } });
    expect(res.statusCode, res.body).toBe(201);
    const step = res.json<Added>();
    expect(step.transitions).toMatchObject([
      { fromStepId: cond.id, toStepId: step.id, branch: 'no' },
      { fromStepId: step.id, toStepId: target.id, branch: null },
    ]);
    expect((await edgesOf(wf.id)).filter((e) => e.from !== trig.id)).toEqual(
      sorted([
        { from: cond.id, to: step.id, branch: 'no' },
        { from: step.id, to: target.id, branch: null },
      ]),
    );
  });

  it('refuses EXIT between two steps (422 type) and a gone transition (404), leaving no step', async () => {
    const { wf, edge, add } = await setup();
    const before = await stepCount(wf.id);
    const exit = await add({ type: 'EXIT', config: {}, insert: { transitionId: edge.id } });
    expect(exit.statusCode, exit.body).toBe(422);
    expect(fieldsOf(exit.json<ErrorJson>())).toEqual(['type']);
    const gone = await add({ ...w.delay, insert: { transitionId: randomUUID() } });
    expect(gone.statusCode, gone.body).toBe(404);
    expect((await add({ ...w.delay, insert: { transitionId: 'not-a-uuid' } })).statusCode).toBe(404);
    // An invalid config is the usual 422, before anything is written.
    const bad = await add({ type: 'DELAY', config: { amount: 0, unit: 'days' }, insert: { transitionId: edge.id } });
    expect(fieldsOf(bad.json<ErrorJson>())).toEqual(['config.amount']);
    expect(await stepCount(wf.id)).toBe(before);
    expect(await edgesOf(wf.id)).toHaveLength(1);
  });

  it('a rule broken by the new links rolls the step back (a legacy branch-less edge out of a WAIT_FOR_EVENT)', async () => {
    const { p, wf, add } = await setup();
    const wait = await w.addStep(p, wf.id, { type: 'WAIT_FOR_EVENT', config: { eventName: 'paid' } });
    const target = await w.addStep(p, wf.id, w.delay);
    // Stored before branches were required: the rules refuse a new branch-less edge from it.
    const legacy = await t.db.db
      .insertInto('workflow_transitions')
      .values({ project_id: p.id, workflow_id: wf.id, from_step_id: wait.id, to_step_id: target.id, branch: null })
      .returning('id')
      .executeTakeFirstOrThrow();
    const before = await stepCount(wf.id);
    const res = await add({ ...w.delay, insert: { transitionId: legacy.id } });
    expect(res.statusCode, res.body).toBe(422);
    expect(fieldsOf(res.json<ErrorJson>())).toEqual(['insert.transitionId']);
    expect(await stepCount(wf.id)).toBe(before);
    expect((await edgesOf(wf.id)).some((e) => e.from === wait.id && e.to === target.id)).toBe(true);
  });

  it("another project's workflow or transition is 404", async () => {
    const { wf, edge } = await setup();
    const other = await w.fresh();
    const res = await w.call(other, 'POST', `/workflows/${wf.id}/steps`, { ...w.delay, insert: { transitionId: edge.id } });
    expect(res.statusCode, res.body).toBe(404);
    const otherWf = await w.create(other);
    const cross = await w.call(other, 'POST', `/workflows/${otherWf.id}/steps`, { ...w.delay, insert: { transitionId: edge.id } });
    expect(cross.statusCode, cross.body).toBe(404);
    expect(await stepCount(wf.id)).toBe(2);
    expect(await stepCount(otherWf.id)).toBe(1);
  });

  it('two inserts on one edge at once: one wins, the other is 404, no dangling step', async () => {
    const { wf, trig, d, edge, add } = await setup();
    const results = await Promise.all([add({ ...w.delay, name: 'A', insert: { transitionId: edge.id } }), add({ ...w.delay, name: 'B', insert: { transitionId: edge.id } })]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 404]);
    const won = results.find((r) => r.statusCode === 201)?.json<Added>();
    expect(await stepCount(wf.id)).toBe(3);
    expect(await edgesOf(wf.id)).toEqual(sorted([{ from: trig.id, to: won?.id ?? '', branch: null }, { from: won?.id ?? '', to: d.id, branch: null }]));
  });
});

describe('POST /workflows/:id/steps with after (on an open output)', () => {
  it("links a leaf's output to the new step; CONDITION yes and no", async () => {
    const { p, wf, d, add } = await setup();
    const leaf = await add({ ...w.delay, name: 'Leaf', after: { stepId: d.id } });
    expect(leaf.statusCode, leaf.body).toBe(201);
    const leafStep = leaf.json<Added>();
    expect(leafStep.transitions).toMatchObject([{ fromStepId: d.id, toStepId: leafStep.id, branch: null }]);
    const cond = await w.addStep(p, wf.id, condition);
    const yes = (await add({ ...w.delay, after: { stepId: cond.id, branch: 'yes' } })).json<Added>();
    const no = (await add({ type: 'EXIT', config: {}, after: { stepId: cond.id, branch: 'no' } })).json<Added>();
    expect((await edgesOf(wf.id)).filter((e) => e.from === cond.id)).toEqual(
      sorted([
        { from: cond.id, to: no.id, branch: 'no' },
        { from: cond.id, to: yes.id, branch: 'yes' },
      ]),
    );
  });

  it('the rules of POST /transitions, named after.*; a taken output is 409; nothing written on refusal', async () => {
    const { p, wf, d, add } = await setup();
    const cond = await w.addStep(p, wf.id, condition);
    const exit = await w.addStep(p, wf.id, { type: 'EXIT', config: {} });
    const before = await stepCount(wf.id);
    const cases: [object, string][] = [
      [{ stepId: cond.id }, 'after.branch'],
      [{ stepId: cond.id, branch: 'event' }, 'after.branch'],
      [{ stepId: d.id, branch: 'yes' }, 'after.branch'],
      [{ stepId: exit.id }, 'after.stepId'],
      [{ stepId: randomUUID() }, 'after.stepId'],
    ];
    for (const [after, field] of cases) {
      const res = await add({ ...w.delay, after });
      expect(res.statusCode, `${JSON.stringify(after)} ${res.body}`).toBe(422);
      expect(fieldsOf(res.json<ErrorJson>())).toEqual([field]);
    }
    // The trigger's output is taken (TRIGGER → Wait).
    const trig = await w.trigger(p, wf.id);
    const taken = await add({ ...w.delay, after: { stepId: trig.id } });
    expect(taken.statusCode, taken.body).toBe(409);
    const both = await add({ ...w.delay, after: { stepId: d.id }, insert: { transitionId: randomUUID() } });
    expect(both.statusCode).toBe(422);
    expect(await stepCount(wf.id)).toBe(before);
    expect(await edgesOf(wf.id)).toHaveLength(1);
  });

  it('two appends on one output at once: one wins, the other is 409, no dangling step', async () => {
    const { wf, d, add } = await setup();
    const results = await Promise.all([add({ ...w.delay, after: { stepId: d.id } }), add({ ...w.delay, after: { stepId: d.id } })]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    expect(await stepCount(wf.id)).toBe(3);
    expect(await edgesOf(wf.id)).toHaveLength(2);
  });

  it('without insert or after: as before, no transitions in the answer', async () => {
    const { wf, add } = await setup();
    const res = await add(w.delay);
    expect(res.statusCode).toBe(201);
    expect(res.json<Added>()).not.toHaveProperty('transitions');
    expect(await edgesOf(wf.id)).toHaveLength(1);
  });
});
