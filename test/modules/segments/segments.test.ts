import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { emailOf, seedPeople } from '../../conditions/fixtures.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

interface SegmentJson {
  id: string;
  name: string;
  description: string;
  type: string;
  condition: unknown;
  trackMembership: boolean;
  memberCount: number;
  projectId: string;
}
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const call = (p: TestProject, method: Method, url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(p.secret), ...(payload !== undefined && { payload }) });
const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });
async function create(p: TestProject, body: object): Promise<SegmentJson> {
  const res = await call(p, 'POST', '/segments', body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json<SegmentJson>();
}
async function fresh(): Promise<{ p: TestProject; domain: string }> {
  const { project } = await newProject(t.app);
  const domain = `${project.id.slice(0, 8)}.test`;
  await seedPeople(t.db, project.id, domain);
  return { p: project, domain };
}

describe('POST /segments', () => {
  it('creates a DYNAMIC segment by default and returns it (201)', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'Pro', condition: tree({ field: 'data.plan', operator: 'equals', value: 'pro' }) });
    expect(seg).toMatchObject({ name: 'Pro', description: '', type: 'DYNAMIC', trackMembership: false, memberCount: 2, projectId: p.id });
  });
  it('answers the legacy 400 {error} for a DYNAMIC segment without an object condition', async () => {
    const { p } = await fresh();
    for (const condition of [undefined, null, 'x', [1]]) {
      const res = await call(p, 'POST', '/segments', { name: 'X', ...(condition !== undefined && { condition }) });
      expect(res.statusCode).toBe(400);
      expect(Object.keys(res.json<object>())).toEqual(['error']);
    }
  });
  it('422s naming the filter, and on name/description limits', async () => {
    const { p } = await fresh();
    const res = await call(p, 'POST', '/segments', { name: 'X', condition: tree({ field: 'data.a', operator: 'exists' }, { field: 'what', operator: 'equals', value: 1 }) });
    expect(res.statusCode).toBe(422);
    expect(res.json<{ error: { errors: { field: string }[] } }>().error.errors[0]?.field).toBe('condition.groups.0.filters.1.field');
    expect((await call(p, 'POST', '/segments', { name: 'x'.repeat(101), type: 'STATIC' })).statusCode).toBe(422);
    expect((await call(p, 'POST', '/segments', { name: 'x', description: 'd'.repeat(501), type: 'STATIC' })).statusCode).toBe(422);
  });
  it('STATIC ignores a condition', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'S', type: 'STATIC', condition: tree({ field: 'nope', operator: 'equals' }) });
    expect(seg.condition).toBeNull();
  });
});

describe('list, get, patch, delete', () => {
  it('lists newest first, gets one, isolates projects', async () => {
    const { p } = await fresh();
    const a = await create(p, { name: 'A', type: 'STATIC' });
    const b = await create(p, { name: 'B', type: 'STATIC' });
    expect((await call(p, 'GET', '/segments')).json<SegmentJson[]>().map((s) => s.id)).toEqual([b.id, a.id]);
    expect((await call(p, 'GET', `/segments/${a.id}`)).json<SegmentJson>().name).toBe('A');
    const { project: other } = await newProject(t.app);
    expect((await call(other, 'GET', `/segments/${a.id}`)).statusCode).toBe(404);
    expect((await call(other, 'GET', '/segments')).json<unknown[]>()).toEqual([]);
    expect((await call(other, 'DELETE', `/segments/${a.id}`)).statusCode).toBe(404);
    expect((await call(p, 'GET', '/segments/not-a-uuid')).statusCode).toBe(404);
  });
  it('patches; a condition on STATIC is 409; a self-reference is 422', async () => {
    const { p } = await fresh();
    const d = await create(p, { name: 'D', condition: tree() });
    const s = await create(p, { name: 'S', type: 'STATIC' });
    const res = await call(p, 'PATCH', `/segments/${d.id}`, { name: 'D2', trackMembership: true, condition: tree({ field: 'subscribed', operator: 'equals', value: true }) });
    expect(res.json<SegmentJson>()).toMatchObject({ name: 'D2', trackMembership: true, condition: tree({ field: 'subscribed', operator: 'equals', value: true }) });
    expect((await call(p, 'PATCH', `/segments/${s.id}`, { condition: tree() })).statusCode).toBe(409);
    expect((await call(p, 'PATCH', `/segments/${d.id}`, { condition: tree({ field: `segment.${d.id}`, operator: 'memberOfSegment' }) })).statusCode).toBe(422);
    const e = await create(p, { name: 'E', condition: tree({ field: `segment.${d.id}`, operator: 'memberOfSegment' }) });
    const cycle = await call(p, 'PATCH', `/segments/${d.id}`, { condition: tree({ field: `segment.${e.id}`, operator: 'notMemberOfSegment' }) });
    expect(cycle.statusCode).toBe(422);
  });
  it('refuses DELETE while a SCHEDULED campaign or another segment uses it (409), else 204', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'Used', type: 'STATIC' });
    const camp = await t.db.db
      .insertInto('campaigns')
      .values({ project_id: p.id, from_email: 'a@b.c', status: 'SCHEDULED', audience_type: 'SEGMENT', segment_id: seg.id })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect((await call(p, 'DELETE', `/segments/${seg.id}`)).statusCode).toBe(409);
    await t.db.db.updateTable('campaigns').set({ status: 'SENT' }).where('id', '=', camp.id).execute();
    const ref = await create(p, { name: 'Ref', condition: tree({ field: `segment.${seg.id}`, operator: 'memberOfSegment' }) });
    const res = await call(p, 'DELETE', `/segments/${seg.id}`);
    expect(res.statusCode).toBe(409);
    expect(res.json<{ error: { details: { segments: string[] } } }>().error.details.segments).toEqual([ref.id]);
    expect((await call(p, 'DELETE', `/segments/${ref.id}`)).statusCode).toBe(204);
    expect((await call(p, 'DELETE', `/segments/${seg.id}`)).statusCode).toBe(204);
    const after = await t.db.db.selectFrom('campaigns').select('segment_id').where('id', '=', camp.id).executeTakeFirstOrThrow();
    expect(after.segment_id).toBeNull();
  });
  it('refuses DELETE while a workflow CONDITION step filters on it (409 naming the workflow), until the step changes', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'VIP', type: 'STATIC' });
    const wf = (await call(p, 'POST', '/workflows', { name: 'Onboarding', eventName: 'signed_up' })).json<{ id: string }>();
    const trigger = (await call(p, 'GET', `/workflows/${wf.id}`)).json<{ steps: { id: string }[] }>().steps[0]?.id ?? '';
    const condition = { logic: 'OR', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@' }] }, { filters: [{ field: `segment.${seg.id}`, operator: 'memberOfSegment' }] }] };
    const step = await call(p, 'POST', `/workflows/${wf.id}/steps`, { type: 'CONDITION', name: 'VIP?', config: { condition }, after: { stepId: trigger } });
    expect(step.statusCode, step.body).toBe(201);
    const res = await call(p, 'DELETE', `/segments/${seg.id}`);
    expect(res.statusCode).toBe(409);
    expect(res.json<{ error: { details: { workflows: { id: string; name: string }[] } } }>().error.details.workflows).toEqual([{ id: wf.id, name: 'Onboarding' }]);
    const changed = await call(p, 'PATCH', `/workflows/${wf.id}/steps/${step.json<{ id: string }>().id}`, { config: { field: 'email', operator: 'contains', value: '@' } });
    expect(changed.statusCode, changed.body).toBe(200);
    expect((await call(p, 'DELETE', `/segments/${seg.id}`)).statusCode).toBe(204);
  });
});

describe('members', () => {
  it('pages live DYNAMIC members (pageSize clamped to 100)', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'Subs', condition: tree({ field: 'subscribed', operator: 'equals', value: true }) });
    const page = (await call(p, 'GET', `/segments/${seg.id}/contacts?page=2&pageSize=4`)).json<{ data: unknown[]; total: number; totalPages: number; page: number }>();
    expect(page).toMatchObject({ page: 2, pageSize: 4, total: 10, totalPages: 3 });
    expect(page.data).toHaveLength(4);
    expect((await call(p, 'GET', `/segments/${seg.id}/contacts?pageSize=500`)).json<{ pageSize: number }>().pageSize).toBe(100);
  });
  it('reuses a DYNAMIC total counted less than a minute ago for the segment as it is; rows stay live', async () => {
    const { p, domain } = await fresh();
    const seg = await create(p, { name: 'Subs', condition: tree({ field: 'subscribed', operator: 'equals', value: true }) });
    type Page = { data: { email: string }[]; total: number };
    const page = async () => (await call(p, 'GET', `/segments/${seg.id}/contacts?pageSize=100`)).json<Page>();
    expect((await page()).total).toBe(10);
    expect((await call(p, 'GET', `/segments/${seg.id}`)).json<SegmentJson>().memberCount).toBe(10); // cached by the page
    await t.db.db.insertInto('contacts').values({ project_id: p.id, email: emailOf('zed', domain), subscribed: true }).execute();
    let now = await page();
    expect(now.data.map((c) => c.email)).toContain(emailOf('zed', domain)); // live rows
    expect(now.total).toBe(10); // the count of a moment ago
    await t.db.db
      .updateTable('segments')
      .set({ counted_at: new Date(Date.now() - 61_000), condition_changed_at: new Date(Date.now() - 120_000) })
      .where('id', '=', seg.id)
      .execute();
    expect((await page()).total).toBe(11); // older than a minute: counted again (fast here, so it is waited for)
    await call(p, 'PATCH', `/segments/${seg.id}`, { condition: tree({ field: 'subscribed', operator: 'equals', value: false }) });
    now = await page();
    expect(now.total).toBe(now.data.length); // a changed segment is counted again
    expect(now.total).not.toBe(11);
    await t.db.db.updateTable('contacts').set({ subscribed: false }).where('project_id', '=', p.id).where('email', '=', emailOf('zed', domain)).execute();
    const refreshed = (await call(p, 'POST', `/segments/${seg.id}/refresh`)).json<SegmentJson>().memberCount;
    expect((await page()).total).toBe(refreshed); // refresh also feeds the page
  });
  it('adds and removes STATIC members by email, creating missing ones on request', async () => {
    const { p, domain } = await fresh();
    const seg = await create(p, { name: 'Hand', type: 'STATIC' });
    const emails = [emailOf('alice', domain), emailOf('BOB', domain), 'new1@x.test', 'new2@x.test'];
    let res = await call(p, 'POST', `/segments/${seg.id}/members`, { emails });
    expect(res.json()).toEqual({ added: 2, alreadyMembers: 0, created: 0, notFound: 2, memberCount: 2 });
    res = await call(p, 'POST', `/segments/${seg.id}/members`, { emails, createMissing: true, subscribed: false });
    expect(res.json()).toEqual({ added: 2, alreadyMembers: 2, created: 2, notFound: 0, memberCount: 4 });
    const created = await t.db.db.selectFrom('contacts').select('subscribed').where('project_id', '=', p.id).where('email', '=', 'new1@x.test').executeTakeFirstOrThrow();
    expect(created.subscribed).toBe(false);
    const page = (await call(p, 'GET', `/segments/${seg.id}/contacts`)).json<{ total: number }>();
    expect(page.total).toBe(4);
    res = await call(p, 'DELETE', `/segments/${seg.id}/members`, { emails: [emailOf('alice', domain), emailOf('carol', domain), 'zz@x.test'] });
    expect(res.json()).toEqual({ removed: 1, notMembers: 1, notFound: 1, memberCount: 3 });
    expect((await call(p, 'GET', `/segments/${seg.id}`)).json<SegmentJson>().memberCount).toBe(3);
    expect((await call(p, 'POST', `/segments/${seg.id}/members`, { emails: [] })).statusCode).toBe(422);
    const dyn = await create(p, { name: 'Dyn', condition: tree() });
    expect((await call(p, 'POST', `/segments/${dyn.id}/members`, { emails })).statusCode).toBe(409);
  });
  it('segment filters use STATIC members and inline DYNAMIC conditions', async () => {
    const { p, domain } = await fresh();
    const s = await create(p, { name: 'S', type: 'STATIC' });
    await call(p, 'POST', `/segments/${s.id}/members`, { emails: [emailOf('alice', domain), emailOf('bob', domain)] });
    const d = await create(p, { name: 'D', condition: tree({ field: 'subscribed', operator: 'equals', value: false }) });
    const both = await create(p, { name: 'Both', condition: tree({ field: `segment.${s.id}`, operator: 'memberOfSegment' }, { field: `segment.${d.id}`, operator: 'notMemberOfSegment' }) });
    const res = (await call(p, 'POST', `/segments/${both.id}/refresh`)).json<SegmentJson>();
    expect(res.memberCount).toBe(1); // alice: a member of S and subscribed
  });
});

describe('compute and refresh', () => {
  const eventsOf = (projectId: string) =>
    t.db.db.selectFrom('events').select(['name', 'contact_id']).where('project_id', '=', projectId).where('name', 'like', 'segment.%').execute();

  it('records entry and exit events exactly once per change; refresh records nothing', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'VIP Users!', trackMembership: true, condition: tree({ field: 'data.plan', operator: 'equals', value: 'pro' }) });
    expect((await call(p, 'POST', `/segments/${seg.id}/refresh`)).json<SegmentJson>().memberCount).toBe(2);
    expect(await eventsOf(p.id)).toEqual([]);
    expect((await call(p, 'POST', `/segments/${seg.id}/compute`)).json()).toEqual({ memberCount: 2, entered: 2, exited: 0 });
    expect((await call(p, 'POST', `/segments/${seg.id}/compute`)).json()).toEqual({ memberCount: 2, entered: 0, exited: 0 });
    await call(p, 'PATCH', `/segments/${seg.id}`, { condition: tree({ field: 'data.age', operator: 'greaterThanOrEqual', value: 30 }) });
    // alice stays; ivan (age "30") stays; carol (42.5) joins
    expect((await call(p, 'POST', `/segments/${seg.id}/compute`)).json()).toEqual({ memberCount: 3, entered: 1, exited: 0 });
    await call(p, 'PATCH', `/segments/${seg.id}`, { condition: tree({ field: 'data.age', operator: 'lessThan', value: 20 }) });
    const results = await Promise.all(Array.from({ length: 5 }, () => call(p, 'POST', `/segments/${seg.id}/compute`)));
    const sums = results.map((r) => r.json<{ entered: number; exited: number }>());
    expect(sums.reduce((n, r) => n + r.entered, 0)).toBe(2); // grace, judy
    expect(sums.reduce((n, r) => n + r.exited, 0)).toBe(3);
    const events = await eventsOf(p.id);
    expect(events.filter((e) => e.name === 'segment.vip-users.entry')).toHaveLength(5);
    expect(events.filter((e) => e.name === 'segment.vip-users.exit')).toHaveLength(3);
    expect(events).toHaveLength(8);
    const row = await t.db.db.selectFrom('segments').select(['member_count', 'computed_at']).where('id', '=', seg.id).executeTakeFirstOrThrow();
    expect(row.member_count).toBe(2);
    expect(row.computed_at).not.toBeNull();
  });
  it('an untracked segment computes its count only', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'Plain', condition: tree({ field: 'event.purchase', operator: 'triggered' }) });
    expect((await call(p, 'POST', `/segments/${seg.id}/compute`)).json()).toEqual({ memberCount: 3, entered: 0, exited: 0 });
    expect(await eventsOf(p.id)).toEqual([]);
  });
});

describe('usage endpoints', () => {
  it('field and event usage name the segments referencing them', async () => {
    const { p } = await fresh();
    const seg = await create(p, { name: 'U', condition: tree({ field: 'data.plan', operator: 'exists' }, { field: 'event.purchase', operator: 'triggered' }) });
    const field = (await call(p, 'GET', '/contacts/fields/plan/usage')).json<{ segments: { id: string }[] }>();
    expect(field.segments).toEqual([{ id: seg.id, name: 'U' }]);
    const event = (await call(p, 'GET', '/events/purchase/usage')).json<{ segments: { id: string }[] }>();
    expect(event.segments).toEqual([{ id: seg.id, name: 'U' }]);
    expect((await call(p, 'GET', '/events/login/usage')).json<{ segments: unknown[] }>().segments).toEqual([]);
  });
});
