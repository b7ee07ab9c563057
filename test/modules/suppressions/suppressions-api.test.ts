import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Suppression, SuppressionList } from '../../../src/modules/suppressions/suppressions.schema.js';
import { bearer, newProject, type TestProject, uniqueEmail } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const call = (project: TestProject, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(project.secret), ...(payload !== undefined && { payload }) });
const add = async (project: TestProject, email: string) => {
  const res = await call(project, 'POST', '/suppressions', { email });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<Suppression>();
};
const list = async (project: TestProject, query = '') => {
  const res = await call(project, 'GET', `/suppressions${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<SuppressionList>();
};

describe('/suppressions', () => {
  it('adds a MANUAL entry (201) and answers the existing one unchanged on a repeat (200), whatever the case', async () => {
    const { project } = await newProject(t.app);
    const email = uniqueEmail('ada');
    const first = await add(project, email);
    expect(first).toEqual({ email, reason: 'MANUAL', detail: null, sourceEmailId: null, createdAt: expect.stringMatching(/Z$/) });
    const again = await call(project, 'POST', '/suppressions', { email: email.toUpperCase(), reason: 'MANUAL', detail: 'second' });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toEqual(first);
    expect((await list(project)).total).toBe(1);
  });

  it('an entry added by a bounce is answered as is by a manual add (200, reason kept)', async () => {
    const { project } = await newProject(t.app);
    const email = uniqueEmail('bounced');
    await t.db.db.insertInto('suppressions').values({ project_id: project.id, email, reason: 'HARD_BOUNCE', detail: 'smtp; 550' }).execute();
    const res = await call(project, 'POST', '/suppressions', { email });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ email, reason: 'HARD_BOUNCE', detail: 'smtp; 550' });
  });

  it('refuses a malformed address, another reason, an unknown field and a long note with 422 naming the field; nothing is added', async () => {
    const { project } = await newProject(t.app);
    const cases: [object, string][] = [
      [{ email: 'not-an-email' }, 'email'],
      [{}, 'email'],
      [{ email: 'a@b.example', reason: 'HARD_BOUNCE' }, 'reason'],
      [{ email: 'a@b.example', detail: 'x'.repeat(1001) }, 'detail'],
      [{ email: 'a@b.example', emial: 'x' }, 'emial'],
    ];
    for (const [body, field] of cases) {
      const error = expectEnvelope(await call(project, 'POST', '/suppressions', body), 422, 'VALIDATION_ERROR');
      expect(error.errors.map((e: { field: string }) => e.field), JSON.stringify(body)).toContain(field);
    }
    expect((await list(project)).total).toBe(0);
  });

  it('removes an entry (204), then 404; a malformed address in the path is 422', async () => {
    const { project } = await newProject(t.app);
    const email = uniqueEmail('gone');
    await add(project, email);
    const res = await call(project, 'DELETE', `/suppressions/${encodeURIComponent(email.toUpperCase())}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expectEnvelope(await call(project, 'DELETE', `/suppressions/${encodeURIComponent(email)}`), 404, 'NOT_FOUND');
    expectEnvelope(await call(project, 'DELETE', '/suppressions/nope'), 422, 'VALIDATION_ERROR');
    expect((await list(project)).total).toBe(0);
  });

  it('lists newest first in cursor pages, searches by address and filters by reason', async () => {
    const { project } = await newProject(t.app);
    const emails = ['a', 'b', 'c', 'd', 'e'].map((x) => uniqueEmail(`list-${x}`));
    for (const email of emails) await add(project, email);
    await t.db.db.insertInto('suppressions').values({ project_id: project.id, email: 'x_y@complaint.example', reason: 'COMPLAINT' }).execute();

    const seen: string[] = [];
    let page = await list(project, '?limit=2');
    expect(page).toMatchObject({ total: 6, hasMore: true });
    for (let i = 0; i < 5 && page.data.length > 0; i++) {
      seen.push(...page.data.map((s) => s.email));
      if (!page.cursor) break;
      page = await list(project, `?limit=2&cursor=${page.cursor}`);
      expect(page.total).toBe(0);
    }
    expect(seen).toEqual(['x_y@complaint.example', ...emails.reverse()]);

    expect((await list(project, `?search=${encodeURIComponent('LIST-C')}`)).data.map((s) => s.email)).toEqual([emails[2]]);
    // LIKE wildcards are matched literally: '_' is not "any character".
    expect((await list(project, '?search=x_y')).total).toBe(1);
    expect((await list(project, '?search=list_a')).total).toBe(0);
    expect((await list(project, '?reason=COMPLAINT')).data).toEqual([expect.objectContaining({ email: 'x_y@complaint.example', reason: 'COMPLAINT' })]);
    expect((await list(project, '?reason=HARD_BOUNCE')).total).toBe(0);
    expectEnvelope(await call(project, 'GET', '/suppressions?reason=SOFT'), 422, 'VALIDATION_ERROR');
    for (const cursor of ['garbage!', Buffer.from('["2024-02-30T00:00:00.000000Z","a@b"]').toString('base64url')]) {
      expect(expectEnvelope(await call(project, 'GET', `/suppressions?cursor=${cursor}`), 422, 'VALIDATION_ERROR').errors[0].field).toBe('cursor');
    }
  });

  it('keeps projects apart: another project\'s list is invisible and its entries cannot be removed', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    const email = uniqueEmail('isolated');
    await add(a.project, email);
    expect((await list(b.project)).total).toBe(0);
    expect((await list(b.project, `?search=${encodeURIComponent(email)}`)).data).toEqual([]);
    expectEnvelope(await call(b.project, 'DELETE', `/suppressions/${encodeURIComponent(email)}`), 404, 'NOT_FOUND');
    // The same address is a separate entry in B.
    expect((await add(b.project, email)).email).toBe(email);
    expect((await list(a.project)).total).toBe(1);
  });

  it('takes the session cookie with X-Project-Id; refuses the public key and no credentials', async () => {
    const { user, project } = await newProject(t.app);
    await add(project, uniqueEmail('session'));
    const res = await t.app.inject({ method: 'GET', url: '/suppressions', headers: { cookie: user.cookie, 'x-project-id': project.id } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<SuppressionList>().total).toBe(1);
    expect((await t.app.inject({ method: 'GET', url: '/suppressions', headers: bearer(project.public) })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/suppressions' })).statusCode).toBe(401);
  });
});
