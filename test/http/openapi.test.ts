import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('API docs', () => {
  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/auth/signup', '/users/@me/projects', '/users/@me/projects/{id}/regenerate-keys', '/health']));
    const signup = doc.paths['/auth/signup'].post;
    const body = signup.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['email', 'password']);
    expect(body.properties.password.minLength).toBe(8);
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/docs'))).toBe(false);
  });

  it('serves a browsable docs page without credentials', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs' });
    const page = res.statusCode === 302 ? await t.app.inject({ method: 'GET', url: String(res.headers.location) }) : res;
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toMatch(/swagger/i);
  });
});
