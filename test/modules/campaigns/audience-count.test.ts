import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { emailOf, seedPeople } from '../../conditions/fixtures.js';
import { expectEnvelope } from '../../helpers/envelope.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const PRO = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };

/** A project with the known population (12 people; bob and ivan unsubscribed), beside another project with the same people. */
async function seeded() {
  const { project } = await newProject(t.app);
  const domain = 'people.example';
  await seedPeople(t.db, project.id, domain);
  const { project: other } = await newProject(t.app);
  await seedPeople(t.db, other.id, domain);
  const call = (method: 'POST', url: string, payload: object) => t.app.inject({ method, url, headers: bearer(project.secret), payload });
  const count = async (payload: object) => {
    const res = await call('POST', '/campaigns/audience-count', payload);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ count: number }>().count;
  };
  return { call, count, domain };
}

describe('POST /campaigns/audience-count (the composer\'s live recipient count)', () => {
  it('counts what a send would queue now: the audience, subscribed only for marketing, less suppressed addresses', async () => {
    const { call, count, domain } = await seeded();
    expect(await count({ audienceType: 'ALL' })).toBe(10);
    expect(await count({ audienceType: 'ALL', type: 'TRANSACTIONAL' })).toBe(12);
    // plan equals "pro": alice and ivan; ivan is unsubscribed.
    expect(await count({ audienceType: 'FILTERED', audienceCondition: PRO })).toBe(1);
    expect(await count({ audienceType: 'FILTERED', audienceCondition: PRO, type: 'TRANSACTIONAL' })).toBe(2);
    const segment = await call('POST', '/segments', { name: 'Pro', condition: PRO });
    expect(segment.statusCode, segment.body).toBe(201);
    const segmentId = segment.json<{ id: string }>().id;
    expect(await count({ audienceType: 'SEGMENT', segmentId })).toBe(1);
    expect((await call('POST', '/suppressions', { email: emailOf('alice', domain) })).statusCode).toBe(201);
    expect(await count({ audienceType: 'SEGMENT', segmentId })).toBe(0);
    expect(await count({ audienceType: 'ALL' })).toBe(9);
  });

  it('refuses an audience a campaign could not have, with 422 naming the field', async () => {
    const { call } = await seeded();
    const refused = async (payload: object, field: string) => {
      const res = await call('POST', '/campaigns/audience-count', payload);
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.json().error.errors[0].field).toMatch(new RegExp(`^${field}`));
    };
    await refused({ audienceType: 'SEGMENT' }, 'segmentId');
    await refused({ audienceType: 'SEGMENT', segmentId: '00000000-0000-4000-8000-000000000000' }, 'segmentId');
    await refused({ audienceType: 'FILTERED' }, 'audienceCondition');
    await refused({ audienceType: 'FILTERED', audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'between' }] }] } }, 'audienceCondition');
    await refused({ audienceType: 'EVERYONE' }, 'audienceType');
  });
});
