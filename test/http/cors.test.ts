import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, type TestProject, uniqueEmail } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp();
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

const ORIGIN = 'https://shop.example';
const preflight = (url: string, method = 'POST') =>
  t.app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
  });

describe('CORS: a web page may call the public-key routes, and only those', () => {
  it('answers the preflight of POST /v1/track: 204, any origin, the method, the headers, a max age, no credentials', async () => {
    const res = await preflight('/v1/track');
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe('POST');
    expect(res.headers['access-control-allow-headers']).toBe('Authorization, Content-Type, Idempotency-Key');
    expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(res.headers.allow).toBe('POST, OPTIONS');
  });

  it('the actual request, its errors included, carries Access-Control-Allow-Origin: *', async () => {
    const ok = await t.app.inject({
      method: 'POST',
      url: '/v1/track',
      headers: { ...bearer(project.public), origin: ORIGIN },
      payload: { email: uniqueEmail(), event: 'page_view' },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe('*');
    expect(ok.headers['access-control-expose-headers']).toMatch(/X-Request-Id/);

    const noKey = await t.app.inject({ method: 'POST', url: '/v1/track', headers: { origin: ORIGIN }, payload: { email: uniqueEmail(), event: 'e' } });
    expectEnvelope(noKey, 401, 'UNAUTHORIZED');
    expect(noKey.headers['access-control-allow-origin']).toBe('*');

    const invalid = await t.app.inject({ method: 'POST', url: '/v1/track', headers: { ...bearer(project.public), origin: ORIGIN }, payload: { event: 'e' } });
    expectEnvelope(invalid, 422, 'VALIDATION_ERROR');
    expect(invalid.headers['access-control-allow-origin']).toBe('*');

    const wrongMethod = await t.app.inject({ method: 'GET', url: '/v1/track', headers: { origin: ORIGIN } });
    expectEnvelope(wrongMethod, 405, 'METHOD_NOT_ALLOWED');
    expect(wrongMethod.headers['access-control-allow-origin']).toBe('*');
  });

  it('secret-key and cookie routes get no CORS grant, preflight or request', async () => {
    for (const url of ['/contacts', '/v1/send', '/events/track', '/users/@me/projects', '/auth/login']) {
      const res = await preflight(url);
      expect(res.statusCode, url).toBe(204);
      expect(res.headers['access-control-allow-origin'], url).toBeUndefined();
      expect(res.headers['access-control-allow-methods'], url).toBeUndefined();
    }
    const list = await t.app.inject({ method: 'GET', url: '/contacts', headers: { ...bearer(project.secret), origin: ORIGIN } });
    expect(list.statusCode).toBe(200);
    expect(list.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('the public routes are those declared auth: public', () => {
    const declared = t.app.routeCatalog.filter((r) => r.auth === 'public').map((r) => `${r.method} ${r.url}`);
    expect(declared).toEqual(['POST /v1/track']);
  });

  it('OPTIONS on an unknown path is 404', async () => {
    expectEnvelope(await preflight('/v1/nothing'), 404, 'NOT_FOUND');
  });
});
