import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmailType } from '../../../src/db/schema.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { addVerifiedDomain, createSendTestApp, jobsOf, send, type SendAnswer, type SendTestApp } from './helpers.js';

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(() => t?.close());

/** A project with a verified sender domain; `from` is an address on it. */
async function sender(): Promise<{ project: TestProject; domain: string; from: string }> {
  const { project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id);
  return { project, domain, from: `hello@${domain}` };
}

const emailsOf = (projectId: string) =>
  t.db.db.selectFrom('emails').selectAll().where('project_id', '=', projectId).orderBy('to_email').execute();
const contactOf = (projectId: string, email: string) =>
  t.db.db.selectFrom('contacts').selectAll().where('project_id', '=', projectId).where('email', '=', email).executeTakeFirst();
const eventsOf = (projectId: string) =>
  t.db.db.selectFrom('events').select(['name', 'contact_id']).where('project_id', '=', projectId).orderBy('created_at').execute();

async function insertTemplate(projectId: string, t2: { from: string; type: EmailType; subject?: string; body?: string; fromName?: string; replyTo?: string }) {
  return t.db.db
    .insertInto('templates')
    .values({
      project_id: projectId,
      name: 'welcome',
      subject: t2.subject ?? 'Welcome {{name ?? friend}}',
      body: t2.body ?? '<p>Hi {{name}}, your plan is {{plan}}</p>',
      from_email: t2.from,
      from_name: t2.fromName ?? 'Template Sender',
      reply_to: t2.replyTo ?? null,
      type: t2.type,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
}

describe('POST /v1/send: acceptance', () => {
  it('answers 200 once every email and its job are committed: one contact, rendering and email per recipient', async () => {
    const { project, domain, from } = await sender();
    await t.app.inject({ method: 'POST', url: '/contacts', headers: bearer(project.secret), payload: { email: 'bob@example.com', data: { name: 'Bob' } } });
    const res = await send(t.app, project, {
      to: ['Ada@Example.com', { name: 'Bob B', email: 'bob@example.com' }],
      from,
      subject: 'Hello {{name ?? there}}',
      body: '<p>Hi {{name}} ({{email}}), plan {{plan}}. <a href="{{unsubscribeUrl}}">unsubscribe</a></p>',
      data: { plan: 'pro' },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<SendAnswer>();
    expect(body.success).toBe(true);
    expect(body.data.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(body.data.emails.map((e) => e.contact.email)).toEqual(['ada@example.com', 'bob@example.com']);

    const rows = await emailsOf(project.id);
    expect(rows).toHaveLength(2);
    const [ada, bob] = rows;
    expect(ada).toMatchObject({
      id: body.data.emails[0]?.email,
      contact_id: body.data.emails[0]?.contact.id,
      source: 'SEND',
      type: 'TRANSACTIONAL',
      status: 'PENDING',
      from_email: from,
      to_email: 'ada@example.com',
      subject: 'Hello there',
      message_id: `<${ada?.id}@${domain}>`,
    });
    expect(ada?.html).toContain('Hi  (ada@example.com), plan pro.');
    expect(ada?.html).toMatch(/href="http:\/\/localhost:8080\/unsubscribe\/[\w-]+\.[\w-]+"/);
    expect(bob).toMatchObject({ subject: 'Hello Bob', to_name: 'Bob B', message_id: `<${bob?.id}@${domain}>` });
    expect(bob?.html).toContain('Hi Bob (bob@example.com), plan pro.');
    expect(ada?.html).not.toEqual(bob?.html);

    const jobs = await jobsOf(t.db, rows.map((r) => r.id));
    expect(jobs.map((j) => j.key).sort()).toEqual(rows.map((r) => r.id).sort());
    // One send-batch job for the request's emails (docs/sending.md "Delivery batches").
    for (const j of jobs) expect(j).toMatchObject({ task: 'send-batch', priority: 0, max_attempts: 25, attempts: 0, payload: { projectId: project.id, emailIds: rows.map((r) => r.id) } });
  });

  it('creates new contacts unsubscribed unless `subscribed` is given; a change records its event; omission keeps the state', async () => {
    const { project, from } = await sender();
    const base = { from, subject: 's', body: 'b' };
    expect((await send(t.app, project, { ...base, to: 'new@example.com' })).statusCode).toBe(200);
    expect(await contactOf(project.id, 'new@example.com')).toMatchObject({ subscribed: false });
    expect(await eventsOf(project.id)).toEqual([]);

    expect((await send(t.app, project, { ...base, to: 'new@example.com', subscribed: true })).statusCode).toBe(200);
    expect(await contactOf(project.id, 'new@example.com')).toMatchObject({ subscribed: true });
    expect((await send(t.app, project, { ...base, to: 'new@example.com' })).statusCode).toBe(200);
    expect(await contactOf(project.id, 'new@example.com')).toMatchObject({ subscribed: true });
    expect((await send(t.app, project, { ...base, to: 'fresh@example.com', subscribed: true })).statusCode).toBe(200);
    const events = await eventsOf(project.id);
    expect(events).toEqual([{ name: 'contact.subscribed', contact_id: (await contactOf(project.id, 'new@example.com'))?.id }]);
  });

  it('applies the data rules: persistent values stored, one-off values rendered only, null deletes, empty ignored, reserved keys dropped', async () => {
    const { project, from } = await sender();
    await t.app.inject({ method: 'POST', url: '/contacts', headers: bearer(project.secret), payload: { email: 'd@example.com', data: { city: 'Oslo', nick: 'dd', plan: 'free' } } });
    const res = await send(t.app, project, {
      to: 'd@example.com',
      from,
      subject: '{{code}}',
      body: '<p>{{plan}}|{{city ?? none}}|{{nick}}|{{code}}|{{email}}|{{unsubscribeUrl}}</p>',
      data: { plan: 'pro', city: null, nick: '', code: { value: '1234', persistent: false }, email: 'x@evil.example', unsubscribeUrl: 'http://evil.example', id: 'x' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect((await contactOf(project.id, 'd@example.com'))?.data).toEqual({ plan: 'pro', nick: 'dd' });
    const [email] = await emailsOf(project.id);
    expect(email?.subject).toBe('1234');
    expect(email?.html).toMatch(/^<p>pro\|none\|dd\|1234\|d@example\.com\|http:\/\/localhost:8080\/unsubscribe\/\S+<\/p>$/);
  });

  it('sends a repeated recipient once, keeping the first name', async () => {
    const { project, from } = await sender();
    const res = await send(t.app, project, { to: [{ name: 'One', email: 'r@example.com' }, 'R@EXAMPLE.COM', 'Two <r@example.com>'], from, subject: 's', body: 'b' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<SendAnswer>().data.emails).toHaveLength(1);
    expect(await emailsOf(project.id)).toEqual([expect.objectContaining({ to_email: 'r@example.com', to_name: 'One' })]);
  });

  it('uses the deprecated `name` only for a `from` address without a name', async () => {
    const { project, from } = await sender();
    const base = { subject: 's', body: 'b', name: 'Legacy Name' };
    await send(t.app, project, { ...base, to: 'a@example.com', from });
    await send(t.app, project, { ...base, to: 'b@example.com', from: `Display <${from}>` });
    await send(t.app, project, { ...base, to: 'c@example.com', from: { email: from, name: 'Object Name' } });
    await send(t.app, project, { ...base, to: 'd@example.com', from: { email: from } });
    expect((await emailsOf(project.id)).map((e) => [e.to_email, e.from_name, e.from_email])).toEqual([
      ['a@example.com', 'Legacy Name', from],
      ['b@example.com', 'Display', from],
      ['c@example.com', 'Object Name', from],
      ['d@example.com', null, from],
    ]);
  });
});

describe('POST /v1/send with a template', () => {
  it("uses the template's subject, body, sender, reply-to and type; explicit fields override them", async () => {
    const { project, from, domain } = await sender();
    const tpl = await insertTemplate(project.id, { from, type: 'TRANSACTIONAL', replyTo: 'support@example.com' });
    const plain = await send(t.app, project, { to: 'a@example.com', template: tpl.id, data: { name: 'Ada', plan: 'pro' } });
    expect(plain.statusCode, plain.body).toBe(200);
    const over = await send(t.app, project, {
      to: 'b@example.com',
      template: tpl.id,
      subject: 'Own {{name}}',
      body: '<b>own</b>',
      from: { email: `other@${domain}`, name: 'Other' },
      reply: 'reply@example.com',
    });
    expect(over.statusCode, over.body).toBe(200);
    const [a, b] = await emailsOf(project.id);
    expect(a).toMatchObject({ template_id: tpl.id, subject: 'Welcome Ada', html: '<p>Hi Ada, your plan is pro</p>', from_email: from, from_name: 'Template Sender', reply_to: 'support@example.com', type: 'TRANSACTIONAL' });
    expect(b).toMatchObject({ template_id: tpl.id, subject: 'Own ', html: '<b>own</b>', from_email: `other@${domain}`, from_name: 'Other', reply_to: 'reply@example.com' });
  });

  it('answers 404 for an unknown template or one of another project', async () => {
    const { project, from } = await sender();
    const other = await sender();
    const foreign = await insertTemplate(other.project.id, { from: other.from, type: 'TRANSACTIONAL' });
    expectEnvelope(await send(t.app, project, { to: 'a@example.com', template: foreign.id }), 404, 'NOT_FOUND');
    expectEnvelope(await send(t.app, project, { to: 'a@example.com', template: '0190a5f0-0000-7000-8000-000000000000', from }), 404, 'NOT_FOUND');
    expect(await contactOf(project.id, 'a@example.com')).toBeUndefined();
  });

  it('accepts MARKETING mail to an unsubscribed contact as CANCELLED without a job; TRANSACTIONAL mail gets a job regardless', async () => {
    const { project, from } = await sender();
    const marketing = await insertTemplate(project.id, { from, type: 'MARKETING' });
    const transactional = await insertTemplate(project.id, { from, type: 'TRANSACTIONAL' });
    const m = await send(t.app, project, { to: ['u@example.com', 'sub@example.com'], template: marketing.id });
    await send(t.app, project, { to: 'sub@example.com', template: marketing.id, subscribed: true });
    const tr = await send(t.app, project, { to: 'u@example.com', template: transactional.id });
    const [cancelled, firstToSub] = m.json<SendAnswer>().data.emails.map((e) => e.email);
    const rows = await t.db.db.selectFrom('emails').selectAll().where('project_id', '=', project.id).orderBy('created_at').orderBy('id').execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(cancelled ?? '')).toMatchObject({ status: 'CANCELLED', type: 'MARKETING', error: expect.stringMatching(/unsubscribed/) });
    expect(byId.get(firstToSub ?? '')?.status).toBe('CANCELLED');
    const deliverable = rows.filter((r) => r.status === 'PENDING');
    expect(deliverable.map((r) => [r.to_email, r.type])).toEqual([
      ['sub@example.com', 'MARKETING'],
      ['u@example.com', 'TRANSACTIONAL'],
    ]);
    expect(tr.json<SendAnswer>().data.emails[0]?.email).toBe(deliverable[1]?.id);
    const jobs = await jobsOf(t.db, rows.map((r) => r.id));
    expect(jobs.map((j) => j.key).sort()).toEqual(deliverable.map((r) => r.id).sort());
  });
});
