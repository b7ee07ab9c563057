import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Campaign, CampaignStats } from '../../../src/modules/campaigns/campaigns.schema.js';
import { runCampaignSend, sweepCampaigns } from '../../../src/modules/campaigns/fanout.js';
import { CAMPAIGN_UNSUBSCRIBED } from '../../../src/modules/emails/index.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { api, createCampaign, emailsOf, seedContacts, sender, waitForCampaign, waitForNoEmailJobs } from './helpers.js';

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

const send = (s: { project: Parameters<typeof api>[1] }, id: string, body: object = {}) => api(t.app, s.project, 'POST', `/campaigns/${id}/send`, body);
const deliveredTo = (address: string) => sink.messagesTo(address).length;

describe('sending a campaign', () => {
  it('sends now: DRAFT → SENDING → SENT, one personalised email per subscribed contact (MARKETING skips unsubscribed)', async () => {
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, 12, { unsubscribedEvery: 4, tag: `m${Date.now()}-` });
    const c = await createCampaign(t, s, { subject: 'Hi {{firstName}}', body: '<p>Hello {{firstName}}, plan {{plan}}</p>' });
    const res = await send(s, c.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ success: true, data: { id: c.id, status: 'SENDING', scheduledFor: null }, message: expect.any(String) });

    const row = await waitForCampaign(t, c.id, ['SENT']);
    expect(row.sent_at).toBeInstanceOf(Date);
    const subscribed = contacts.filter((x) => x.subscribed);
    expect(row.total_recipients).toBe(subscribed.length);
    const emails = await emailsOf(t, c.id);
    expect(emails).toHaveLength(9);
    expect(new Set(emails.map((e) => e.contact_id))).toEqual(new Set(subscribed.map((x) => x.id)));
    expect(emails.every((e) => e.status === 'SENT' && e.source === 'CAMPAIGN')).toBe(true);
    for (const x of contacts) expect(deliveredTo(x.email), x.email).toBe(x.subscribed ? 1 : 0);

    const first = contacts.find((x) => x.subscribed);
    const raw = sink.messagesTo(first?.email ?? '')[0]?.raw ?? Buffer.alloc(0);
    const parsed = await simpleParser(raw);
    const n = first?.email.match(/-(\d+)@/)?.[1];
    expect(parsed.subject).toBe(`Hi Name${n}`);
    // The row keeps the subject as sent (GET /emails/:id, a contact's emails, webhooks), not the template.
    const firstEmail = emails.find((e) => e.contact_id === first?.id);
    expect((await api(t.app, s.project, 'GET', `/emails/${firstEmail?.id ?? ''}`)).json()).toMatchObject({ subject: `Hi Name${n}` });
    expect(parsed.html).toContain(`Hello Name${n}, plan ${Number(n) % 2 === 0 ? 'pro' : 'free'}`);
    expect(parsed.html).toContain('/unsubscribe/');
    expect(raw.toString()).toMatch(/^List-Unsubscribe: <http[^>]+\/unsubscribe\//m);

    const got = (await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>();
    expect(got).toMatchObject({ status: 'SENT', totalRecipients: 9, sentCount: 9, unconfirmedCount: 0, deliveredCount: 0 });
    // Started when it became SENDING, before it finished.
    expect(Date.parse(got.startedAt ?? '')).toBeLessThanOrEqual(Date.parse(got.sentAt ?? ''));
    const stats = (await api(t.app, s.project, 'GET', `/campaigns/${c.id}/stats`)).json<CampaignStats>();
    expect(stats).toEqual({
      total: 9, pending: 0, sent: 9, unconfirmed: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, failed: 0, cancelled: 0,
      deliveryRate: 0, openRate: 0, clickRate: 0, bounceRate: 0, complaintRate: 0,
    });
  });

  it('TRANSACTIONAL campaigns also reach unsubscribed contacts; scheduledFor null sends now (SPEC)', async () => {
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, 4, { unsubscribedEvery: 2, tag: `t${Date.now()}-` });
    const c = await createCampaign(t, s, { type: 'TRANSACTIONAL' });
    const res = await send(s, c.id, { scheduledFor: null });
    expect(res.json()).toMatchObject({ data: { status: 'SENDING', scheduledFor: null } });
    const row = await waitForCampaign(t, c.id, ['SENT']);
    expect(row.total_recipients).toBe(4);
    for (const x of contacts) expect(deliveredTo(x.email)).toBe(1);
  });

  it('scheduled: SCHEDULED until scheduledFor, then starts by itself', async () => {
    const s = await sender(t);
    const [contact] = await seedContacts(t.db, s.project.id, 1, { tag: `s${Date.now()}-` });
    const c = await createCampaign(t, s);
    const at = new Date(Date.now() + 1500);
    // Checked with the worker stopped: however slow the machine, the start job cannot have run yet.
    await t.withWorkerStopped(async () => {
      const res = await send(s, c.id, { scheduledFor: at.toISOString() });
      expect(res.json()).toMatchObject({ data: { status: 'SCHEDULED', scheduledFor: at.toISOString() } });
      expect((await t.db.db.selectFrom('campaigns').select('status').where('id', '=', c.id).executeTakeFirstOrThrow()).status).toBe('SCHEDULED');
      expect(await emailsOf(t, c.id)).toHaveLength(0);
    });
    const row = await waitForCampaign(t, c.id, ['SENT'], 15_000);
    expect(row.total_recipients).toBe(1);
    expect(deliveredTo(contact?.email ?? '')).toBe(1);
    const sentAt = (await emailsOf(t, c.id))[0]?.sent_at?.getTime() ?? 0;
    expect(sentAt).toBeGreaterThanOrEqual(at.getTime() - 1000);
  });

  it('cancel mid-send: CANCELLED, the undelivered emails CANCELLED, none of them delivered later', async () => {
    const s = await sender(t);
    const tag = `x${Date.now()}-`;
    const contacts = await seedContacts(t.db, s.project.id, 600, { tag });
    const c = await createCampaign(t, s);
    await t.withWorkerStopped(async () => {
      expect((await send(s, c.id)).statusCode).toBe(200);
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'materialised', recipients: 600 });
    });
    // Wait for the first deliveries, then cancel.
    for (let i = 0; i < 400 && sink.messages.filter((m) => m.to[0]?.startsWith(tag)).length < 5; i++) await new Promise((r) => setTimeout(r, 10));
    const res = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/cancel`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'CANCELLED' });
    // "None delivered later": poll until no delivery job of the campaign is left, after which
    // nothing can reach the sink any more (bounded: 20 s).
    await waitForNoEmailJobs(t, c.id);
    const emails = await emailsOf(t, c.id);
    const sent = emails.filter((e) => e.status === 'SENT');
    const cancelled = emails.filter((e) => e.status === 'CANCELLED');
    expect(cancelled.length).toBeGreaterThan(0);
    expect(sent.length + cancelled.length).toBe(600);
    const delivered = contacts.filter((x) => deliveredTo(x.email) > 0).length;
    expect(delivered).toBe(sent.length);
    expect(contacts.every((x) => deliveredTo(x.email) <= 1)).toBe(true);
    const row = await t.db.db.selectFrom('campaigns').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('CANCELLED');
    expect(row.cancelled_at).toBeInstanceOf(Date);
  });
});

describe('exactly once', () => {
  it('fan-out run twice (and concurrently) materialises and delivers each recipient once', async () => {
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, 30, { tag: `d${Date.now()}-` });
    const c = await createCampaign(t, s);
    await t.withWorkerStopped(async () => {
      expect((await send(s, c.id)).statusCode).toBe(200);
      const outcomes = await Promise.all([runCampaignSend(t.db.db, c.id), runCampaignSend(t.db.db, c.id)]);
      expect(outcomes.map((o) => o.kind).sort()).toEqual(['already', 'materialised']);
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'already' });
      // A contact added after the fan-out is not in this campaign (materialised once).
      await seedContacts(t.db, s.project.id, 1, { tag: `late${Date.now()}-` });
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'already' });
    });
    const row = await waitForCampaign(t, c.id, ['SENT']);
    expect(row.total_recipients).toBe(30);
    expect(await emailsOf(t, c.id)).toHaveLength(30);
    for (const x of contacts) expect(deliveredTo(x.email)).toBe(1);
  });

  it('a contact unsubscribed after the fan-out gets no MARKETING email (CANCELLED at delivery)', async () => {
    const s = await sender(t);
    const [a, b] = await seedContacts(t.db, s.project.id, 2, { tag: `u${Date.now()}-` });
    const c = await createCampaign(t, s);
    await t.withWorkerStopped(async () => {
      expect((await send(s, c.id)).statusCode).toBe(200);
      await runCampaignSend(t.db.db, c.id);
      await t.db.db.updateTable('contacts').set({ subscribed: false }).where('id', '=', a?.id ?? '').execute();
    });
    await waitForCampaign(t, c.id, ['SENT']);
    const emails = await emailsOf(t, c.id);
    expect(emails.find((e) => e.contact_id === a?.id)).toMatchObject({ status: 'CANCELLED', error: CAMPAIGN_UNSUBSCRIBED });
    expect(emails.find((e) => e.contact_id === b?.id)).toMatchObject({ status: 'SENT' });
    expect(deliveredTo(a?.email ?? '')).toBe(0);
  });

  it('never stuck in SENDING: after a crash that lost the completion check, the sweep completes it', async () => {
    const s = await sender(t);
    await seedContacts(t.db, s.project.id, 3, { tag: `k${Date.now()}-` });
    const c = await createCampaign(t, s);
    await t.withWorkerStopped(async () => {
      expect((await send(s, c.id)).statusCode).toBe(200);
      await runCampaignSend(t.db.db, c.id);
      // The crash: every email finished, but the jobs (deliveries, completion check) are gone.
      await t.db.db.updateTable('emails').set({ status: 'SENT', sent_at: new Date() }).where('campaign_id', '=', c.id).execute();
      await sql`DELETE FROM graphile_worker._private_jobs WHERE key LIKE ${`%${c.id}%`}`.execute(t.db.db);
      expect((await t.db.db.selectFrom('campaigns').select('status').where('id', '=', c.id).executeTakeFirstOrThrow()).status).toBe('SENDING');
      const swept = await sweepCampaigns(t.db.db);
      expect(swept.completed).toBeGreaterThanOrEqual(1);
    });
    const row = await waitForCampaign(t, c.id, ['SENT'], 1000);
    expect(row.sent_at).toBeInstanceOf(Date);
  });
});

describe('audiences and test sends', () => {
  it('SEGMENT (static) sends to the members only; FILTERED to the contacts matching the condition', async () => {
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, 6, { tag: `g${Date.now()}-` });
    const [seg] = await t.db.db.insertInto('segments').values({ project_id: s.project.id, name: 'picked', type: 'STATIC' }).returning('id').execute();
    const members = contacts.slice(0, 2);
    await t.db.db.insertInto('segment_members').values(members.map((m) => ({ segment_id: seg?.id ?? '', project_id: s.project.id, contact_id: m.id }))).execute();
    const bySegment = await createCampaign(t, s, { audienceType: 'SEGMENT', segmentId: seg?.id });
    const filtered = await createCampaign(t, s, {
      audienceType: 'FILTERED',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    });
    expect((await send(s, bySegment.id)).statusCode).toBe(200);
    expect((await send(s, filtered.id)).statusCode).toBe(200);
    await waitForCampaign(t, bySegment.id, ['SENT']);
    await waitForCampaign(t, filtered.id, ['SENT']);
    expect(new Set((await emailsOf(t, bySegment.id)).map((e) => e.contact_id))).toEqual(new Set(members.map((m) => m.id)));
    const pro = contacts.filter((x) => Number(x.email.match(/-(\d+)@/)?.[1]) % 2 === 0);
    expect(new Set((await emailsOf(t, filtered.id)).map((e) => e.contact_id))).toEqual(new Set(pro.map((m) => m.id)));
  });

  it('test send renders with the contact of that address and delivers one TEST email, outside the campaign', async () => {
    const s = await sender(t);
    const [contact] = await seedContacts(t.db, s.project.id, 1, { tag: `q${Date.now()}-` });
    const c = await createCampaign(t, s, { subject: 'Hi {{firstName}}' });
    const res = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/test`, { email: contact?.email.toUpperCase() });
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json<{ data: { emailId: string } }>();
    await sink.waitForMessages(1);
    for (let i = 0; i < 200 && deliveredTo(contact?.email ?? '') === 0; i++) await new Promise((r) => setTimeout(r, 25));
    const parsed = await simpleParser(sink.messagesTo(contact?.email ?? '')[0]?.raw ?? Buffer.alloc(0));
    expect(parsed.subject).toBe(`Hi ${String((await t.db.db.selectFrom('contacts').select('data').where('id', '=', contact?.id ?? '').executeTakeFirstOrThrow()).data.firstName)}`);
    const email = await t.db.db.selectFrom('emails').selectAll().where('id', '=', data.emailId).executeTakeFirstOrThrow();
    expect(email).toMatchObject({ source: 'TEST', campaign_id: null, contact_id: contact?.id });
    expect((await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json()).toMatchObject({ status: 'DRAFT' });
  });
});
