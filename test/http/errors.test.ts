import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LegacyBadRequest } from '../../src/http/errors.js';
import { REDACT } from '../../src/app.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, signUp, type TestProject } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';

const lines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    done();
  },
});

const Probe = z.object({
  email: z.email(),
  count: z.number().int().max(10),
  kind: z.enum(['A', 'B']),
  name: z.string().min(2),
  event: z.string().superRefine((v, ctx) => {
    if (v.startsWith('email.')) ctx.addIssue({ code: 'custom', message: 'Event name is reserved', params: { code: 'reserved_event' } });
  }),
});

function addProbeRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post('/__test/validate', { schema: { body: Probe } }, async () => ({ ok: true }));
  r.get('/__test/query', { schema: { querystring: z.object({ limit: z.coerce.number().int().min(1) }) } }, async () => ({ ok: true }));
  r.get('/__test/boom', async () => {
    throw new Error('connection to 10.1.2.3 failed: password authentication failed for user "db-admin"');
  });
  r.get('/__test/legacy', async () => {
    throw new LegacyBadRequest('Email is required');
  });
}

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp({ logger: pino({ level: 'info', redact: REDACT }, sink), extend: addProbeRoutes });
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

const auth = () => bearer(project.secret);

describe('error envelope', () => {
  it('400 on malformed JSON', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"email": ' });
    const error = expectEnvelope(res, 400, 'BAD_REQUEST');
    expect(error.message).toMatch(/JSON/);
  });

  it('401 without credentials', async () => {
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/__test/boom' }), 401, 'UNAUTHORIZED');
  });

  it('403 when signup is refused', async () => {
    const closed = await createTestApp({ env: { SIGNUP_ENABLED: 'false' } });
    try {
      const res = await closed.app.inject({ method: 'POST', url: '/auth/signup', payload: { email: 'a@example.com', password: 'longenough' } });
      expectEnvelope(res, 403, 'FORBIDDEN');
    } finally {
      await closed.close();
    }
  });

  it('404 for an unknown route, even without credentials', async () => {
    const error = expectEnvelope(await t.app.inject({ method: 'GET', url: '/no/such/route?x=1' }), 404, 'NOT_FOUND');
    expect(error.message).toBe('Route GET /no/such/route not found');
  });

  it('409 on a conflict (a domain added twice)', async () => {
    const add = () => t.app.inject({ method: 'POST', url: '/domains', headers: auth(), payload: { domain: 'conflict.example.com' } });
    expect((await add()).statusCode).toBe(201);
    expectEnvelope(await add(), 409, 'CONFLICT');
  });

  it('413 when the body is over the limit', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'a@example.com', password: 'x'.repeat(1_100_000) } });
    expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('415 for a content type the route cannot read', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': 'text/csv' }, payload: 'a,b' });
    expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('422 with field errors in the spec code words', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/__test/validate',
      headers: auth(),
      payload: { email: 'not-an-email', count: 11, kind: 'C', name: 'x', event: 'email.open' },
    });
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.message).toBe('Request validation failed');
    const byField = Object.fromEntries(error.errors.map((e: { field: string; code: string }) => [e.field, e.code]));
    expect(byField).toEqual({ email: 'invalid_string', count: 'too_big', kind: 'invalid_enum_value', name: 'too_small', event: 'reserved_event' });
    for (const e of error.errors) expect(e.message).toEqual(expect.any(String));

    const missing = await t.app.inject({ method: 'POST', url: '/__test/validate', headers: auth(), payload: { email: 'a@example.com' } });
    const types = expectEnvelope(missing, 422, 'VALIDATION_ERROR').errors.map((e: { code: string }) => e.code);
    expect(new Set(types)).toEqual(new Set(['invalid_type']));
  });

  it('422 names query parameters too', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/__test/query?limit=zero', headers: auth() });
    expect(expectEnvelope(res, 422, 'VALIDATION_ERROR').errors[0].field).toBe('limit');
  });

  it('500 masks the internal message and logs it with the requestId', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/__test/boom', headers: auth() });
    const error = expectEnvelope(res, 500, 'INTERNAL_SERVER_ERROR');
    expect(res.body).not.toMatch(/10\.1\.2\.3|db-admin|password/);
    expect(error.message).toBe('An unexpected error occurred');
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.requestId === error.requestId && l.level === 50);
    expect(logged?.err?.message).toMatch(/10\.1\.2\.3/);
    expect(logged?.projectId).toBe(project.id);
  });

  it('legacy 400 body is exactly {error}', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/__test/legacy', headers: auth() });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'Email is required' });
  });

  it('sets X-Request-Id on successful responses too', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('logs', () => {
  it('are JSON with requestId and projectId, and never contain keys, passwords or cookies', async () => {
    const user = await signUp(t.app, undefined, 'hunter2-very-secret');
    await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'hunter2-very-secret' } });
    await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: user.cookie } });
    const res = await t.app.inject({ method: 'GET', url: '/__test/boom', headers: auth() });
    const requestId = res.headers['x-request-id'];
    const all = lines.join('\n');
    expect(all).not.toContain(project.secret);
    expect(all).not.toContain('hunter2-very-secret');
    expect(all).not.toContain(user.cookie.split('=')[1]);
    const parsed = lines.map((l) => JSON.parse(l));
    const ofRequest = parsed.filter((l) => l.requestId === requestId);
    expect(ofRequest.length).toBeGreaterThanOrEqual(2); // incoming + completed (+ error)
    expect(ofRequest.some((l) => l.projectId === project.id)).toBe(true);
  });
});
