import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Email } from '../../../src/modules/emails/emails.schema.js';
import type { Campaign, CampaignStats } from '../../../src/modules/campaigns/campaigns.schema.js';
import type { Suppression, SuppressionList } from '../../../src/modules/suppressions/suppressions.schema.js';
import { bearer, newProject, type TestProject, uniqueEmail } from '../../helpers/accounts.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { Tasks } from '../../../src/jobs/index.js';
import { runCampaignSend } from '../../../src/modules/campaigns/fanout.js';
import { createCampaign, emailsOf, seedContacts, waitForCampaign } from '../campaigns/helpers.js';
import { addVerifiedDomain, createSendTestApp, jobsOf, send, type SendAnswer, type SendTestApp, waitForStatus } from '../emails/helpers.js';
import { createSnsSigner, sesEvent } from '../webhooks/sns-signer.js';

/**
 * Suppression on every send path, end to end: SES notifications through the real endpoint,
 * /v1/send, campaigns and their test sends, and delivery, with a real worker and SMTP sink.
 * SNS_VERIFY=false: the messages are signed as SNS signs them, but this app cannot fetch the
 * signing certificate (signature checks are tested in webhooks/notifications.test.ts).
 */
let sink: SmtpSink;
let t: SendTestApp;
const signer = createSnsSigner();
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, SNS_VERIFY: 'false' } });
  await t.runWorker();
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

const NOTE = /^Not sent: the address is suppressed \((hard bounce|complaint|added manually) on \d{4}-\d\d-\d\d\); remove it from the suppression list/;

async function sender(): Promise<{ project: TestProject; from: string }> {
  const { project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id);
  return { project, from: `hello@${domain}` };
}

const api = (project: TestProject, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(project.secret), ...(payload !== undefined && { payload }) });

/** POST /v1/send of a transactional email to `to`; the email ids in answer order. */
async function sendTo(s: { project: TestProject; from: string }, to: string | string[]): Promise<string[]> {
  const res = await send(t.app, s.project, { to, from: s.from, subject: 'Your receipt', body: '<p>Thanks</p>' });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<SendAnswer>().data.emails.map((e) => e.email);
}

const notify = (kind: 'Bounce' | 'Complaint', messageId: string) =>
  t.app.inject({
    method: 'POST',
    url: '/webhooks/notifications',
    headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' },
    payload: JSON.stringify(signer.notification(sesEvent(kind, { messageId, headerMessageId: messageId }))),
  });

async function sentAndNotified(s: { project: TestProject; from: string }, kind: 'Bounce' | 'Complaint', to: string) {
  const [id = ''] = await sendTo(s, to);
  const [row] = await waitForStatus(t.db, [id], ['SENT']);
  const res = await notify(kind, row?.message_id ?? '');
  expect(res.statusCode, res.body).toBe(200);
  return id;
}

const getEmail = async (project: TestProject, id: string) => {
  const res = await api(project, 'GET', `/emails/${id}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Email>();
};

describe('the relay\'s notifications suppress the address', () => {
  it('a hard bounce suppresses it: a later transactional send is answered 200 with an email CANCELLED with the reason, never delivered', async () => {
    const s = await sender();
    const bounced = uniqueEmail('bounced');
    const first = await sentAndNotified(s, 'Bounce', bounced);
    expect(sink.messagesTo(bounced)).toHaveLength(1);

    const list = (await api(s.project, 'GET', '/suppressions')).json<SuppressionList>();
    expect(list).toMatchObject({ total: 1, hasMore: false, cursor: null });
    expect(list.data[0]).toMatchObject({ email: bounced, reason: 'HARD_BOUNCE', sourceEmailId: first, detail: 'Permanent: General: smtp; 550 5.1.1 user unknown' });

    // Sent in one request with a deliverable address (whose delivery proves the worker ran), the
    // worker stopped meanwhile so the rows show what the send itself wrote: CANCELLED, no job.
    const other = uniqueEmail('other');
    let again = '';
    let control = '';
    await t.withWorkerStopped(async () => {
      [again = '', control = ''] = await sendTo(s, [bounced.toUpperCase(), other]);
      const email = await getEmail(s.project, again);
      expect(email).toMatchObject({ status: 'CANCELLED', to: bounced, type: 'TRANSACTIONAL', attempts: 0 });
      expect(email.error).toMatch(NOTE);
      expect(email.error).toContain('hard bounce');
      expect(await jobsOf(t.db, [again])).toEqual([]);
      expect(await jobsOf(t.db, [control])).toHaveLength(1);
    });
    await waitForStatus(t.db, [control], ['SENT']);
    expect((await getEmail(s.project, again)).status).toBe('CANCELLED');
    expect(sink.messagesTo(bounced)).toHaveLength(1);
    expect(sink.messagesTo(other)).toHaveLength(1);
  });

  it('a complaint suppresses it too; a repeated notification does not add it back once removed', async () => {
    const s = await sender();
    const to = uniqueEmail('complained');
    const first = await sentAndNotified(s, 'Complaint', to);
    const list = (await api(s.project, 'GET', '/suppressions?reason=COMPLAINT')).json<SuppressionList>();
    expect(list.data).toEqual([expect.objectContaining({ email: to, reason: 'COMPLAINT', sourceEmailId: first, detail: 'abuse' })]);
    const [cancelled = ''] = await sendTo(s, to);
    expect((await getEmail(s.project, cancelled)).error).toMatch(/^Not sent: the address is suppressed \(complaint on /);

    expect((await api(s.project, 'DELETE', `/suppressions/${encodeURIComponent(to)}`)).statusCode).toBe(204);
    const row = await t.db.db.selectFrom('emails').select('message_id').where('id', '=', first).executeTakeFirstOrThrow();
    expect((await notify('Complaint', row.message_id)).statusCode).toBe(200);
    expect((await api(s.project, 'GET', '/suppressions')).json<SuppressionList>().total).toBe(0);
  });

  it('a soft bounce suppresses nothing', async () => {
    const s = await sender();
    const to = uniqueEmail('soft');
    const [id = ''] = await sendTo(s, to);
    const [row] = await waitForStatus(t.db, [id], ['SENT']);
    const event = sesEvent('Bounce', { messageId: row?.message_id ?? '' }, { bounceType: 'Transient' });
    const res = await t.app.inject({ method: 'POST', url: '/webhooks/notifications', headers: { 'content-type': 'text/plain' }, payload: JSON.stringify(signer.notification(event)) });
    expect(res.statusCode, res.body).toBe(200);
    expect((await api(s.project, 'GET', '/suppressions')).json<SuppressionList>().total).toBe(0);
  });
});

describe('manual entries on /v1/send and at delivery', () => {
  it('a manual entry cancels sends to the address; removing it makes the next send deliver', async () => {
    const s = await sender();
    const to = uniqueEmail('manual');
    const added = await api(s.project, 'POST', '/suppressions', { email: ` ${to.toUpperCase()} `, detail: 'asked us by phone' });
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json<Suppression>()).toMatchObject({ email: to, reason: 'MANUAL', detail: 'asked us by phone', sourceEmailId: null });

    const [cancelled = ''] = await sendTo(s, to);
    expect(await getEmail(s.project, cancelled)).toMatchObject({ status: 'CANCELLED', error: expect.stringMatching(/\(added manually on /) });

    expect((await api(s.project, 'DELETE', `/suppressions/${encodeURIComponent(to)}`)).statusCode).toBe(204);
    const [delivered = ''] = await sendTo(s, to);
    await waitForStatus(t.db, [delivered], ['SENT']);
    expect(sink.messagesTo(to)).toHaveLength(1);
    expect((await getEmail(s.project, cancelled)).status).toBe('CANCELLED');
  });

  it('an address suppressed after its email was queued is CANCELLED at delivery, with the reason', async () => {
    const s = await sender();
    const to = uniqueEmail('late');
    let queued = '';
    await t.withWorkerStopped(async () => {
      [queued = ''] = await sendTo(s, to);
      expect(await jobsOf(t.db, [queued])).toHaveLength(1);
      expect((await api(s.project, 'POST', '/suppressions', { email: to })).statusCode).toBe(201);
    });
    const [row] = await waitForStatus(t.db, [queued], ['CANCELLED', 'SENT', 'FAILED']);
    expect(row).toMatchObject({ status: 'CANCELLED', attempts: 0 });
    expect(row?.error).toMatch(NOTE);
    expect(sink.attempts(to)).toBe(0);
  });

  it('another project\'s entry does not apply', async () => {
    const a = await sender();
    const b = await sender();
    const to = uniqueEmail('shared');
    expect((await api(b.project, 'POST', '/suppressions', { email: to })).statusCode).toBe(201);
    const [id = ''] = await sendTo(a, to);
    await waitForStatus(t.db, [id], ['SENT']);
    expect(sink.messagesTo(to)).toHaveLength(1);
  });
});

describe('campaigns', () => {
  it('a suppressed recipient\'s campaign email is CANCELLED with the reason and counted as cancelled; the others are delivered', async () => {
    const s = await sender();
    const contacts = await seedContacts(t.db, s.project.id, 3, { tag: `sup${Date.now()}-` });
    const [suppressed, ...others] = contacts;
    expect((await api(s.project, 'POST', '/suppressions', { email: suppressed?.email })).statusCode).toBe(201);
    for (const type of ['MARKETING', 'TRANSACTIONAL'] as const) {
      const c = await createCampaign(t, { ...s, domain: '' }, { type });
      // The fan-out run by hand with the worker stopped: its rows and jobs as it wrote them.
      await t.withWorkerStopped(async () => {
        expect((await api(s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(200);
        expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'materialised', recipients: 3 });
        const emails = await emailsOf(t, c.id);
        const mine = emails.find((e) => e.contact_id === suppressed?.id);
        expect(mine).toMatchObject({ status: 'CANCELLED', attempts: 0 });
        expect(mine?.error).toMatch(NOTE);
        // One delivery batch, over the two others (a CANCELLED row inside its range of ids is skipped).
        const { rows: batches } = await sql<{ first: string; last: string }>`
          SELECT payload ->> 'first' AS first, payload ->> 'last' AS last FROM graphile_worker._private_jobs
          WHERE key LIKE ${`${Tasks.campaignDeliver}:%:${c.id}`}`.execute(t.db.db);
        const pending = emails.filter((e) => e.status === 'PENDING').map((e) => e.id).sort();
        expect(batches).toEqual([{ first: pending[0], last: pending[1] }]);
      });
      await waitForCampaign(t, c.id, ['SENT']);
      const emails = await emailsOf(t, c.id);
      expect(emails.filter((e) => e.status === 'SENT')).toHaveLength(2);
      const got = (await api(s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>();
      expect(got).toMatchObject({ totalRecipients: 3, sentCount: 2 });
      expect((await api(s.project, 'GET', `/campaigns/${c.id}/stats`)).json<CampaignStats>()).toMatchObject({ total: 3, sent: 2, cancelled: 1 });
    }
    expect(sink.attempts(suppressed?.email ?? '')).toBe(0);
    for (const o of others) expect(sink.messagesTo(o.email)).toHaveLength(2);
  });

  it('a campaign whose every recipient is suppressed ends SENT at once, every email CANCELLED', async () => {
    const s = await sender();
    const [only] = await seedContacts(t.db, s.project.id, 1, { tag: `all${Date.now()}-` });
    expect((await api(s.project, 'POST', '/suppressions', { email: only?.email })).statusCode).toBe(201);
    const c = await createCampaign(t, { ...s, domain: '' });
    await t.withWorkerStopped(async () => {
      expect((await api(s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(200);
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'materialised', recipients: 1 });
      const row = await t.db.db.selectFrom('campaigns').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'SENT', total_recipients: 1 });
    });
    expect((await emailsOf(t, c.id)).map((e) => e.status)).toEqual(['CANCELLED']);
  });

  it('a test send to a suppressed address is CANCELLED with the reason, and says so', async () => {
    const s = await sender();
    const to = uniqueEmail('tester');
    expect((await api(s.project, 'POST', '/suppressions', { email: to })).statusCode).toBe(201);
    const c = await createCampaign(t, { ...s, domain: '' });
    const res = await api(s.project, 'POST', `/campaigns/${c.id}/test`, { email: to });
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<{ data: { emailId: string }; message: string }>();
    expect(answer.message).toMatch(NOTE);
    expect(await getEmail(s.project, answer.data.emailId)).toMatchObject({ status: 'CANCELLED', source: 'TEST', error: answer.message });
    expect(await jobsOf(t.db, [answer.data.emailId])).toEqual([]);
  });
});
