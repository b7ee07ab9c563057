import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, signUp, type SignedInUser, type TestProject } from '../helpers/accounts.js';

let t: TestApp;
let user: SignedInUser;
let project: TestProject;

/** Test-only routes standing in for /v1/track (public key) and a resource route (secret key). */
function addProbeRoutes(app: FastifyInstance): void {
  app.post('/__test/public', { config: { auth: 'public' } }, async (request) => ({ projectId: request.project?.id }));
  app.get('/__test/secret', async (request) => ({ projectId: request.project?.id, role: request.project?.role ?? null }));
}

beforeAll(async () => {
  t = await createTestApp({ extend: addProbeRoutes });
  ({ user, project } = await newProject(t.app));
});
afterAll(() => t.close());

/** A concrete URL for a route pattern (params become a random uuid). */
const concrete = (url: string) => url.replace(/:[A-Za-z]+/g, randomUUID()).replace(/\*$/, 'x');

describe('API keys', () => {
  it('gives each project exactly one pk_/sk_ pair of 40 base62 characters', () => {
    expect(project.public).toMatch(/^pk_[0-9A-Za-z]{40}$/);
    expect(project.secret).toMatch(/^sk_[0-9A-Za-z]{40}$/);
  });

  it('selects the project from the key', async () => {
    const pub = await t.app.inject({ method: 'POST', url: '/__test/public', headers: bearer(project.public) });
    expect(pub.statusCode).toBe(200);
    expect(pub.json().projectId).toBe(project.id);
    const sec = await t.app.inject({ method: 'GET', url: '/__test/secret', headers: bearer(project.secret) });
    expect(sec.statusCode).toBe(200);
    expect(sec.json().projectId).toBe(project.id);
  });

  it('rejects a public key on every secret-key route with 401 INVALID_API_KEY naming the secret key', async () => {
    const secretRoutes = t.app.routeCatalog.filter((r) => r.auth === 'secret');
    expect(secretRoutes.length).toBeGreaterThan(0);
    for (const route of secretRoutes) {
      const res = await t.app.inject({ method: route.method as 'GET', url: concrete(route.url), headers: bearer(project.public) });
      expect(res.statusCode, `${route.method} ${route.url}`).toBe(401);
      const error = res.json().error;
      expect(error.code).toBe('INVALID_API_KEY');
      expect(error.message).toMatch(/requires a secret key/);
    }
  });

  it('rejects a secret key on every public-key route with 401 INVALID_API_KEY naming the public key', async () => {
    const publicRoutes = t.app.routeCatalog.filter((r) => r.auth === 'public');
    expect(publicRoutes.length).toBeGreaterThan(0);
    for (const route of publicRoutes) {
      const res = await t.app.inject({ method: route.method as 'POST', url: concrete(route.url), headers: bearer(project.secret) });
      expect(res.statusCode, `${route.method} ${route.url}`).toBe(401);
      expect(res.json().error).toMatchObject({ code: 'INVALID_API_KEY', message: expect.stringMatching(/requires a public key/) });
    }
  });

  it('answers 401 on every key route when the key is missing, unknown or malformed', async () => {
    const keyRoutes = t.app.routeCatalog.filter((r) => r.auth === 'secret' || r.auth === 'public');
    for (const route of keyRoutes) {
      const url = concrete(route.url);
      const method = route.method as 'GET';
      const prefix = route.auth === 'public' ? 'pk_' : 'sk_';
      const missing = await t.app.inject({ method, url });
      expect(missing.statusCode, `${method} ${url}`).toBe(401);
      expect(missing.json().error.code).toBe('UNAUTHORIZED');
      const unknown = await t.app.inject({ method, url, headers: bearer(`${prefix}${'x'.repeat(40)}`) });
      expect(unknown.statusCode).toBe(401);
      expect(unknown.json().error).toMatchObject({ code: 'INVALID_API_KEY', message: 'Invalid API key' });
      const garbage = await t.app.inject({ method, url, headers: { authorization: 'Basic abc' } });
      expect(garbage.statusCode).toBe(401);
      expect(garbage.json().error.code).toBe('INVALID_API_KEY');
    }
  });

  it('requires a session on account routes and never accepts a key there', async () => {
    const userRoutes = t.app.routeCatalog.filter((r) => r.auth === 'user');
    expect(userRoutes.map((r) => r.url)).toContain('/users/@me/projects');
    for (const route of userRoutes) {
      const res = await t.app.inject({ method: route.method as 'GET', url: concrete(route.url), headers: bearer(project.secret) });
      expect(res.statusCode, `${route.method} ${route.url}`).toBe(401);
    }
  });

  it('stops the old keys on the very next request after rotation and accepts the new ones', async () => {
    const own = await newProject(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: `/users/@me/projects/${own.project.id}/regenerate-keys`,
      headers: { cookie: own.user.cookie },
    });
    expect(res.statusCode).toBe(200);
    const rotated = res.json<TestProject>();
    expect(rotated.public).not.toBe(own.project.public);
    expect(rotated.secret).not.toBe(own.project.secret);
    expect(rotated.id).toBe(own.project.id);

    for (const [url, method, oldKey, newKey] of [
      ['/__test/secret', 'GET', own.project.secret, rotated.secret],
      ['/__test/public', 'POST', own.project.public, rotated.public],
    ] as const) {
      const old = await t.app.inject({ method, url, headers: bearer(oldKey) });
      expect(old.statusCode).toBe(401);
      expect(old.json().error.code).toBe('INVALID_API_KEY');
      const fresh = await t.app.inject({ method, url, headers: bearer(newKey) });
      expect(fresh.statusCode).toBe(200);
    }
  });
});

describe('session cookie with X-Project-Id', () => {
  it('reaches a resource route for a project the user belongs to', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/__test/secret', headers: { cookie: user.cookie, 'x-project-id': project.id } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ projectId: project.id, role: 'OWNER' });
  });

  it('is 403 for a project of another user, and for a malformed project id', async () => {
    const stranger: SignedInUser = await signUp(t.app);
    for (const id of [project.id, 'not-a-uuid']) {
      const res = await t.app.inject({ method: 'GET', url: '/__test/secret', headers: { cookie: stranger.cookie, 'x-project-id': id } });
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('FORBIDDEN');
    }
  });

  it('is 401 without X-Project-Id, and the public-key route never accepts a session', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/__test/secret', headers: { cookie: user.cookie } });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.message).toMatch(/X-Project-Id/);
    const pub = await t.app.inject({ method: 'POST', url: '/__test/public', headers: { cookie: user.cookie, 'x-project-id': project.id } });
    expect(pub.statusCode).toBe(401);
  });
});

describe('disabled projects', () => {
  it('answer 403 PROJECT_DISABLED to their keys and sessions', async () => {
    const own = await newProject(t.app);
    await t.db.db.updateTable('projects').set({ disabled: true }).where('id', '=', own.project.id).execute();
    const byKey = await t.app.inject({ method: 'GET', url: '/__test/secret', headers: bearer(own.project.secret) });
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().error.code).toBe('PROJECT_DISABLED');
    const bySession = await t.app.inject({ method: 'GET', url: '/__test/secret', headers: { cookie: own.user.cookie, 'x-project-id': own.project.id } });
    expect(bySession.statusCode).toBe(403);
    expect(bySession.json().error.code).toBe('PROJECT_DISABLED');
  });
});
