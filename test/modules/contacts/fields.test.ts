import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContactData } from '../../../src/db/schema.js';
import { upsertContacts } from '../../../src/modules/contacts/contacts.upsert.js';
import { fieldsRoutes } from '../../../src/modules/contacts/fields.routes.js';
import { sampleDataKeys } from '../../../src/modules/contacts/fields.repo.js';
import { listFields, runFieldDeleteJob } from '../../../src/modules/contacts/fields.service.js';
import { insertJob } from '../../../src/modules/contacts/jobs.repo.js';
import { createAppDeps } from '../../../src/app-deps.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, testConfig, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { sleep } from '../../helpers/process.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    worker: {},
    // The field routes again under /small, queueing a delete above 2 contacts instead of 10,000.
    extend: (app, db) => {
      void app.register(fieldsRoutes, { ...createAppDeps(testConfig(), db.db), fieldDeleteJobThreshold: 2, prefix: '/small' });
      // GET /contacts/fields estimated from a sample of 400 above 300 contacts (50,000 and 20,000 in the server).
      void app.register(fieldsRoutes, { ...createAppDeps(testConfig(), db.db), fieldsExactUpTo: 300, fieldsSample: 400, prefix: '/sampled' });
    },
  });
});
afterAll(async () => {
  await t?.close();
});

async function seed(projectId: string, contacts: Record<string, ContactData>): Promise<void> {
  await t.db.db
    .transaction()
    .execute((trx) => upsertContacts(trx, projectId, Object.entries(contacts).map(([email, patch]) => ({ email, patch, subscribedIfNew: true }))));
}

const get = (project: TestProject, url: string) => t.app.inject({ method: 'GET', url, headers: bearer(project.secret) });
const del = (project: TestProject, url: string) => t.app.inject({ method: 'DELETE', url, headers: bearer(project.secret) });

const dataOf = async (projectId: string) =>
  Object.fromEntries(
    (await t.db.db.selectFrom('contacts').select(['email', 'data']).where('project_id', '=', projectId).execute()).map((r) => [r.email, r.data]),
  );

describe('GET /contacts/fields', () => {
  it('lists standard fields, then data keys with inferred type, count and coverage', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, {
      'a@example.com': { plan: 'pro', age: 31, vip: true, signup: '2024-01-05', mixed: 'x' },
      'b@example.com': { plan: 'free', age: 40, vip: false, signup: '2024-02-10T08:30:00Z', mixed: 1 },
      'c@example.com': { plan: 'pro', age: '?', signup: 'soon', mixed: 2 },
      'd@example.com': { plan: 'team' },
    });
    await seed((await newProject(t.app)).project.id, { 'other@example.com': { secretKey: 'x' } });

    const res = await get(project, '/contacts/fields');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      totalContacts: 4,
      totalKeys: 5,
      truncated: false,
      data: [
        { field: 'email', key: 'email', type: 'string', count: 4, coverage: 100, standard: true },
        { field: 'subscribed', key: 'subscribed', type: 'boolean', count: 4, coverage: 100, standard: true },
        { field: 'createdAt', key: 'createdAt', type: 'date', count: 4, coverage: 100, standard: true },
        { field: 'updatedAt', key: 'updatedAt', type: 'date', count: 4, coverage: 100, standard: true },
        { field: 'data.plan', key: 'plan', type: 'string', count: 4, coverage: 100, standard: false },
        { field: 'data.age', key: 'age', type: 'number', count: 3, coverage: 75, standard: false },
        { field: 'data.mixed', key: 'mixed', type: 'number', count: 3, coverage: 75, standard: false },
        { field: 'data.signup', key: 'signup', type: 'date', count: 3, coverage: 75, standard: false },
        { field: 'data.vip', key: 'vip', type: 'boolean', count: 2, coverage: 50, standard: false },
      ],
    });
  });

  it('answers zero coverage on a project without contacts', async () => {
    const { project } = await newProject(t.app);
    const body = (await get(project, '/contacts/fields')).json();
    expect(body.totalContacts).toBe(0);
    expect(body.data.map((f: { field: string; coverage: number }) => [f.field, f.coverage])).toEqual([
      ['email', 0],
      ['subscribed', 0],
      ['createdAt', 0],
      ['updatedAt', 0],
    ]);
  });
});

type Listed = { field: string; type: string; count: number; coverage: number; standard: boolean };
const byField = (body: { data: Listed[] }) => Object.fromEntries(body.data.map((f) => [f.field, f]));

/** `n` contacts `prefix<i>@example.com` with data(i), in batches of 500 (one statement each). */
async function seedMany(projectId: string, prefix: string, n: number, data: (i: number) => ContactData): Promise<void> {
  for (let from = 0; from < n; from += 500) {
    const contacts: Record<string, ContactData> = {};
    for (let i = from; i < Math.min(n, from + 500); i++) contacts[`${prefix}${i}@example.com`] = data(i);
    await seed(projectId, contacts);
  }
}

describe('GET /contacts/fields above the exact threshold', () => {
  it('estimates keys, types and coverage from a uniform sample, with the exact contact count', async () => {
    const { project } = await newProject(t.app);
    // The first 1,000 contacts (oldest) have `early`, the last 1,000 do not: a sample of the oldest
    // or newest contacts instead of a uniform one would read 100 % or 0 %.
    const data = (i: number): ContactData => ({
      all: 'x',
      ...(i < 1000 && { early: i }),
      ...(i % 4 === 0 && { when: `2024-03-${String(1 + (i % 28)).padStart(2, '0')}` }),
      ...(i % 10 === 0 && { flag: i % 20 === 0 }),
      ...(i % 5 === 0 && { num: i }),
      ...(i % 50 === 1 && { num: 'n/a' }),
    });
    await seedMany(project.id, 'c', 2000, data);
    await seed(project.id, { 'rare@example.com': { all: 'x', rare: 1 } });
    const total = 2001;

    // The sample itself: ~400 contacts read (each with probability 400 / 2,001; ±100 is 5.6 sd), not 2,001.
    const stats = await sampleDataKeys(t.db.db, project.id, { sample: 400, limit: 1000, expected: total });
    expect(stats.totalContacts).toBe(total);
    expect(stats.scanned).toBeGreaterThan(300);
    expect(stats.scanned).toBeLessThan(500);
    expect(stats.keys.find((k) => k.key === 'all')?.count).toBe(stats.scanned);

    // The first answer sizes its sample from the table's row estimate (whatever the test database
    // holds); dropped by a field delete, the next one samples at 400 / 2,001.
    expect((await get(project, '/sampled/contacts/fields')).json().totalContacts).toBe(total);
    expect((await del(project, '/sampled/contacts/fields/never-there')).statusCode).toBe(204);
    const body = (await get(project, '/sampled/contacts/fields')).json();
    expect(body.totalContacts).toBe(total);
    const fields = byField(body);
    expect(fields.email).toMatchObject({ count: total, coverage: 100 });
    expect(fields['data.all']).toMatchObject({ type: 'string', count: total, coverage: 100 });
    // Tolerance: ±10 points, ≥ 4 standard deviations of a ~400-of-2,001 sample at any coverage.
    const expected = { 'data.early': ['number', 50], 'data.when': ['date', 25], 'data.flag': ['boolean', 10], 'data.num': ['number', 22] };
    for (const [field, [type, coverage]] of Object.entries(expected)) {
      const f = fields[field];
      expect(f, field).toMatchObject({ type, standard: false });
      expect(Math.abs((f?.coverage ?? -100) - Number(coverage)), `${field} coverage ${f?.coverage}`).toBeLessThanOrEqual(10);
      expect(f?.count).toBe(Math.round(((f?.coverage ?? 0) * total) / 100));
    }
    // A key on one contact in 2,001 is in the sample (scaled: ~5) or not listed; never counted as 1.
    expect(fields['data.rare']?.count ?? 0).not.toBe(1);
    expect(body.data.slice(4).map((f: Listed) => f.count)).toEqual([...body.data.slice(4).map((f: Listed) => f.count)].sort((a, b) => b - a));
  });

  it('stays exact up to the threshold', async () => {
    const { project } = await newProject(t.app);
    await seedMany(project.id, 'c', 299, (i): ContactData => (i % 2 === 0 ? { half: i } : {}));
    await seed(project.id, { 'rare@example.com': { rare: 'x' } }); // 300 contacts: at the threshold
    const body = await listFields(t.db.db, project.id, { exactUpTo: 300, sample: 50 });
    expect(body).toMatchObject({ totalContacts: 300, totalKeys: 2, truncated: false });
    expect(body.data.slice(4)).toEqual([
      { field: 'data.half', key: 'half', type: 'number', count: 150, coverage: 50, standard: false },
      { field: 'data.rare', key: 'rare', type: 'string', count: 1, coverage: 0.33, standard: false },
    ]);
  });

  it('reuses a sampled answer until a field delete drops it', async () => {
    const { project } = await newProject(t.app);
    await seedMany(project.id, 'c', 400, () => ({ plan: 'pro' }));
    expect(Object.keys(byField((await get(project, '/sampled/contacts/fields')).json()))).toContain('data.plan');
    await seedMany(project.id, 'c', 400, () => ({ late: true }));
    const cached = byField((await get(project, '/sampled/contacts/fields')).json());
    expect(cached['data.late']).toBeUndefined(); // the answer of the first call

    expect((await del(project, '/sampled/contacts/fields/plan')).statusCode).toBe(204);
    const fresh = byField((await get(project, '/sampled/contacts/fields')).json());
    expect(fresh['data.plan']).toBeUndefined();
    expect(fresh['data.late']).toMatchObject({ type: 'boolean', count: 400, coverage: 100 });
  });
});

describe('GET /contacts/fields/:field/values', () => {
  it('pages distinct values, most frequent first, with data.<key> or <key>', async () => {
    const { project } = await newProject(t.app);
    const contacts: Record<string, ContactData> = {};
    const plans = ['pro', 'pro', 'pro', 'free', 'free', 'team', 'team', 'team', 'team', 'solo'];
    plans.forEach((plan, i) => (contacts[`p${i}@example.com`] = { plan }));
    contacts['n@example.com'] = { plan: 7 };
    contacts['none@example.com'] = { other: 'x' };
    await seed(project.id, contacts);

    const first = await get(project, '/contacts/fields/data.plan/values?pageSize=2');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({
      data: [
        { value: 'team', count: 4 },
        { value: 'pro', count: 3 },
      ],
      page: 1,
      pageSize: 2,
      total: 5,
      totalPages: 3,
    });
    const last = (await get(project, '/contacts/fields/plan/values?pageSize=2&page=3')).json();
    expect(last.data).toHaveLength(1);
    expect((await get(project, '/contacts/fields/plan/values?pageSize=2&page=2')).json().data).toEqual([
      { value: 'free', count: 2 },
      { value: expect.anything(), count: 1 },
    ]);
    expect((await get(project, '/contacts/fields/plan/values?page=9')).json()).toEqual({ data: [], page: 9, pageSize: 20, total: 5, totalPages: 1 });
    expect((await get(project, '/contacts/fields/plan/values?pageSize=500')).json()).toMatchObject({ pageSize: 100, total: 5 });
    const all = (await get(project, '/contacts/fields/plan/values')).json().data.map((v: { value: unknown }) => v.value);
    expect(all).toEqual(expect.arrayContaining([7, 'solo']));
  });

  it('answers an empty page for an unknown key and 422 for standard fields or bad paging', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, { 'a@example.com': { plan: 'pro' } });
    expect((await get(project, '/contacts/fields/nothing/values')).json()).toEqual({ data: [], page: 1, pageSize: 20, total: 0, totalPages: 0 });
    expectEnvelope(await get(project, '/contacts/fields/email/values'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await get(project, '/contacts/fields/plan/values?page=0'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await get(project, '/contacts/fields/plan/values?pageSize=abc'), 422, 'VALIDATION_ERROR');
  });
});

describe('GET /contacts/fields/:field/usage', () => {
  it('answers the usage shape with empty lists when nothing references the field', async () => {
    const { project } = await newProject(t.app);
    const res = await get(project, '/contacts/fields/plan/usage');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ field: 'data.plan', segments: [], campaigns: [], templates: [], workflows: [] });
    expect((await get(project, '/contacts/fields/data.plan/usage')).json().field).toBe('data.plan');
  });

  it('lists the templates whose subject or body use the field, in any tag form, and no others', async () => {
    const { project } = await newProject(t.app);
    const other = await newProject(t.app);
    const insert = (projectId: string, name: string, subject: string, body: string) =>
      t.db.db.insertInto('templates').values({ project_id: projectId, name, subject, body, from_email: 'a@x.test' }).returning('id').executeTakeFirstOrThrow();
    const a = await insert(project.id, 'subject', 'Your {{ plan }} plan', '<p>hi</p>');
    const b = await insert(project.id, 'fallback', 'Hi', '<p>{{plan ?? "free"}}</p>');
    const c = await insert(project.id, 'raw', 'Hi', '<p>{{{plan}}}</p>');
    await insert(project.id, 'prefix only', 'Hi', '<p>{{planName}} {{ plans }}</p>');
    await insert(other.project.id, 'other project', '{{plan}}', '');
    const res = await get(project, '/contacts/fields/plan/usage');
    expect(res.json().templates).toEqual([
      { id: a.id, name: 'subject' },
      { id: b.id, name: 'fallback' },
      { id: c.id, name: 'raw' },
    ]);
  });
});

describe('DELETE /contacts/fields/:field', () => {
  it('removes the key from every contact of the project at once (204), keeping other keys and projects', async () => {
    const { project } = await newProject(t.app);
    const other = await newProject(t.app);
    await seed(project.id, { 'a@example.com': { plan: 'pro', city: 'Oslo' }, 'b@example.com': { plan: 'free' }, 'c@example.com': { city: 'Rome' } });
    await seed(other.project.id, { 'a@example.com': { plan: 'pro' } });
    const before = await t.db.db.selectFrom('contacts').select(['email', 'updated_at']).where('project_id', '=', project.id).execute();

    const res = await del(project, '/contacts/fields/data.plan');
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    expect(await dataOf(project.id)).toEqual({ 'a@example.com': { city: 'Oslo' }, 'b@example.com': {}, 'c@example.com': { city: 'Rome' } });
    expect(await dataOf(other.project.id)).toEqual({ 'a@example.com': { plan: 'pro' } });
    const after = await t.db.db.selectFrom('contacts').select(['email', 'updated_at']).where('project_id', '=', project.id).execute();
    const changed = after.filter((r) => r.updated_at.getTime() !== before.find((b) => b.email === r.email)?.updated_at.getTime());
    expect(changed.map((r) => r.email).sort()).toEqual(['a@example.com', 'b@example.com']);
    expect((await del(project, '/contacts/fields/never-there')).statusCode).toBe(204);
  });

  it('refuses standard and reserved fields with 422', async () => {
    const { project } = await newProject(t.app);
    for (const field of ['email', 'subscribed', 'createdAt', 'updatedAt', 'data.email', 'id', 'unsubscribeUrl']) {
      const error = expectEnvelope(await del(project, `/contacts/fields/${field}`), 422, 'VALIDATION_ERROR');
      expect(error.errors).toEqual([expect.objectContaining({ field: 'field' })]);
    }
  });

  it('queues a job above the threshold (202 {jobId}) and reports it on GET /contacts/bulk/:jobId', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, { 'a@example.com': { plan: 'a', x: 1 }, 'b@example.com': { plan: 'b' }, 'c@example.com': { plan: 'c' }, 'd@example.com': { x: 2 } });
    expect((await del(project, '/small/contacts/fields/x')).statusCode).toBe(204); // 2 contacts: at the threshold
    const res = await del(project, '/small/contacts/fields/plan');
    expect(res.statusCode, res.body).toBe(202);
    const { jobId } = res.json<{ jobId: string }>();

    const deadline = Date.now() + 15_000;
    let job = (await get(project, `/contacts/bulk/${jobId}`)).json();
    while (job.status !== 'COMPLETED' && job.status !== 'FAILED' && Date.now() < deadline) {
      await sleep(50);
      job = (await get(project, `/contacts/bulk/${jobId}`)).json();
    }
    expect(job).toMatchObject({ id: jobId, kind: 'field-delete', status: 'COMPLETED', total: 3, processed: 3, failed: 0, errors: [] });
    expect(await dataOf(project.id)).toEqual({ 'a@example.com': {}, 'b@example.com': {}, 'c@example.com': {}, 'd@example.com': {} });
  });

  it('works through a large project in resumable batches', async () => {
    const { project } = await newProject(t.app);
    // One transaction each, in order: the batches scan by (created_at, id), and one statement's
    // rows share created_at, leaving their order to their ids.
    for (let i = 0; i < 7; i++) await seed(project.id, { [`c${i}@example.com`]: i % 3 === 0 ? { keep: i } : { plan: 'x', keep: i } });
    // A job row without a queued task, run by hand: two contacts scanned per batch.
    const jobId = await t.db.db
      .transaction()
      .execute((trx) => insertJob(trx, { projectId: project.id, kind: 'field-delete', total: 4, payload: { key: 'plan' } }));
    // A shutdown after two batches: the signal reads as aborted from the third check on.
    const { signal } = new AbortController();
    let checks = 0;
    Object.defineProperty(signal, 'aborted', { get: () => ++checks > 2 });
    await expect(runFieldDeleteJob(t.db.db, jobId, { signal, scan: 2 })).rejects.toThrow(/resumes/);
    const partial = await t.db.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(partial.status).toBe('PROCESSING');
    expect(partial.processed).toBe(2); // c0–c3 scanned, c1 and c2 had the key
    expect(partial.payload).toMatchObject({ key: 'plan', cursor: { at: expect.any(String), id: expect.any(String) } });

    await runFieldDeleteJob(t.db.db, jobId, { scan: 2 });
    const done = await t.db.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(done).toMatchObject({ status: 'COMPLETED', total: 4, processed: 4, failed: 0 });
    expect(Object.values(await dataOf(project.id)).every((d) => !('plan' in d) && 'keep' in d)).toBe(true);
  });
});
