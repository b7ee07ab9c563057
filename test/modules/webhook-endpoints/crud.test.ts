import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidV7 } from '../../../src/lib/uuid.js';
import { endpointSecretBox } from '../../../src/modules/webhook-endpoints/index.js';
import { MAX_ENDPOINTS_PER_PROJECT } from '../../../src/modules/webhook-endpoints/webhook-endpoints.schema.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { addMember } from '../members/helpers.js';

/**
 * The /webhook-endpoints resource (docs/webhooks-outgoing.md): shapes, validation, the secret
 * shown only on create and rotate (and sealed at rest), the per-project limit and isolation.
 * WEBHOOK_ALLOW_PRIVATE is false here (the default): loopback URLs are refused.
 */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const WHSEC = /^whsec_[0-9a-f]{64}$/;
const URL_OK = 'https://hooks.example.com/mail-events';

const call = (p: TestProject, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(p.secret), ...(payload && { payload }) });

async function create(p: TestProject, body: object = { url: URL_OK, events: ['email.sent', 'email.open'] }) {
  const res = await call(p, 'POST', '/webhook-endpoints', body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string; secret: string; url: string; events: string[]; enabled: boolean }>();
}

describe('POST /webhook-endpoints', () => {
  it('answers 201 {id, url, events, enabled, secret, createdAt}; the secret is stored sealed, never in clear', async () => {
    const { project } = await newProject(t.app);
    const res = await call(project, 'POST', '/webhook-endpoints', { url: URL_OK, events: ['email.sent', 'email.click', 'email.sent'] });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: URL_OK,
      events: ['email.sent', 'email.click'],
      enabled: true,
      secret: expect.stringMatching(WHSEC),
      disabledReason: null,
      disabledAt: null,
      failingSince: null,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updatedAt: expect.any(String),
    });
    const row = await t.db.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    expect(row.project_id).toBe(project.id);
    expect(row.secret).not.toContain(body.secret);
    expect(row.secret).not.toContain('whsec_');
    expect(endpointSecretBox(t.config.secret).open(row.secret)).toBe(body.secret);
  });

  it('creates a disabled endpoint with enabled: false', async () => {
    const { project } = await newProject(t.app);
    expect((await create(project, { url: URL_OK, events: ['email.bounce'], enabled: false })).enabled).toBe(false);
  });

  it('refuses bad input with 422 naming the field, and creates nothing', async () => {
    const { project } = await newProject(t.app);
    const cases: [object, string, string?][] = [
      [{ url: URL_OK, events: ['email.sent', 'email.opened'] }, 'events.1'],
      [{ url: URL_OK, events: ['segment.vip.entry'] }, 'events.0'],
      [{ url: URL_OK, events: [] }, 'events', 'too_small'],
      [{ url: URL_OK }, 'events', 'invalid_type'],
      [{ events: ['email.sent'] }, 'url', 'invalid_type'],
      [{ url: 'not a url', events: ['email.sent'] }, 'url', 'invalid_string'],
      [{ url: 'ftp://hooks.example.com/x', events: ['email.sent'] }, 'url', 'invalid_string'],
      [{ url: 'javascript:alert(1)', events: ['email.sent'] }, 'url', 'invalid_string'],
      [{ url: `https://example.com/${'a'.repeat(2100)}`, events: ['email.sent'] }, 'url', 'too_big'],
      [{ url: URL_OK, events: ['email.sent'], secret: 'whsec_mine' }, 'secret'],
    ];
    for (const [payload, field, code] of cases) {
      const res = await call(project, 'POST', '/webhook-endpoints', payload);
      expect(res.statusCode, `${JSON.stringify(payload).slice(0, 80)}: ${res.body}`).toBe(422);
      const errors = res.json<{ error: { code: string; errors: { field: string; code: string }[] } }>().error;
      expect(errors.code).toBe('VALIDATION_ERROR');
      expect(errors.errors.map((e) => e.field)).toContain(field);
      if (code) expect(errors.errors.find((e) => e.field === field)?.code).toBe(code);
    }
    const list = await call(project, 'GET', '/webhook-endpoints');
    expect(list.json()).toEqual({ data: [] });
  });

  it('refuses private, loopback and link-local addresses (WEBHOOK_ALLOW_PRIVATE false), literal or resolved', async () => {
    const { project } = await newProject(t.app);
    for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://[::1]/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::ffff:192.168.0.1]/x']) {
      const res = await call(project, 'POST', '/webhook-endpoints', { url, events: ['email.sent'] });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(422);
      expect(res.json().error.errors[0]).toMatchObject({ field: 'url', code: 'private_address', message: expect.stringMatching(/private addresses are refused/) });
    }
  });

  it(`allows ${MAX_ENDPOINTS_PER_PROJECT} endpoints per project, then answers 409 (concurrent creates included)`, async () => {
    const { project } = await newProject(t.app);
    const answers = await Promise.all(
      Array.from({ length: MAX_ENDPOINTS_PER_PROJECT + 5 }, (_, i) => call(project, 'POST', '/webhook-endpoints', { url: `${URL_OK}/${i}`, events: ['email.sent'] })),
    );
    const codes = answers.map((a) => a.statusCode);
    expect(codes.filter((c) => c === 201)).toHaveLength(MAX_ENDPOINTS_PER_PROJECT);
    expect(codes.filter((c) => c === 409)).toHaveLength(5);
    expect(answers.find((a) => a.statusCode === 409)?.json().error.code).toBe('CONFLICT');
    expect((await call(project, 'GET', '/webhook-endpoints')).json().data).toHaveLength(MAX_ENDPOINTS_PER_PROJECT);
  });
});

describe('GET, PATCH, DELETE, rotate-secret', () => {
  it('lists and reads endpoints without their secret', async () => {
    const { project } = await newProject(t.app);
    const a = await create(project);
    const b = await create(project, { url: `${URL_OK}/b`, events: ['contact.unsubscribed'] });
    const list = await call(project, 'GET', '/webhook-endpoints');
    expect(list.statusCode).toBe(200);
    const data = list.json<{ data: Record<string, unknown>[] }>().data;
    expect(data.map((e) => e.id)).toEqual([a.id, b.id]);
    for (const e of data) expect(e).not.toHaveProperty('secret');
    const one = await call(project, 'GET', `/webhook-endpoints/${a.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).not.toHaveProperty('secret');
    expect(one.json()).toMatchObject({ id: a.id, url: URL_OK, events: ['email.sent', 'email.open'], enabled: true });
    expect(JSON.stringify(list.json())).not.toContain(a.secret);
  });

  it('PATCH changes url, events and enabled; validates like POST; answers the endpoint without its secret', async () => {
    const { project } = await newProject(t.app);
    const e = await create(project);
    let res = await call(project, 'PATCH', `/webhook-endpoints/${e.id}`, { url: 'https://other.example.com/h', events: ['email.bounce', 'email.complaint'] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ url: 'https://other.example.com/h', events: ['email.bounce', 'email.complaint'], enabled: true });
    expect(res.json()).not.toHaveProperty('secret');
    res = await call(project, 'PATCH', `/webhook-endpoints/${e.id}`, { events: ['email.nope'] });
    expect(res.statusCode).toBe(422);
    res = await call(project, 'PATCH', `/webhook-endpoints/${e.id}`, { url: 'http://127.0.0.1/x' });
    expect(res.statusCode).toBe(422);
    res = await call(project, 'PATCH', `/webhook-endpoints/${e.id}`, { enabled: false });
    expect(res.json()).toMatchObject({ enabled: false, disabledReason: null, disabledAt: expect.any(String) });
    const row = await t.db.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', e.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ url: 'https://other.example.com/h', events: ['email.bounce', 'email.complaint'], enabled: false });
  });

  it('rotate-secret answers a new secret once; the old one no longer opens from the row', async () => {
    const { project } = await newProject(t.app);
    const e = await create(project);
    const res = await call(project, 'POST', `/webhook-endpoints/${e.id}/rotate-secret`);
    expect(res.statusCode, res.body).toBe(200);
    const rotated = res.json<{ secret: string; id: string }>();
    expect(rotated.secret).toMatch(WHSEC);
    expect(rotated.secret).not.toBe(e.secret);
    expect(rotated.id).toBe(e.id);
    const row = await t.db.db.selectFrom('webhook_endpoints').select('secret').where('id', '=', e.id).executeTakeFirstOrThrow();
    expect(endpointSecretBox(t.config.secret).open(row.secret)).toBe(rotated.secret);
    expect((await call(project, 'GET', `/webhook-endpoints/${e.id}`)).json()).not.toHaveProperty('secret');
  });

  it('DELETE answers 204 and removes the endpoint with its deliveries; then 404', async () => {
    const { project } = await newProject(t.app);
    const e = await create(project);
    await t.db.db
      .insertInto('webhook_deliveries')
      .values({ project_id: project.id, endpoint_id: e.id, event_id: randomUUID(), event_type: 'email.sent', event_at: new Date(), data: '{}' })
      .execute();
    const res = await call(project, 'DELETE', `/webhook-endpoints/${e.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await t.db.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', e.id).execute()).toEqual([]);
    expect((await call(project, 'DELETE', `/webhook-endpoints/${e.id}`)).statusCode).toBe(404);
    expect((await call(project, 'GET', `/webhook-endpoints/${e.id}`)).statusCode).toBe(404);
  });

  it("answers 404 to another project's key on every route, and for malformed ids; nothing changes", async () => {
    const { project } = await newProject(t.app);
    const { project: other } = await newProject(t.app);
    const e = await create(project);
    const routes: ['GET' | 'POST' | 'PATCH' | 'DELETE', string, object?][] = [
      ['GET', `/webhook-endpoints/${e.id}`],
      ['PATCH', `/webhook-endpoints/${e.id}`, { enabled: false }],
      ['DELETE', `/webhook-endpoints/${e.id}`],
      ['POST', `/webhook-endpoints/${e.id}/rotate-secret`],
      ['POST', `/webhook-endpoints/${e.id}/test`],
      ['GET', `/webhook-endpoints/${e.id}/deliveries`],
    ];
    for (const [method, url, body] of routes) {
      const res = await call(other, method, url, body);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
      const malformed = await call(project, method, url.replace(e.id, 'not-a-uuid'), body);
      expect(malformed.statusCode, `${method} ${url} malformed`).toBe(404);
    }
    expect((await call(other, 'GET', '/webhook-endpoints')).json()).toEqual({ data: [] });
    const row = await t.db.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', e.id).executeTakeFirstOrThrow();
    expect(row.enabled).toBe(true);
    expect(endpointSecretBox(t.config.secret).open(row.secret)).toBe(e.secret);
  });

  it('lets OWNERs and ADMINs in with the session cookie, refuses MEMBERs with 403', async () => {
    const { user, project } = await newProject(t.app);
    const admin = await addMember(t.app, user, project.id, 'ADMIN');
    const member = await addMember(t.app, user, project.id, 'MEMBER');
    const as = (cookie: string, method: 'GET' | 'POST', payload?: object) =>
      t.app.inject({ method, url: '/webhook-endpoints', headers: { cookie, 'x-project-id': project.id }, ...(payload && { payload }) });
    expect((await as(admin.cookie, 'POST', { url: URL_OK, events: ['email.sent'] })).statusCode).toBe(201);
    expect((await as(user.cookie, 'GET')).statusCode).toBe(200);
    const refused = await as(member.cookie, 'GET');
    expect(refused.statusCode).toBe(403);
    expect((await as(member.cookie, 'POST', { url: URL_OK, events: ['email.sent'] })).statusCode).toBe(403);
  });
});

describe('GET /webhook-endpoints/:id/deliveries', () => {
  it('pages the log newest first with an opaque cursor, filters by status, refuses a malformed cursor', async () => {
    const { project } = await newProject(t.app);
    const e = await create(project);
    const ids: string[] = [];
    // Ids a millisecond apart: the log is in id order, and ids of one millisecond are in no order.
    const first = Date.now();
    for (let i = 0; i < 5; i++) {
      const row = await t.db.db
        .insertInto('webhook_deliveries')
        .values({
          id: uuidV7(first + i),
          project_id: project.id,
          endpoint_id: e.id,
          event_id: randomUUID(),
          event_type: 'email.sent',
          event_at: new Date(),
          data: JSON.stringify({ n: i }),
          status: i % 2 === 0 ? 'DELIVERED' : 'PENDING',
          attempts: 1,
          status_code: 200,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids.push(row.id);
    }
    const page1 = await call(project, 'GET', `/webhook-endpoints/${e.id}/deliveries?limit=2`);
    expect(page1.statusCode, page1.body).toBe(200);
    const p1 = page1.json<{ data: { id: string; payload: { data: { n: number } } }[]; cursor: string; hasMore: boolean }>();
    expect(p1.data.map((d) => d.id)).toEqual([ids[4], ids[3]]);
    expect(p1.hasMore).toBe(true);
    expect(p1.data[0]?.payload).toMatchObject({ type: 'email.sent', data: { n: 4 } });
    const page2 = (await call(project, 'GET', `/webhook-endpoints/${e.id}/deliveries?limit=2&cursor=${p1.cursor}`)).json<typeof p1>();
    const page3 = (await call(project, 'GET', `/webhook-endpoints/${e.id}/deliveries?limit=2&cursor=${page2.cursor}`)).json<typeof p1>();
    expect([...page2.data, ...page3.data].map((d) => d.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(page3).toMatchObject({ hasMore: false, cursor: null });
    const pending = (await call(project, 'GET', `/webhook-endpoints/${e.id}/deliveries?status=PENDING`)).json<typeof p1>();
    expect(pending.data.map((d) => d.id)).toEqual([ids[3], ids[1]]);
    expect((await call(project, 'GET', `/webhook-endpoints/${e.id}/deliveries?cursor=abc`)).statusCode).toBe(422);
    expect((await call(project, 'GET', `/webhook-endpoints/${e.id}/deliveries?status=LOST`)).statusCode).toBe(422);
  });
});
