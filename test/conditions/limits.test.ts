import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DEPTH, MAX_FILTERS, MAX_GROUPS } from '../../src/conditions/index.js';
import { bearer } from '../helpers/accounts.js';
import { createSendTestApp, type SendTestApp } from '../modules/emails/helpers.js';
import { api, createCampaign, type Sender, sender } from '../modules/campaigns/helpers.js';

// Own database: campaigns (test/README).
let t: SendTestApp;
let s: Sender;
beforeAll(async () => {
  t = await createSendTestApp();
  s = await sender(t);
});
afterAll(async () => {
  await t?.close();
});

/**
 * A condition `levels` levels of nested `conditions` deep, as JSON text built iteratively
 * (JSON.stringify of the object would itself recurse). `compact` leaves out logic and filters.
 */
function nested(levels: number, compact = false): string {
  const open = compact ? '{"groups":[{"conditions":' : '{"logic":"AND","groups":[{"filters":[],"conditions":';
  return `${open.repeat(levels)}{"logic":"AND","groups":[]}${'}]}'.repeat(levels)}`;
}
const deepPath = (prefix: string) => `${prefix}${'.groups.0.conditions'.repeat(MAX_DEPTH + 1)}`;

const post = (url: string, json: string) =>
  t.app.inject({ method: 'POST', url, headers: { ...bearer(s.project.secret), 'content-type': 'application/json' }, payload: json });
const segmentBody = (condition: string) => `{"name":"deep","condition":${condition}}`;
const campaignBody = (condition: string) => `{"name":"deep","from":"${s.from}","audienceType":"FILTERED","audienceCondition":${condition}}`;

interface Failure {
  error: { code: string; errors: { field: string; code: string; message: string }[] };
}

describe('nesting and size of a condition', () => {
  it('answers 422 naming the maximum depth for 700 and 10,000 levels, on segments and campaigns', async () => {
    for (const levels of [MAX_DEPTH + 1, 700, 10_000]) {
      for (const [url, body, prefix] of [
        ['/segments', segmentBody, 'condition'],
        ['/campaigns', campaignBody, 'audienceCondition'],
      ] as const) {
        const res = await post(url, body(nested(levels)));
        expect(res.statusCode, `${url} ${levels}: ${res.body.slice(0, 200)}`).toBe(422);
        expect(res.json<Failure>().error.errors).toEqual([
          { field: deepPath(prefix), code: 'too_deep', message: `Conditions nest at most ${MAX_DEPTH} levels deep` },
        ]);
      }
    }
    expect((await post('/segments', segmentBody(nested(MAX_DEPTH)))).statusCode).toBe(201);
  });

  it('never answers 500 for 100,000 levels: past the body limit (413), or within it 422', async () => {
    const tooLarge = await post('/segments', segmentBody(nested(100_000)));
    expect(tooLarge.statusCode).toBe(413);
    // The campaign body limit (4 MiB) takes the compact form: the depth rule answers.
    const res = await post('/campaigns', campaignBody(nested(100_000, true)));
    expect(res.statusCode).toBe(422);
    expect(res.json<Failure>().error.errors[0]).toMatchObject({ field: deepPath('audienceCondition'), code: 'too_deep' });
    expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });

  it('bounds the groups and filters of one tree over all levels', async () => {
    const filter = { field: 'data.a', operator: 'exists' };
    // Six levels of 50 groups is 300 groups (each level within the per-level 50).
    let wide: object = { logic: 'OR', groups: [] };
    for (let level = 0; level < 6; level++) wide = { logic: 'OR', groups: Array.from({ length: 50 }, (_, i) => (i === 0 ? { filters: [], conditions: wide } : { filters: [] })) };
    const groups = await post('/segments', segmentBody(JSON.stringify(wide)));
    expect(groups.statusCode).toBe(422);
    expect(groups.json<Failure>().error.errors[0]).toMatchObject({ field: 'condition', code: 'too_big', message: expect.stringContaining(`${MAX_GROUPS} groups`) });
    const many = { logic: 'AND', groups: Array.from({ length: 6 }, () => ({ filters: Array.from({ length: 100 }, () => filter) })) };
    const filters = await post('/campaigns', campaignBody(JSON.stringify(many)));
    expect(filters.statusCode).toBe(422);
    expect(filters.json<Failure>().error.errors[0]).toMatchObject({ field: 'audienceCondition', code: 'too_big', message: expect.stringContaining(`${MAX_FILTERS} filters`) });
  });
});

const BAD_DATES = ['2024-02-30', '2023-02-29', '0000-01-01', '0999-12-31', '2024-01-01 (x)', '2024-01-01T10:00:00', '2024-13-01', '2024-01-01T24:00:00Z', 'March 7, 2026'];
const GOOD_DATES = ['2024-02-29', '2024-01-01T10:00:00+05:00', '2024-01-01T10:00+0530', '2024-01-01T10:00:00.123456Z', '9999-12-31'];
const onDate = (field: string, value: unknown) => ({ logic: 'AND', groups: [{ filters: [{ field, operator: 'lessThan', value }] }] });

describe('dates', () => {
  it('refuses impossible or ambiguous dates in conditions with 422 naming the value, on segments and campaigns', async () => {
    for (const value of BAD_DATES) {
      for (const field of ['createdAt', 'data.signup']) {
        const seg = await api(t.app, s.project, 'POST', '/segments', { name: 'd', condition: onDate(field, value) });
        expect(seg.statusCode, `${field} ${value}`).toBe(422);
        expect(seg.json<Failure>().error.errors).toEqual([expect.objectContaining({ field: 'condition.groups.0.filters.0.value', code: 'invalid_value' })]);
      }
      const campaign = await api(t.app, s.project, 'POST', '/campaigns', { name: 'd', from: s.from, audienceType: 'FILTERED', audienceCondition: onDate('updatedAt', value) });
      expect(campaign.statusCode, value).toBe(422);
      expect(campaign.json<Failure>().error.errors[0]?.field).toBe('audienceCondition.groups.0.filters.0.value');
    }
  });

  it('accepts the documented forms, and the members page uses them', async () => {
    for (const value of GOOD_DATES) {
      const res = await api(t.app, s.project, 'POST', '/segments', { name: 'd', condition: onDate('createdAt', value) });
      expect(res.statusCode, `${value}: ${res.body}`).toBe(201);
      expect((await api(t.app, s.project, 'GET', `/segments/${res.json<{ id: string }>().id}/contacts`)).statusCode).toBe(200);
    }
  });

  it('answers 422, not 500, for a segment stored with an impossible date before the rule', async () => {
    const [row] = await t.db.db
      .insertInto('segments')
      .values({ project_id: s.project.id, name: 'old', type: 'DYNAMIC', condition: JSON.stringify(onDate('createdAt', '2024-02-30')) })
      .returning('id')
      .execute();
    const res = await api(t.app, s.project, 'GET', `/segments/${row?.id}/contacts`);
    expect(res.statusCode).toBe(422);
    expect(res.json<Failure>().error.errors[0]).toMatchObject({ field: 'condition.groups.0.filters.0.value', code: 'invalid_value' });
  });

  it('scheduledFor: impossible dates and years outside 1000-9999 are 400 like any unparseable value; the campaign stays DRAFT', async () => {
    const c = await createCampaign(t, s);
    for (const scheduledFor of ['2027-02-30T09:00:00Z', '0000-01-01T00:00:00Z', '2027-01-01 (x)', '+020000-01-01T00:00:00Z', 1_900_000_000_000]) {
      const res = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, { scheduledFor });
      expect(res.statusCode, String(scheduledFor)).toBe(400);
      expect(res.json<Failure>().error.code).toBe('BAD_REQUEST');
    }
    const row = await t.db.db.selectFrom('campaigns').select(['status', 'scheduled_for']).where('id', '=', c.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'DRAFT', scheduled_for: null });
    const ok = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, { scheduledFor: '2099-12-01T10:00:00+01:00' });
    expect(ok.json()).toMatchObject({ data: { status: 'SCHEDULED', scheduledFor: '2099-12-01T09:00:00.000Z' } });
  });
});
