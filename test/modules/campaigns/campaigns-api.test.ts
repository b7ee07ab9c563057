import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateCampaign } from '../../../src/modules/campaigns/campaigns.repo.js';
import type { Campaign } from '../../../src/modules/campaigns/campaigns.schema.js';
import { newProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { api, createCampaign, sender } from './helpers.js';

// Own database and no worker: nothing here is delivered (the sending tests are in campaigns-send.test.ts).
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(async () => {
  await t?.close();
});

const PRO = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };

describe('POST /campaigns', () => {
  it('creates a DRAFT, wrapped as {success, data}, with defaults and zero counters', async () => {
    const s = await sender(t);
    const res = await api(t.app, s.project, 'POST', '/campaigns', { name: 'N', subject: 'S', body: '<p>B</p>', from: s.from });
    expect(res.statusCode, res.body).toBe(201);
    const { success, data } = res.json<{ success: boolean; data: Campaign }>();
    expect(success).toBe(true);
    expect(data).toMatchObject({
      status: 'DRAFT', type: 'MARKETING', audienceType: 'ALL', segmentId: null, audienceCondition: null, scheduledFor: null,
      totalRecipients: 0, sentCount: 0, deliveredCount: 0, openedCount: 0, clickedCount: 0, bouncedCount: 0,
      projectId: s.project.id, from: s.from, sentAt: null,
    });
    const row = await t.db.db.selectFrom('campaigns').selectAll().where('id', '=', data.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('DRAFT');
  });

  it('answers an unverified sender domain with 403 code INTERNAL_SERVER_ERROR', async () => {
    const s = await sender(t);
    const res = await api(t.app, s.project, 'POST', '/campaigns', { name: 'N', from: 'a@not-verified.example' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ success: false, error: { code: 'INTERNAL_SERVER_ERROR', statusCode: 403 } });
    expect(res.json<{ error: { message: string } }>().error.message).toMatch(/not verified/);
  });

  it('enforces the audience rules with 422: SEGMENT needs a segment of the project, FILTERED a valid condition', async () => {
    const s = await sender(t);
    const other = await sender(t);
    const [foreign] = await t.db.db.insertInto('segments').values({ project_id: other.project.id, name: 'x', type: 'STATIC' }).returning('id').execute();
    const cases: [object, string][] = [
      [{ audienceType: 'SEGMENT' }, 'segmentId'],
      [{ audienceType: 'SEGMENT', segmentId: foreign?.id }, 'segmentId'],
      [{ audienceType: 'SEGMENT', segmentId: 'nope' }, 'segmentId'],
      [{ audienceType: 'FILTERED' }, 'audienceCondition'],
      [{ audienceType: 'FILTERED', audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.x', operator: 'bogus' }] }] } }, 'audienceCondition'],
      [{ audienceType: 'EVERYONE' }, 'audienceType'],
      [{ replyTo: 'not an email' }, 'replyTo'],
    ];
    for (const [body, field] of cases) {
      const res = await api(t.app, s.project, 'POST', '/campaigns', { from: s.from, ...body });
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      const errors = res.json<{ error: { code: string; errors: { field: string }[] } }>().error;
      expect(errors.code).toBe('VALIDATION_ERROR');
      expect(errors.errors.some((e) => e.field.startsWith(field)), JSON.stringify(errors)).toBe(true);
    }
    const missingFrom = await api(t.app, s.project, 'POST', '/campaigns', { name: 'x' });
    expect(missingFrom.statusCode).toBe(422);
  });

  it('accepts SEGMENT and FILTERED audiences and clears the field the type does not use', async () => {
    const s = await sender(t);
    const [seg] = await t.db.db.insertInto('segments').values({ project_id: s.project.id, name: 'vip', type: 'STATIC' }).returning('id').execute();
    const bySegment = await createCampaign(t, s, { audienceType: 'SEGMENT', segmentId: seg?.id, audienceCondition: PRO });
    expect(bySegment).toMatchObject({ audienceType: 'SEGMENT', segmentId: seg?.id, audienceCondition: null });
    const filtered = await createCampaign(t, s, { audienceType: 'FILTERED', audienceCondition: PRO, segmentId: seg?.id });
    expect(filtered).toMatchObject({ audienceType: 'FILTERED', segmentId: null, audienceCondition: PRO });
  });

  it('a DRAFT whose segment was deleted keeps no segment and refuses to send with 422', async () => {
    const s = await sender(t);
    const [seg] = await t.db.db.insertInto('segments').values({ project_id: s.project.id, name: 'gone', type: 'STATIC' }).returning('id').execute();
    const draft = await createCampaign(t, s, { audienceType: 'SEGMENT', segmentId: seg?.id });
    expect((await api(t.app, s.project, 'DELETE', `/segments/${seg?.id}`)).statusCode).toBe(204);
    const after = await api(t.app, s.project, 'GET', `/campaigns/${draft.id}`);
    expect(after.json().segmentId).toBeNull();
    const send = await api(t.app, s.project, 'POST', `/campaigns/${draft.id}/send`, {});
    expect(send.statusCode).toBe(422);
    expect(send.json().error.errors[0].field).toBe('segmentId');
  });
});

describe('GET /campaigns', () => {
  it('pages, filters by status and search (name, subject, sender), sorts, clamps pageSize', async () => {
    const s = await sender(t);
    const a = await createCampaign(t, s, { name: 'Alpha', subject: 'spring sale' });
    const b = await createCampaign(t, s, { name: 'beta', subject: 'news' });
    await t.db.db.updateTable('campaigns').set({ status: 'SENT' }).where('id', '=', b.id).execute();
    const list = (q: string) => api(t.app, s.project, 'GET', `/campaigns${q}`);

    const all = await list('?sort=name&dir=asc&pageSize=500');
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json()).toMatchObject({ page: 1, pageSize: 100, total: 2, totalPages: 1 });
    expect(all.json<{ data: Campaign[] }>().data.map((c) => c.name)).toEqual(['Alpha', 'beta']);
    expect((await list('?sort=bogus&dir=bogus')).json<{ data: Campaign[] }>().data.map((c) => c.id)).toEqual([b.id, a.id]);
    expect((await list('?status=SENT')).json<{ data: Campaign[] }>().data.map((c) => c.id)).toEqual([b.id]);
    expect((await list('?search=SPRING')).json<{ data: Campaign[] }>().data.map((c) => c.id)).toEqual([a.id]);
    expect((await list(`?search=${encodeURIComponent(s.domain)}`)).json<{ total: number }>().total).toBe(2);
    expect((await list('?pageSize=1&page=2')).json()).toMatchObject({ total: 2, totalPages: 2, data: [{ id: a.id }] });
  });

  it('answers an unrecognised status with 400 BAD_REQUEST in the envelope', async () => {
    const s = await sender(t);
    const res = await api(t.app, s.project, 'GET', '/campaigns?status=DONE');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, error: { code: 'BAD_REQUEST', statusCode: 400 } });
  });

  it('isolates projects: another project sees none of them and gets 404 on each', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    const { project: other } = await newProject(t.app);
    expect((await api(t.app, other, 'GET', '/campaigns')).json()).toMatchObject({ total: 0, data: [] });
    for (const [method, url] of [['GET', ''], ['PUT', ''], ['DELETE', ''], ['POST', '/send'], ['POST', '/cancel'], ['POST', '/duplicate'], ['GET', '/stats']] as const) {
      const res = await api(t.app, other, method, `/campaigns/${c.id}${url}`, method === 'PUT' || method === 'POST' ? {} : undefined);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await api(t.app, s.project, 'GET', '/campaigns/not-a-uuid')).statusCode).toBe(404);
    expect((await api(t.app, s.project, 'GET', `/campaigns/${randomUUID()}`)).statusCode).toBe(404);
    // The write itself is scoped to the project too, not only the read before it.
    expect(await updateCampaign(t.db.db, other.id, c.id, { name: 'Stolen' })).toBeUndefined();
    expect((await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json()).toMatchObject({ name: c.name });
  });
});

describe('PUT, DELETE and duplicate', () => {
  it('PUT updates a DRAFT (audience re-validated) and answers 409 once it is SENDING, SENT or CANCELLED', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    const ok = await api(t.app, s.project, 'PUT', `/campaigns/${c.id}`, { name: 'Renamed', audienceType: 'FILTERED', audienceCondition: PRO });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ name: 'Renamed', subject: c.subject, audienceType: 'FILTERED', audienceCondition: PRO });
    expect((await api(t.app, s.project, 'PUT', `/campaigns/${c.id}`, { audienceType: 'SEGMENT' })).statusCode).toBe(422);
    expect((await api(t.app, s.project, 'PUT', `/campaigns/${c.id}`, { from: 'x@unverified.example' })).statusCode).toBe(403);
    await t.db.db.updateTable('campaigns').set({ status: 'SCHEDULED' }).where('id', '=', c.id).execute();
    expect((await api(t.app, s.project, 'PUT', `/campaigns/${c.id}`, { name: 'ok while scheduled' })).statusCode).toBe(200);
    for (const status of ['SENDING', 'SENT', 'CANCELLED'] as const) {
      await t.db.db.updateTable('campaigns').set({ status }).where('id', '=', c.id).execute();
      const res = await api(t.app, s.project, 'PUT', `/campaigns/${c.id}`, { name: 'no' });
      expect(res.statusCode, status).toBe(409);
      expect(res.json()).toMatchObject({ error: { code: 'CONFLICT', details: { status } } });
    }
  });

  it('DELETE answers 409 while SCHEDULED or SENDING, 204 otherwise', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    for (const status of ['SCHEDULED', 'SENDING'] as const) {
      await t.db.db.updateTable('campaigns').set({ status }).where('id', '=', c.id).execute();
      expect((await api(t.app, s.project, 'DELETE', `/campaigns/${c.id}`)).statusCode, status).toBe(409);
    }
    await t.db.db.updateTable('campaigns').set({ status: 'SENT' }).where('id', '=', c.id).execute();
    const res = await api(t.app, s.project, 'DELETE', `/campaigns/${c.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).statusCode).toBe(404);
  });

  it('duplicate makes a new DRAFT copy with no schedule and zero counters, from any state', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s, { audienceType: 'FILTERED', audienceCondition: PRO });
    await t.db.db.updateTable('campaigns').set({ status: 'SENT', scheduled_for: new Date(), total_recipients: 7, sent_at: new Date() }).where('id', '=', c.id).execute();
    const res = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/duplicate`);
    expect(res.statusCode, res.body).toBe(201);
    const copy = res.json<{ success: boolean; data: Campaign }>().data;
    expect(copy.id).not.toBe(c.id);
    expect(copy).toMatchObject({
      name: 'Launch (copy)', status: 'DRAFT', scheduledFor: null, totalRecipients: 0, sentAt: null, sentCount: 0,
      subject: c.subject, body: c.body, audienceType: 'FILTERED', audienceCondition: PRO,
    });
  });

  it('send: only from DRAFT (409), unparseable scheduledFor is 400, an unverified sender at send time is 403', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    const bad = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, { scheduledFor: 'not a date' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: { code: 'BAD_REQUEST' } });
    expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, { scheduledFor: { at: 1 } })).statusCode).toBe(400);
    await t.db.db.updateTable('domains').set({ verified: false }).where('project_id', '=', s.project.id).execute();
    expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(403);
    await t.db.db.updateTable('domains').set({ verified: true }).where('project_id', '=', s.project.id).execute();
    const scheduledFor = new Date(Date.now() + 3_600_000).toUTCString();
    const ok = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, { scheduledFor });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({
      success: true,
      data: { id: c.id, name: c.name, status: 'SCHEDULED', scheduledFor: new Date(scheduledFor).toISOString() },
      message: expect.any(String),
    });
    expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(409);
    const cancel = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/cancel`);
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect(cancel.json()).toMatchObject({ status: 'CANCELLED' });
    const { rows } = await import('kysely').then(({ sql }) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key = ${`campaign-send:${c.id}`}`.execute(t.db.db),
    );
    expect(rows[0]?.n).toBe(0);
    expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/cancel`)).statusCode).toBe(409);
  });

  it('cancel: 409 from DRAFT, SENT and CANCELLED, the campaign unchanged', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    for (const status of ['DRAFT', 'SENT', 'CANCELLED'] as const) {
      await t.db.db.updateTable('campaigns').set({ status, cancelled_at: null }).where('id', '=', c.id).execute();
      const res = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/cancel`);
      expect(res.statusCode, status).toBe(409);
      expect(res.json()).toMatchObject({ error: { code: 'CONFLICT', details: { status } } });
      expect(await t.db.db.selectFrom('campaigns').select(['status', 'cancelled_at']).where('id', '=', c.id).executeTakeFirstOrThrow()).toEqual({ status, cancelled_at: null });
    }
  });

  it('two sends of one DRAFT at once: one 200, the other 409 (the state is checked again on the locked row)', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    // Both sends pass the first check (DRAFT) while this transaction holds the campaign's row,
    // then queue for it; released, they take it one after the other.
    let release = () => undefined as void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked = () => undefined as void;
    const gotLock = new Promise<void>((resolve) => (locked = resolve));
    const holder = t.db.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM campaigns WHERE id = ${c.id} FOR UPDATE`.execute(trx);
      locked();
      await held;
    });
    await gotLock;
    const sends = Promise.all([0, 1].map(() => api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})));
    // This file has a database of its own: the only lock waits in it are these two sends.
    const waiting = async () =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(t.db.db)).rows[0]?.n;
    await until('both sends waiting for the campaign row', async () => (await waiting()) === 2);
    release();
    await holder;
    expect((await sends).map((r) => r.statusCode).sort()).toEqual([200, 409]);
  });

  it('test send: 422 on a bad address', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    const res = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/test`, { email: 'nope' });
    expect(res.statusCode).toBe(422);
  });
});

describe('usage endpoints', () => {
  it('field and event usage name the campaigns whose audience, subject or body use them (newest first), per project', async () => {
    const s = await sender(t);
    const audience = {
      logic: 'AND',
      groups: [{ filters: [{ field: 'event.purchase', operator: 'triggeredWithin', value: 7, unit: 'days' }], conditions: PRO }],
    };
    const filtered = await createCampaign(t, s, { name: 'Filtered', subject: 'Hello', body: '<p>Hi</p>', audienceType: 'FILTERED', audienceCondition: audience });
    const greeting = await createCampaign(t, s, { name: 'Greeting', subject: 'Hi {{ firstName ?? there }}', body: '<p>{{{signature}}}</p>' });
    await createCampaign(t, s, { name: 'Plain', subject: 'Hello', body: '<p>{{firstNameX}}</p>' });
    const usage = async (url: string) => (await api(t.app, s.project, 'GET', url)).json<{ campaigns: { id: string; name: string }[] }>().campaigns;
    expect(await usage('/contacts/fields/plan/usage')).toEqual([{ id: filtered.id, name: 'Filtered' }]);
    expect(await usage('/contacts/fields/data.firstName/usage')).toEqual([{ id: greeting.id, name: 'Greeting' }]);
    expect(await usage('/contacts/fields/signature/usage')).toEqual([{ id: greeting.id, name: 'Greeting' }]);
    expect(await usage('/events/purchase/usage')).toEqual([{ id: filtered.id, name: 'Filtered' }]);
    expect(await usage('/events/signup/usage')).toEqual([]);
    const copy = (await api(t.app, s.project, 'POST', `/campaigns/${filtered.id}/duplicate`)).json<{ data: Campaign }>().data;
    expect((await usage('/events/purchase/usage')).map((c) => c.id)).toEqual([copy.id, filtered.id]);
    const other = await sender(t);
    const res = await api(t.app, other.project, 'GET', '/events/purchase/usage');
    expect(res.json<{ campaigns: unknown[] }>().campaigns).toEqual([]);
  });
});
