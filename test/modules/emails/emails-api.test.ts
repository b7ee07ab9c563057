import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Email } from '../../../src/modules/emails/emails.schema.js';
import { recordMilestone } from '../../../src/modules/emails/status.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { addVerifiedDomain, createSendTestApp, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

/** GET /emails/:id (docs/sending.md "Reading an email"), on capture mode with a worker running. */

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(() => t?.close());

async function sender(): Promise<{ project: TestProject; user: { cookie: string }; from: string }> {
  const { project, user } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id);
  return { project, user, from: `hello@${domain}` };
}

const getEmail = (project: TestProject, id: string) => t.app.inject({ method: 'GET', url: `/emails/${id}`, headers: bearer(project.secret) });

async function sendOne(project: TestProject, payload: object): Promise<string> {
  const res = await send(t.app, project, payload);
  expect(res.statusCode, res.body).toBe(200);
  const id = res.json<SendAnswer>().data.emails[0]?.email;
  if (!id) throw new Error('no email id in the answer');
  return id;
}

describe('GET /emails/:id', () => {
  it('shows a delivered email: SENT, confirmed, with its envelope, ids and times', async () => {
    const s = await sender();
    const id = await sendOne(s.project, { to: { name: 'Ada', email: 'ada@example.com' }, from: s.from, subject: 'Hi', body: '<p>x</p>' });
    await waitForStatus(t.db, [id], ['SENT']);
    const res = await getEmail(s.project, id);
    expect(res.statusCode, res.body).toBe(200);
    const email = res.json<Email>();
    expect(email).toMatchObject({
      id,
      status: 'SENT',
      unconfirmed: false,
      error: null,
      to: 'ada@example.com',
      toName: 'Ada',
      from: s.from,
      subject: 'Hi',
      type: 'TRANSACTIONAL',
      source: 'SEND',
      campaignId: null,
      templateId: null,
      attempts: 1,
      failedAt: null,
    });
    expect(email.contactId).toMatch(/^[0-9a-f-]{36}$/);
    expect(email.messageId).toBe(`<${id}@${s.from.split('@')[1]}>`);
    expect(Date.parse(email.sentAt ?? '')).toBeGreaterThanOrEqual(Date.parse(email.createdAt));
  });

  it('shows why an email was CANCELLED (unsubscribed contact, MARKETING template)', async () => {
    const s = await sender();
    const tpl = await t.db.db
      .insertInto('templates')
      .values({ project_id: s.project.id, name: 'news', subject: 'News', body: '<p>n</p>', from_email: s.from, type: 'MARKETING' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const id = await sendOne(s.project, { to: 'gone@example.com', template: tpl.id, subscribed: false });
    const email = (await getEmail(s.project, id)).json<Email>();
    expect(email).toMatchObject({ status: 'CANCELLED', unconfirmed: false, templateId: tpl.id, type: 'MARKETING', sentAt: null });
    expect(email.error).toMatch(/unsubscribed/);
  });

  it('shows an unconfirmed delivery as SENT with unconfirmed: true and the reason', async () => {
    const s = await sender();
    const id = await sendOne(s.project, { to: 'maybe@example.com', from: s.from, subject: 'Hi', body: '<p>x</p>' });
    await waitForStatus(t.db, [id], ['SENT']);
    // The state recovery leaves (docs/sending.md "Exactly once"); the recovery itself is tested in delivery-stage.test.ts.
    await t.db.db.updateTable('emails').set({ unconfirmed: true, error: 'Delivery unconfirmed: test' }).where('id', '=', id).execute();
    expect((await getEmail(s.project, id)).json<Email>()).toMatchObject({ status: 'SENT', unconfirmed: true, error: 'Delivery unconfirmed: test' });
    // A delivery notification proves the relay had it: no longer unconfirmed.
    await t.db.db.transaction().execute((trx) => recordMilestone(trx, { emailId: id, status: 'DELIVERED' }));
    expect((await getEmail(s.project, id)).json<Email>()).toMatchObject({ status: 'DELIVERED', unconfirmed: false });
  });

  it('takes the session cookie with X-Project-Id', async () => {
    const s = await sender();
    const id = await sendOne(s.project, { to: 'cookie@example.com', from: s.from, subject: 'Hi', body: '<p>x</p>' });
    const res = await t.app.inject({ method: 'GET', url: `/emails/${id}`, headers: { cookie: s.user.cookie, 'x-project-id': s.project.id } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<Email>().id).toBe(id);
  });

  it("answers 404 for another project's email, an unknown id and a malformed id; 401 without a key", async () => {
    const a = await sender();
    const b = await sender();
    const id = await sendOne(a.project, { to: 'mine@example.com', from: a.from, subject: 'Hi', body: '<p>x</p>' });
    expectEnvelope(await getEmail(b.project, id), 404, 'NOT_FOUND');
    expectEnvelope(await getEmail(a.project, randomUUID()), 404, 'NOT_FOUND');
    expectEnvelope(await getEmail(a.project, 'not-a-uuid'), 404, 'NOT_FOUND');
    expectEnvelope(await getEmail(a.project, `${id}x`), 404, 'NOT_FOUND');
    const anonymous = await t.app.inject({ method: 'GET', url: `/emails/${id}` });
    expect(anonymous.statusCode).toBe(401);
  });

  it('is documented in /openapi.json with the Email schema', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    const doc = res.json<{ paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, { properties: Record<string, unknown> }> } }>();
    expect(Object.keys(doc.paths['/emails/{id}'] ?? {})).toEqual(['get']);
    expect(Object.keys(doc.components.schemas.Email?.properties ?? {})).toEqual(expect.arrayContaining(['status', 'unconfirmed', 'error', 'sentAt']));
  });
});
