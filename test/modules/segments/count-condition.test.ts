import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { seedPeople } from '../../conditions/fixtures.js';
import { expectEnvelope } from '../../helpers/envelope.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** Each filter its own group, joined by `logic`. */
const tree = (logic: 'AND' | 'OR', ...filters: object[]) => ({ logic, groups: filters.map((f) => ({ filters: [f] })) });

describe('POST /segments/count (the live count of an unsaved condition)', () => {
  it("counts the project's contacts the condition matches now, subscribed or not, and saves nothing", async () => {
    const { project } = await newProject(t.app);
    await seedPeople(t.db, project.id);
    const { project: other } = await newProject(t.app);
    await seedPeople(t.db, other.id);
    const count = async (condition: object) => {
      const res = await t.app.inject({ method: 'POST', url: '/segments/count', headers: bearer(project.secret), payload: { condition } });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<{ count: number }>().count;
    };
    // plan equals "pro": alice and ivan (unsubscribed); carol's "PRO" differs in case.
    expect(await count(tree('AND', { field: 'data.plan', operator: 'equals', value: 'pro' }))).toBe(2);
    expect(await count(tree('OR', { field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'data.city', operator: 'equals', value: 'Paris' }))).toBe(3);
    expect(await count(tree('AND', { field: 'event.purchase', operator: 'triggered' }))).toBe(3);
    const segments = await t.app.inject({ method: 'GET', url: '/segments', headers: bearer(project.secret) });
    expect(segments.json()).toEqual([]);
  });

  it('answers 422 naming the bad filter, and 422 without a condition object', async () => {
    const { project } = await newProject(t.app);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/segments/count',
      headers: bearer(project.secret),
      payload: { condition: tree('AND', { field: 'data.plan', operator: 'between', value: 'x' }) },
    });
    expectEnvelope(bad, 422, 'VALIDATION_ERROR');
    expect(bad.json().error.errors[0].field).toMatch(/^condition\.groups\.0\.filters\.0/);
    for (const payload of [{}, { condition: 'x' }, { condition: [] }]) {
      expectEnvelope(await t.app.inject({ method: 'POST', url: '/segments/count', headers: bearer(project.secret), payload }), 422, 'VALIDATION_ERROR');
    }
  });
});
