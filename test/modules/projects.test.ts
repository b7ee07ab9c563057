import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createProject, newProject, signUp, type TestProject } from '../helpers/accounts.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('projects', () => {
  it('creates a project with the DESIGN §4 shape, the creator as OWNER', async () => {
    const user = await signUp(t.app);
    const res = await t.app.inject({ method: 'POST', url: '/users/@me/projects', headers: { cookie: user.cookie }, payload: { name: 'Shop' } });
    expect(res.statusCode).toBe(201);
    const p = res.json<TestProject>();
    expect(p).toMatchObject({ name: 'Shop', disabled: false, tracking: 'ENABLED', role: 'OWNER' });
    expect(p.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(p.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/); // time-ordered v7
    const m = await t.db.db.selectFrom('memberships').selectAll().where('project_id', '=', p.id).execute();
    expect(m).toEqual([expect.objectContaining({ user_id: user.id, role: 'OWNER' })]);
  });

  it('lists only the projects of the signed-in user', async () => {
    const a = await newProject(t.app);
    const second = await createProject(t.app, a.user, 'Second');
    await newProject(t.app); // someone else's
    const res = await t.app.inject({ method: 'GET', url: '/users/@me/projects', headers: { cookie: a.user.cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.json<TestProject[]>().map((p) => p.id)).toEqual([a.project.id, second.id]);
  });

  it('validates names with 422', async () => {
    const user = await signUp(t.app);
    for (const payload of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 7 }]) {
      const res = await t.app.inject({ method: 'POST', url: '/users/@me/projects', headers: { cookie: user.cookie }, payload });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.errors[0].field).toBe('name');
    }
  });

  it('updates name and tracking, and rejects an unknown tracking mode', async () => {
    const { user, project } = await newProject(t.app);
    const url = `/users/@me/projects/${project.id}`;
    const res = await t.app.inject({ method: 'PATCH', url, headers: { cookie: user.cookie }, payload: { name: 'Renamed', tracking: 'MARKETING_ONLY' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'Renamed', tracking: 'MARKETING_ONLY', secret: project.secret });
    const bad = await t.app.inject({ method: 'PATCH', url, headers: { cookie: user.cookie }, payload: { tracking: 'SOMETIMES' } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.errors[0]).toMatchObject({ field: 'tracking', code: 'invalid_enum_value' });
  });

  it('hides projects of others behind 404 for read, update, delete and rotation', async () => {
    const owner = await newProject(t.app);
    const stranger = await signUp(t.app);
    const base = `/users/@me/projects/${owner.project.id}`;
    for (const [method, url] of [['GET', base], ['PATCH', base], ['DELETE', base], ['POST', `${base}/regenerate-keys`]] as const) {
      const res = await t.app.inject({ method, url, headers: { cookie: stranger.cookie }, payload: method === 'PATCH' ? { name: 'x' } : undefined });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    const still = await t.app.inject({ method: 'GET', url: base, headers: { cookie: owner.user.cookie } });
    expect(still.json().name).toBe('Test project');
    const notUuid = await t.app.inject({ method: 'GET', url: '/users/@me/projects/abc', headers: { cookie: owner.user.cookie } });
    expect(notUuid.statusCode).toBe(404);
  });

  it('lets a MEMBER see the project but not change, rotate or delete it', async () => {
    const owner = await newProject(t.app);
    const member = await signUp(t.app);
    await t.db.db.insertInto('memberships').values({ project_id: owner.project.id, user_id: member.id, role: 'MEMBER' }).execute();
    const base = `/users/@me/projects/${owner.project.id}`;
    const get = await t.app.inject({ method: 'GET', url: base, headers: { cookie: member.cookie } });
    expect(get.json().role).toBe('MEMBER');
    for (const [method, url] of [['PATCH', base], ['DELETE', base], ['POST', `${base}/regenerate-keys`]] as const) {
      const res = await t.app.inject({ method, url, headers: { cookie: member.cookie }, payload: method === 'PATCH' ? { name: 'x' } : undefined });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
    }
  });

  it('lets an ADMIN rotate keys but only the OWNER delete', async () => {
    const owner = await newProject(t.app);
    const admin = await signUp(t.app);
    await t.db.db.insertInto('memberships').values({ project_id: owner.project.id, user_id: admin.id, role: 'ADMIN' }).execute();
    const base = `/users/@me/projects/${owner.project.id}`;
    const rotate = await t.app.inject({ method: 'POST', url: `${base}/regenerate-keys`, headers: { cookie: admin.cookie } });
    expect(rotate.statusCode).toBe(200);
    const del = await t.app.inject({ method: 'DELETE', url: base, headers: { cookie: admin.cookie } });
    expect(del.statusCode).toBe(403);
  });

  it('deletes a project entirely with 204 and an empty body', async () => {
    const { user, project } = await newProject(t.app);
    const res = await t.app.inject({ method: 'DELETE', url: `/users/@me/projects/${project.id}`, headers: { cookie: user.cookie }, payload: { confirm: project.name } });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    const row = await t.db.db.selectFrom('projects').select('id').where('id', '=', project.id).executeTakeFirst();
    expect(row).toBeUndefined();
    const again = await t.app.inject({ method: 'DELETE', url: `/users/@me/projects/${project.id}`, headers: { cookie: user.cookie } });
    expect(again.statusCode).toBe(404);
  });

  it('answers 404 for rotation of a project id that does not exist', async () => {
    const user = await signUp(t.app);
    const res = await t.app.inject({ method: 'POST', url: `/users/@me/projects/${randomUUID()}/regenerate-keys`, headers: { cookie: user.cookie } });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });
});
