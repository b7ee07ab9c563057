import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { callWebhook } from '../../src/modules/workflows/webhook/call.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { newProject, signUp } from '../helpers/accounts.js';
import { type Receiver, startReceiver, variables, verifyWebhook } from './workflows/webhook-receiver.js';

let t: TestApp;
let r: Receiver;
beforeAll(async () => {
  [t, r] = await Promise.all([createTestApp(), startReceiver()]);
});
afterAll(async () => {
  await Promise.all([t.close(), r.close()]);
});
afterEach(() => {
  r.received.length = 0;
});

const WHSEC = /^whsec_[0-9a-f]{64}$/;

describe('project webhook secret', () => {
  it('lets the OWNER read it and rotate it; the new one is stored and the old one no longer verifies', async () => {
    const { user, project } = await newProject(t.app);
    const base = `/users/@me/projects/${project.id}/webhook-secret`;
    const read = await t.app.inject({ method: 'GET', url: base, headers: { cookie: user.cookie } });
    expect(read.statusCode).toBe(200);
    const before = read.json<{ secret: string }>().secret;
    expect(before).toMatch(WHSEC);
    const rotated = await t.app.inject({ method: 'POST', url: `${base}/rotate`, headers: { cookie: user.cookie } });
    expect(rotated.statusCode).toBe(200);
    const after = rotated.json<{ secret: string }>().secret;
    expect(after).toMatch(WHSEC);
    expect(after).not.toBe(before);
    const row = await t.db.db.selectFrom('projects').select('webhook_secret').where('id', '=', project.id).executeTakeFirstOrThrow();
    expect(row.webhook_secret).toBe(after);
    expect((await t.app.inject({ method: 'GET', url: base, headers: { cookie: user.cookie } })).json()).toEqual({ secret: after });

    // Rotation changes the signature: a receiver holding the old secret rejects the call.
    const result = await callWebhook({}, { url: `${r.url}/hook`, variables: variables(), secret: row.webhook_secret, webhookId: 'w', allowPrivate: true });
    expect(result.ok).toBe(true);
    const req = r.received[0];
    const signature = String(req?.headers['x-signature']);
    expect(verifyWebhook(after, signature, req?.body ?? '')).toBe(true);
    expect(verifyWebhook(before, signature, req?.body ?? '')).toBe(false);
  });

  it('lets an ADMIN read and rotate it, refuses a MEMBER with 403 and hides it from strangers with 404', async () => {
    const { project } = await newProject(t.app);
    const [admin, member, stranger] = await Promise.all([signUp(t.app), signUp(t.app), signUp(t.app)]);
    await t.db.db
      .insertInto('memberships')
      .values([
        { project_id: project.id, user_id: admin.id, role: 'ADMIN' },
        { project_id: project.id, user_id: member.id, role: 'MEMBER' },
      ])
      .execute();
    const base = `/users/@me/projects/${project.id}/webhook-secret`;
    const before = (await t.db.db.selectFrom('projects').select('webhook_secret').where('id', '=', project.id).executeTakeFirstOrThrow()).webhook_secret;
    for (const [method, url] of [['GET', base], ['POST', `${base}/rotate`]] as const) {
      const asMember = await t.app.inject({ method, url, headers: { cookie: member.cookie } });
      expect(asMember.statusCode, `${method} ${url}`).toBe(403);
      expect(asMember.json().error.code).toBe('FORBIDDEN');
      expect(asMember.body).not.toContain('whsec_');
      const asStranger = await t.app.inject({ method, url, headers: { cookie: stranger.cookie } });
      expect(asStranger.statusCode, `${method} ${url}`).toBe(404);
      const anonymous = await t.app.inject({ method, url });
      expect(anonymous.statusCode, `${method} ${url}`).toBe(401);
    }
    const after = (await t.db.db.selectFrom('projects').select('webhook_secret').where('id', '=', project.id).executeTakeFirstOrThrow()).webhook_secret;
    expect(after).toBe(before); // nobody above could rotate it
    expect((await t.app.inject({ method: 'GET', url: base, headers: { cookie: admin.cookie } })).json()).toEqual({ secret: before });
    const rotated = await t.app.inject({ method: 'POST', url: `${base}/rotate`, headers: { cookie: admin.cookie } });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).not.toBe(before);
  });

  it('is not part of the project object and is in the OpenAPI document', async () => {
    const { user, project } = await newProject(t.app);
    const res = await t.app.inject({ method: 'GET', url: `/users/@me/projects/${project.id}`, headers: { cookie: user.cookie } });
    expect(res.body).not.toContain('whsec_');
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, unknown>> }>();
    expect(doc.paths['/users/@me/projects/{id}/webhook-secret']?.get).toBeDefined();
    expect(doc.paths['/users/@me/projects/{id}/webhook-secret/rotate']?.post).toBeDefined();
  });
});
