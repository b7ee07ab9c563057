import { randomUUID } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobPriority } from '../../../src/jobs/queue.js';
import type { TemplateTestAnswer } from '../../../src/modules/templates/templates.schema.js';
import { bearer, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { until } from '../../helpers/poll.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, jobsOf, newSender, type SendTestApp, type Sender, waitForStatus } from '../emails/helpers.js';

/** POST /templates/:id/test (docs/templates.md "Test send"): a real worker delivering to a real SMTP sink. */

let sink: SmtpSink;
let t: SendTestApp;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
  await t.runWorker();
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

const call = (project: TestProject, method: 'POST' | 'PATCH', url: string, payload: object) =>
  t.app.inject({ method, url, headers: bearer(project.secret), payload });

const testSend = (project: TestProject, id: string, payload: object) => call(project, 'POST', `/templates/${id}/test`, payload);

async function createTemplate(s: Sender, body: object = {}): Promise<{ id: string }> {
  const res = await call(s.project, 'POST', '/templates', {
    name: 'Welcome',
    subject: 'Hi {{firstName ?? "there"}}',
    body: '<p>Hello {{firstName ?? "friend"}}, your plan is {{plan ?? "none"}}.</p>',
    from: s.from,
    fromName: 'Acme',
    type: 'TRANSACTIONAL',
    ...body,
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>();
}

async function contact(projectId: string, email: string, data: Record<string, unknown> = {}) {
  return t.db.db
    .insertInto('contacts')
    .values({ project_id: projectId, email, subscribed: true, data: JSON.stringify(data) })
    .returning(['id', 'email'])
    .executeTakeFirstOrThrow();
}

/** The one message the sink received for `address`, parsed. */
async function receivedBy(address: string) {
  await until(`a message to ${address}`, async () => sink.messagesTo(address).length > 0, { timeoutMs: 20_000, intervalMs: 25 });
  const messages = sink.messagesTo(address);
  expect(messages).toHaveLength(1);
  return simpleParser(messages[0]?.raw ?? Buffer.alloc(0));
}

const emailsOfProject = (projectId: string) => t.db.db.selectFrom('emails').selectAll().where('project_id', '=', projectId).execute();

describe('POST /templates/:id/test', () => {
  it("delivers the saved template to the address, rendered with the chosen contact's data; a TEST email of the template", async () => {
    const s = await newSender(t);
    const ada = await contact(s.project.id, `ada-${randomUUID().slice(0, 6)}@rcpt.example`, { firstName: 'Ada', plan: 'pro' });
    const tester = `Tester-${randomUUID().slice(0, 6)}@Inbox.Example`;
    // The address is a contact too, with data of its own: the chosen contact's data wins.
    const own = await contact(s.project.id, tester.toLowerCase(), { firstName: 'Tess', plan: 'free' });
    const template = await createTemplate(s);
    const res = await testSend(s.project, template.id, { email: `  ${tester} `, contactId: ada.id });
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<TemplateTestAnswer>();
    expect(answer).toEqual({
      success: true,
      data: { emailId: expect.stringMatching(/^[0-9a-f-]{36}$/), email: tester.toLowerCase(), status: 'PENDING' },
      message: `Test email queued for ${tester.toLowerCase()} with the data of ${ada.email}`,
    });

    const mail = await receivedBy(tester.toLowerCase());
    expect(mail.subject).toBe('Hi Ada');
    expect(mail.html).toContain('Hello Ada, your plan is pro.');
    expect(mail.from?.value[0]).toMatchObject({ address: s.from, name: 'Acme' });
    // The chosen contact receives nothing: it only lends its data (the row, and its links, are the address's contact's).
    expect(sink.messagesTo(ada.email)).toHaveLength(0);
    const [row] = await waitForStatus(t.db, [answer.data.emailId], ['SENT']);
    expect(row).toMatchObject({ source: 'TEST', template_id: template.id, campaign_id: null, contact_id: own.id, to_email: tester.toLowerCase(), subject: 'Hi Ada' });
  });

  it("without contactId uses the data of the address's own contact and links the email to it; with no such contact, the fallbacks", async () => {
    const s = await newSender(t);
    const grace = await contact(s.project.id, `grace-${randomUUID().slice(0, 6)}@rcpt.example`, { firstName: 'Grace' });
    const template = await createTemplate(s);
    const own = await testSend(s.project, template.id, { email: grace.email.toUpperCase() });
    expect(own.statusCode, own.body).toBe(200);
    const mail = await receivedBy(grace.email);
    expect(mail.subject).toBe('Hi Grace');
    expect(mail.html).toContain('Hello Grace, your plan is none.');
    const ownRow = await t.db.db.selectFrom('emails').selectAll().where('id', '=', own.json<TemplateTestAnswer>().data.emailId).executeTakeFirstOrThrow();
    expect(ownRow).toMatchObject({ contact_id: grace.id, source: 'TEST' });

    const stranger = `nobody-${randomUUID().slice(0, 6)}@rcpt.example`;
    const none = await testSend(s.project, template.id, { email: stranger });
    expect(none.statusCode, none.body).toBe(200);
    const plain = await receivedBy(stranger);
    expect(plain.subject).toBe('Hi there');
    expect(plain.html).toContain('Hello friend, your plan is none.');
    // No contact is created for the address.
    expect(await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', s.project.id).where('email', '=', stranger).executeTakeFirst()).toBeUndefined();
  });

  it('reaches an unsubscribed contact with a MARKETING template (asked for by name, as campaign tests)', async () => {
    const s = await newSender(t);
    const template = await createTemplate(s, { type: 'MARKETING' });
    const away = await contact(s.project.id, `away-${randomUUID().slice(0, 6)}@rcpt.example`, { firstName: 'Lou' });
    await t.db.db.updateTable('contacts').set({ subscribed: false }).where('id', '=', away.id).execute();
    const res = await testSend(s.project, template.id, { email: away.email });
    expect(res.statusCode, res.body).toBe(200);
    expect((await receivedBy(away.email)).subject).toBe('Hi Lou');
    const [row] = await waitForStatus(t.db, [res.json<TemplateTestAnswer>().data.emailId], ['SENT']);
    expect(row).toMatchObject({ type: 'MARKETING', contact_id: away.id });
  });

  it('sends the saved version: an edit saved with PATCH is what the next test carries', async () => {
    const s = await newSender(t);
    const template = await createTemplate(s, { subject: 'Version one' });
    const patched = await call(s.project, 'PATCH', `/templates/${template.id}`, { subject: 'Version two' });
    expect(patched.statusCode, patched.body).toBe(200);
    const to = `v-${randomUUID().slice(0, 6)}@rcpt.example`;
    expect((await testSend(s.project, template.id, { email: to })).statusCode).toBe(200);
    expect((await receivedBy(to)).subject).toBe('Version two');
  });

  it("is 404 for another project's template or contact and an unknown or malformed id, writing nothing", async () => {
    const a = await newSender(t);
    const b = await newSender(t);
    const mine = await createTemplate(a);
    const theirs = await createTemplate(b);
    const theirContact = await contact(b.project.id, `theirs-${randomUUID().slice(0, 6)}@rcpt.example`, { firstName: 'Secret' });
    const to = `x-${randomUUID().slice(0, 6)}@rcpt.example`;
    const template404 = expectEnvelope(await testSend(a.project, theirs.id, { email: to }), 404, 'NOT_FOUND');
    expect(template404.message).toMatch(/template/i);
    expectEnvelope(await testSend(a.project, randomUUID(), { email: to }), 404, 'NOT_FOUND');
    expectEnvelope(await testSend(a.project, 'not-a-uuid', { email: to }), 404, 'NOT_FOUND');
    const contact404 = expectEnvelope(await testSend(a.project, mine.id, { email: to, contactId: theirContact.id }), 404, 'NOT_FOUND');
    expect(contact404.message).toMatch(/contact/i);
    expectEnvelope(await testSend(a.project, mine.id, { email: to, contactId: randomUUID() }), 404, 'NOT_FOUND');
    expect(await emailsOfProject(a.project.id)).toHaveLength(0);
    expect(await emailsOfProject(b.project.id)).toHaveLength(0);
  });

  it('is 422 for a bad or missing address and a malformed contactId, on that field, writing nothing', async () => {
    const s = await newSender(t);
    const template = await createTemplate(s);
    for (const [payload, field] of [
      [{ email: 'nope' }, 'email'],
      [{}, 'email'],
      [{ email: 'a@b.example', contactId: 'x' }, 'contactId'],
    ] as const) {
      const error = expectEnvelope(await testSend(s.project, template.id, payload), 422, 'VALIDATION_ERROR');
      expect(error.errors[0]?.field, JSON.stringify(payload)).toBe(field);
    }
    expect(await emailsOfProject(s.project.id)).toHaveLength(0);
  });

  it('is 422 on subject or body when the saved template has none', async () => {
    const s = await newSender(t);
    const noSubject = await createTemplate(s, { subject: '' });
    const noBody = await createTemplate(s, { body: '  ' });
    const e1 = expectEnvelope(await testSend(s.project, noSubject.id, { email: 'a@rcpt.example' }), 422, 'VALIDATION_ERROR');
    expect(e1.errors[0]).toMatchObject({ field: 'subject', message: expect.stringMatching(/no subject/) });
    const e2 = expectEnvelope(await testSend(s.project, noBody.id, { email: 'a@rcpt.example' }), 422, 'VALIDATION_ERROR');
    expect(e2.errors[0]).toMatchObject({ field: 'body' });
    expect(await emailsOfProject(s.project.id)).toHaveLength(0);
  });

  it('is 403 (code INTERNAL_SERVER_ERROR) when the sender domain is no longer verified, as campaign tests', async () => {
    const s = await newSender(t);
    const template = await createTemplate(s);
    await t.db.db.updateTable('domains').set({ verified: false }).where('project_id', '=', s.project.id).execute();
    const error = expectEnvelope(await testSend(s.project, template.id, { email: 'a@rcpt.example' }), 403, 'INTERNAL_SERVER_ERROR');
    expect(error.message).toContain(`The sender domain ${s.domain} is not verified`);
    expect(await emailsOfProject(s.project.id)).toHaveLength(0);
  });

  it('to a suppressed address: the email is CANCELLED with the reason, no job, and the answer says why', async () => {
    const s = await newSender(t);
    const template = await createTemplate(s);
    const to = `bounced-${randomUUID().slice(0, 6)}@rcpt.example`;
    await t.db.db.insertInto('suppressions').values({ project_id: s.project.id, email: to, reason: 'HARD_BOUNCE' }).execute();
    const res = await testSend(s.project, template.id, { email: to });
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<TemplateTestAnswer>();
    const row = await t.db.db.selectFrom('emails').selectAll().where('id', '=', answer.data.emailId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'CANCELLED', source: 'TEST' });
    expect(row.error).toEqual(expect.stringMatching(/suppress/i));
    expect(answer.message).toBe(row.error);
    expect(answer.data.status).toBe('CANCELLED');
    expect(await jobsOf(t.db, [answer.data.emailId])).toEqual([]);
  });

  it('queues at transactional priority', async () => {
    const s = await newSender(t);
    const template = await createTemplate(s);
    const to = `prio-${randomUUID().slice(0, 6)}@rcpt.example`;
    let emailId = '';
    await t.withWorkerStopped(async () => {
      const res = await testSend(s.project, template.id, { email: to });
      expect(res.statusCode, res.body).toBe(200);
      emailId = res.json<TemplateTestAnswer>().data.emailId;
      const [job] = await jobsOf(t.db, [emailId]);
      expect(job).toMatchObject({ task: 'send-email', priority: JobPriority.transactional });
    });
    await waitForStatus(t.db, [emailId], ['SENT']);
  });
});
