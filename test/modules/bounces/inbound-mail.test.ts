import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVerp, type InboundReceiver } from '../../../src/modules/bounces/index.js';
import { MAX_BODY_BYTES } from '../../../src/modules/bounces/parse/received.js';
import { eventNameProblem } from '../../../src/modules/workflows/event-name.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { TEST_SECRET } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createCampaign, seedContacts, waitForCampaign } from '../campaigns/helpers.js';
import { addVerifiedDomain, createSendTestApp, newSender, type Sender, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, waitForExecutions } from '../workflows/engine-helpers.js';
import { deliver, fixture, smtpSend, startTestReceiver } from './helpers.js';
import { smtpMail } from './inbound-mail-helpers.js';

const DOMAIN = 'bounces.test';
const verp = createVerp(TEST_SECRET, DOMAIN);

let sink: SmtpSink;
let t: SendTestApp;
let receiver: InboundReceiver;
let a: Sender;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, BOUNCE_DOMAIN: DOMAIN } });
  await t.runWorker();
  receiver = await startTestReceiver(t.db.db, verp, { maxSizeBytes: 2 * 1024 * 1024 });
  a = await newSender(t);
  await enableInbound(a.project, a.domain);
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await t?.close();
  await sink?.close();
});

const api = (project: TestProject, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(project.secret), ...(payload !== undefined && { payload }) });
const domainId = async (domain: string) => (await t.db.db.selectFrom('domains').select('id').where('domain', '=', domain).executeTakeFirstOrThrow()).id;
async function enableInbound(project: TestProject, domain: string, on = true) {
  const res = await api(project, 'PATCH', `/domains/${await domainId(domain)}`, { inboundEnabled: on });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json()).toMatchObject({ domain, inboundEnabled: on });
}
const sender = () => `p${randomUUID().slice(0, 8)}@people.example`;
const contactOf = (projectId: string, email: string) =>
  t.db.db.selectFrom('contacts').selectAll().where('project_id', '=', projectId).where('email', '=', email).executeTakeFirst();
const received = (projectId: string, contactId: string) =>
  t.db.db.selectFrom('events').select(['id', 'data']).where('project_id', '=', projectId).where('contact_id', '=', contactId).where('name', '=', 'email.received').execute();
const storedMessages = async (projectId: string) =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_messages WHERE project_id = ${projectId}::uuid`.execute(t.db.db)).rows[0]?.n ?? 0;

describe('PATCH /domains/:id (inbound opt-in)', () => {
  it('sets and clears inboundEnabled; GET lists it; bad bodies are 422; another project\'s domain is 404', async () => {
    const s = await newSender(t);
    const id = await domainId(s.domain);
    const list = await api(s.project, 'GET', `/domains/project/${s.project.id}`);
    expect(list.json<{ inboundEnabled: boolean }[]>()[0]?.inboundEnabled).toBe(false);
    await enableInbound(s.project, s.domain);
    await enableInbound(s.project, s.domain, false);
    const bad = expectEnvelope(await api(s.project, 'PATCH', `/domains/${id}`, { inboundEnabled: 'yes' }), 422, 'VALIDATION_ERROR');
    expect(bad.errors.map((e: { field: string }) => e.field)).toEqual(['inboundEnabled']);
    expectEnvelope(await api(s.project, 'PATCH', `/domains/${id}`, { inboundEnabled: true, domain: 'x.example' }), 422, 'VALIDATION_ERROR');
    expectEnvelope(await api(a.project, 'PATCH', `/domains/${id}`, { inboundEnabled: true }), 404, 'NOT_FOUND');
    expect((await t.db.db.selectFrom('domains').select('inbound_enabled').where('id', '=', id).executeTakeFirstOrThrow()).inbound_enabled).toBe(false);
  });
});

describe('mail to a verified inbound domain', () => {
  it('creates the sending contact (unsubscribed) and an email.received event with the parsed fields and attachment metadata', async () => {
    const from = sender();
    const pdf = Buffer.alloc(12_345, 7);
    const answer = await smtpMail(receiver.port, { from, to: [`support@${a.domain}`] }, {
      from: `Pat Doe <${from.toUpperCase()}>`,
      to: `support@${a.domain}`,
      cc: 'boss@people.example',
      subject: 'Question about my order',
      messageId: `<q-${randomUUID()}@people.example>`,
      text: 'Hello,\nwhere is my parcel?',
      html: '<p>Hello,<br>where is my parcel?</p>',
      attachments: [{ filename: 'invoice.pdf', content: pdf, contentType: 'application/pdf' }],
    });
    expect(answer, answer.response).toMatchObject({ ok: true });
    expect(answer.response).toContain('received');
    const contact = await contactOf(a.project.id, from);
    expect(contact).toMatchObject({ subscribed: false });
    const events = await received(a.project.id, contact?.id ?? '');
    expect(events).toHaveLength(1);
    const data = events[0]?.data as Record<string, unknown>;
    expect(data).toMatchObject({
      subject: 'Question about my order',
      from,
      fromName: 'Pat Doe',
      to: [`support@${a.domain}`],
      cc: ['boss@people.example'],
      recipients: [`support@${a.domain}`],
      text: 'Hello,\nwhere is my parcel?',
      hasHtml: true,
      attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', size: 12_345 }],
    });
    expect(data.messageId).toMatch(/^<q-.+@people\.example>$/);
    expect(data).not.toHaveProperty('campaignId');
    const { rows } = await sql<{ html_body: string; event_id: string; contact_id: string }>`
      SELECT html_body, event_id, contact_id FROM inbound_messages WHERE id = ${data.inboundMessageId as string}::uuid`.execute(t.db.db);
    expect(rows[0]).toMatchObject({ html_body: expect.stringContaining('where is my parcel?'), event_id: events[0]?.id, contact_id: contact?.id });

    // GET /inbound-messages/:id: the stored bodies; another project's message is 404.
    const res = await api(a.project, 'GET', `/inbound-messages/${data.inboundMessageId as string}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      id: data.inboundMessageId,
      contactId: contact?.id,
      eventId: events[0]?.id,
      from,
      subject: 'Question about my order',
      text: 'Hello,\nwhere is my parcel?',
      html: expect.stringContaining('<p>Hello,<br>where is my parcel?</p>'),
      attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', size: 12_345 }],
      campaignId: null,
    });
    const other = (await newProject(t.app)).project;
    expectEnvelope(await api(other, 'GET', `/inbound-messages/${data.inboundMessageId as string}`), 404, 'NOT_FOUND');
    expectEnvelope(await api(a.project, 'GET', '/inbound-messages/not-an-id'), 404, 'NOT_FOUND');
  });

  it('a subdomain of the inbound domain is received too; the same message delivered twice is recorded once', async () => {
    const from = sender();
    const msg = { from, to: `help@eu.${a.domain}`, subject: 'Sub', text: 'hi', messageId: `<dup-${randomUUID()}@people.example>` };
    expect(await smtpMail(receiver.port, { from, to: [msg.to] }, msg)).toMatchObject({ ok: true });
    expect(await smtpMail(receiver.port, { from, to: [msg.to] }, msg)).toMatchObject({ ok: true });
    const contact = await contactOf(a.project.id, from);
    expect(await received(a.project.id, contact?.id ?? '')).toHaveLength(1);
  });

  it('bodies are stored up to 256 KB each; the event carries the first 2,000 characters', async () => {
    const from = sender();
    const text = 'é'.repeat(200_000); // 400,000 bytes of UTF-8
    expect(await smtpMail(receiver.port, { from, to: [`big@${a.domain}`] }, { from, to: `big@${a.domain}`, subject: 'Big', text })).toMatchObject({ ok: true });
    const contact = await contactOf(a.project.id, from);
    const [event] = await received(a.project.id, contact?.id ?? '');
    const data = event?.data as { text: string; textTruncated: boolean; inboundMessageId: string };
    expect(data.text).toBe('é'.repeat(2_000));
    expect(data.textTruncated).toBe(true);
    const { rows } = await sql<{ bytes: number; text_truncated: boolean }>`
      SELECT octet_length(text_body) AS bytes, text_truncated FROM inbound_messages WHERE id = ${data.inboundMessageId}::uuid`.execute(t.db.db);
    expect(rows[0]).toEqual({ bytes: MAX_BODY_BYTES, text_truncated: true });
  });
});

describe('no open relay: refused with 550 and nothing written', () => {
  it('a verified domain without inbound, an unverified domain with inbound, another project\'s domain without inbound, a foreign domain', async () => {
    const plain = await addVerifiedDomain(t, a.project.id);
    const b = await newSender(t);
    const pending = `u${randomUUID().slice(0, 8)}.example`;
    await addVerifiedDomain(t, b.project.id, { domain: pending });
    await enableInbound(b.project, pending);
    await t.db.db.updateTable('domains').set({ verified: false }).where('domain', '=', pending).execute();
    const before = [await storedMessages(a.project.id), await storedMessages(b.project.id)];
    for (const to of [`x@${plain.domain}`, `x@${pending}`, `x@${b.domain}`, 'x@elsewhere.example', `x@${a.domain.split('.').slice(1).join('.')}`]) {
      const from = sender();
      const answer = await smtpMail(receiver.port, { from, to: [to] }, { from, to, subject: 'Hi', text: 'hi' });
      expect(answer, to).toMatchObject({ ok: false, code: 550 });
      expect(answer.response).toMatch(/Relaying denied/);
      expect(await contactOf(a.project.id, from)).toBeUndefined();
      expect(await contactOf(b.project.id, from)).toBeUndefined();
    }
    expect([await storedMessages(a.project.id), await storedMessages(b.project.id)]).toEqual(before);
  });
});

describe('reports and auto-replies sent to an inbound address', () => {
  it('a DSN and an out-of-office reply are stored in inbound_feedback and ignored: no contact, no event', async () => {
    const before = await storedMessages(a.project.id);
    const d = await deliver(t, sink, a, `r${randomUUID().slice(0, 8)}@recipient.example`);
    const dsn = fixture('rfc3464.eml', { verp: `bounce@${a.domain}`, recipient: d.to, messageId: d.messageId });
    expect(await smtpSend(receiver.port, `bounce@${a.domain}`, dsn)).toMatchObject({ ok: true });
    const from = sender();
    const ooo = await smtpMail(receiver.port, { from, to: [`sales@${a.domain}`] }, {
      from, to: `sales@${a.domain}`, subject: 'Out of office: back Monday', text: 'I am away.', headers: { 'Auto-Submitted': 'auto-replied' },
    });
    expect(ooo.response).toContain('ignored');
    expect(await contactOf(a.project.id, from)).toBeUndefined();
    expect(await storedMessages(a.project.id)).toBe(before);
    const { rows } = await sql<{ kind: string; outcome: string }>`
      SELECT kind, outcome FROM inbound_feedback WHERE project_id = ${a.project.id}::uuid AND rcpt_to IN (${`bounce@${a.domain}`}, ${`sales@${a.domain}`}) ORDER BY received_at`.execute(t.db.db);
    expect(rows).toEqual([{ kind: 'hard-bounce', outcome: 'ignored' }, { kind: 'auto-reply', outcome: 'ignored' }]);
    // The email the DSN was about is untouched: a bounce counts only at its VERP address.
    expect((await t.db.db.selectFrom('emails').select('status').where('id', '=', d.emailId).executeTakeFirstOrThrow()).status).toBe('SENT');
  });
});

describe('replies to campaigns', () => {
  it('In-Reply-To naming a campaign email of the project links the event to the campaign and the email; another project\'s is not linked', async () => {
    const s = await newSender(t, 'news');
    await enableInbound(s.project, s.domain);
    const [person] = await seedContacts(t.db, s.project.id, 1, { tag: `reply${Date.now()}-` });
    const campaign = await createCampaign(t, s);
    const res = await api(s.project, 'POST', `/campaigns/${campaign.id}/send`, {});
    expect(res.statusCode, res.body).toBe(200);
    await waitForCampaign(t, campaign.id, ['SENT']);
    const email = await t.db.db.selectFrom('emails').select(['id', 'message_id', 'contact_id']).where('campaign_id', '=', campaign.id).executeTakeFirstOrThrow();
    const to = `news@${s.domain}`;
    const reply = await smtpMail(receiver.port, { from: person?.email ?? '', to: [to] }, {
      from: person?.email, to, subject: 'Re: Hi', text: 'Thanks!', inReplyTo: email.message_id, references: [`<older@people.example>`, email.message_id],
    });
    expect(reply).toMatchObject({ ok: true });
    const [event] = await received(s.project.id, email.contact_id ?? '');
    expect(event?.data).toMatchObject({ campaignId: campaign.id, emailId: email.id, reply: true, inReplyTo: email.message_id });
    // Project a's inbound domain gets a message whose References name s's email: not linked.
    const from = sender();
    expect(await smtpMail(receiver.port, { from, to: [`x@${a.domain}`] }, { from, to: `x@${a.domain}`, subject: 'Re: Hi', text: 'x', references: [email.message_id] })).toMatchObject({ ok: true });
    const [foreign] = await received(a.project.id, (await contactOf(a.project.id, from))?.id ?? '');
    expect(foreign?.data).not.toHaveProperty('campaignId');
    expect(foreign?.data).not.toHaveProperty('emailId');
  }, 60_000);
});

describe('email.received in workflows, the activity feed and segments', () => {
  it('starts a workflow triggered by email.received (an execution completes)', async () => {
    expect(eventNameProblem('email.received')).toBeUndefined();
    const s = await newSender(t);
    await enableInbound(s.project, s.domain);
    const wf = await createWorkflow(t.db, s.project.id, { eventName: 'email.received', steps: [], edges: [] });
    const from = sender();
    expect(await smtpMail(receiver.port, { from, to: [`hi@${s.domain}`] }, { from, to: `hi@${s.domain}`, subject: 'Start', text: 'go' })).toMatchObject({ ok: true });
    const [execution] = await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    expect(execution?.contact_id).toBe((await contactOf(s.project.id, from))?.id);
  });

  it('is listed by GET /activity (type email.received, its own subject) and counted by a segment on event.email.received', async () => {
    const { project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    await enableInbound(project, domain);
    const from = sender();
    expect(await smtpMail(receiver.port, { from, to: [`hi@${domain}`] }, { from, to: `hi@${domain}`, subject: 'Feed me', text: 'x' })).toMatchObject({ ok: true });
    const feed = await api(project, 'GET', '/activity?types=email.received');
    expect(feed.statusCode, feed.body).toBe(200);
    const items = feed.json<{ data: { type: string; contact?: { email: string }; metadata: Record<string, unknown> }[] }>().data;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ type: 'email.received', contact: { email: from }, metadata: { subject: 'Feed me', from } });
    const all = await api(project, 'GET', '/activity');
    expect(all.json<{ data: { type: string }[] }>().data.map((i) => i.type)).toContain('email.received');
    const count = await api(project, 'POST', '/segments/count', { condition: { logic: 'AND', groups: [{ filters: [{ field: 'event.email.received', operator: 'triggered' }] }] } });
    expect(count.statusCode, count.body).toBe(200);
    expect(count.json<{ count: number }>().count).toBe(1);
  });
});
