import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tasks } from '../../../src/jobs/index.js';
import { completeFinishedCampaigns, runCampaignSend, sweepCampaigns } from '../../../src/modules/campaigns/fanout.js';
import { CAMPAIGN_BATCH_SIZE, CAMPAIGN_LANES, insertCampaignEmailsPart, MATERIALISE_PARTS } from '../../../src/modules/emails/index.js';
import { until } from '../../helpers/poll.js';
import type { SmtpSink } from '../../helpers/smtp-sink.js';
import { createSinkTestApp, jobsOf, type SendTestApp } from '../emails/helpers.js';
import { api, createCampaign, emailsOf, seedContacts, sender, waitForCampaign, waitForNoEmailJobs } from './helpers.js';

/**
 * Campaign mail goes out in batches (docs/campaigns.md "Delivery batches"): one campaign-deliver
 * job per CAMPAIGN_BATCH_SIZE emails, a range of their ids, in CAMPAIGN_LANES named queues. Each
 * email's outcome stays its own.
 */

let sink: SmtpSink;
let t: SendTestApp;
let close: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ sink, t, close } = await createSinkTestApp());
});
afterAll(() => close?.());

interface BatchJob {
  key: string;
  queue: string | null;
  priority: number;
  payload: { campaignId: string; first: string; last: string };
}

const batchJobsOf = async (campaignId: string) =>
  (
    await sql<BatchJob>`
      SELECT j.key, q.queue_name AS queue, j.priority, j.payload
      FROM graphile_worker._private_jobs j
      JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      LEFT JOIN graphile_worker._private_job_queues q ON q.id = j.job_queue_id
      WHERE t.identifier = ${Tasks.campaignDeliver} AND j.payload ->> 'campaignId' = ${campaignId}
      ORDER BY j.payload ->> 'first'`.execute(t.db.db)
  ).rows;

describe('materialisation queues delivery batches, not one job per email', () => {
  it('splits the queued emails into id ranges of CAMPAIGN_BATCH_SIZE over the lanes; a suppressed address is in none', async () => {
    const n = 2 * CAMPAIGN_BATCH_SIZE + 34;
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, n, { tag: `b${Date.now()}-` });
    const suppressed = contacts[7]?.email ?? '';
    await sql`INSERT INTO suppressions (project_id, email, reason) VALUES (${s.project.id}, ${suppressed}, 'MANUAL')`.execute(t.db.db);
    const c = await createCampaign(t, s);
    let jobs: BatchJob[] = [];
    let emails: Awaited<ReturnType<typeof emailsOf>> = [];
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`)).statusCode).toBe(200);
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'materialised', recipients: n });
      jobs = await batchJobsOf(c.id);
      emails = await emailsOf(t, c.id);
      // No send-email job per email.
      expect(await jobsOf(t.db, emails.map((e) => e.id))).toEqual([]);
    });
    expect(jobs).toHaveLength(3);
    const queued = emails.filter((e) => e.status === 'PENDING').map((e) => e.id).sort();
    expect(queued).toHaveLength(n - 1);
    expect(emails.find((e) => e.to_email === suppressed)?.status).toBe('CANCELLED');
    // Consecutive, disjoint ranges covering every queued email once, in order.
    const inRange = jobs.map((j) => queued.filter((id) => id >= j.payload.first && id <= j.payload.last));
    expect(inRange.map((ids) => ids.length)).toEqual([CAMPAIGN_BATCH_SIZE, CAMPAIGN_BATCH_SIZE, n - 1 - 2 * CAMPAIGN_BATCH_SIZE]);
    expect(inRange.flat()).toEqual(queued);
    expect(jobs.map((j) => [j.payload.first, j.payload.last])).toEqual(inRange.map((ids) => [ids[0], ids.at(-1)]));
    expect(new Set(jobs.map((j) => j.queue))).toEqual(new Set(Array.from({ length: CAMPAIGN_LANES }, (_, i) => `${Tasks.campaignDeliver}:${c.id}:${i}`)));
    expect(jobs.every((j) => j.priority === 30 && j.key.startsWith(`${Tasks.campaignDeliver}:`) && j.key.endsWith(`:${c.id}`))).toBe(true);

    const row = await waitForCampaign(t, c.id, ['SENT'], 30_000);
    expect(row.total_recipients).toBe(n);
    for (const x of contacts) expect(sink.messagesTo(x.email).length, x.email).toBe(x.email === suppressed ? 0 : 1);
  });
});

describe('a fan-out cut after some of its parts committed', () => {
  it('is not complete (no jobs, never SENT by the sweep); the next run inserts the missing rows, once each, and queues every batch', async () => {
    const n = 40;
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, n, { tag: `r${Date.now()}-` });
    const c = await createCampaign(t, s);
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`)).statusCode).toBe(200);
      await t.db.db.updateTable('campaigns').set({ status: 'SENDING' }).where('id', '=', c.id).execute();
      // The first part committed; the run died before the rest and its own commit.
      await t.db.db.transaction().execute((trx) =>
        insertCampaignEmailsPart(trx, { projectId: s.project.id, campaignId: c.id, type: 'MARKETING', fromEmail: s.from, fromName: null, replyTo: null, subject: c.subject, body: c.body, audience: sql`true` }, 0, MATERIALISE_PARTS),
      );
      const partial = await emailsOf(t, c.id);
      expect(partial.length).toBeGreaterThan(0);
      expect(partial.length).toBeLessThan(n);
      expect(await batchJobsOf(c.id)).toEqual([]);
      // Even with all of those rows finished, the campaign is not complete: it is not materialised.
      await sql`UPDATE emails SET status = 'SENT', sent_at = now() WHERE campaign_id = ${c.id}`.execute(t.db.db);
      expect(await completeFinishedCampaigns(t.db.db, [c.id])).toEqual([]);
      expect((await sweepCampaigns(t.db.db)).restarted).toBeGreaterThanOrEqual(1);

      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'materialised', recipients: n });
      const rows = await emailsOf(t, c.id);
      expect(rows.map((e) => e.contact_id).sort()).toEqual(contacts.map((x) => x.id).sort());
      const pending = rows.filter((e) => e.status === 'PENDING').map((e) => e.id).sort();
      expect(pending).toHaveLength(n - partial.length);
      const jobs = await batchJobsOf(c.id);
      expect(jobs.flatMap((j) => pending.filter((id) => id >= j.payload.first && id <= j.payload.last))).toEqual(pending);
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'already' });
    });
    await waitForCampaign(t, c.id, ['SENT'], 30_000);
  });
});

describe('one email of a batch fails', () => {
  it('a permanent refusal fails that email only; a transient one retries that email alone, in a job of its own, without holding its batch-mates', async () => {
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, 6, { tag: `f${Date.now()}-` });
    const [refused, flaky, ...mates] = contacts;
    if (!refused || !flaky) throw new Error('no contacts');
    sink.reject(refused.email, { code: 550, message: 'No such user' });
    sink.reject(flaky.email, { code: 451, message: 'Try again later', times: 1 });
    const c = await createCampaign(t, s);
    expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`)).statusCode).toBe(200);

    const flakyEmail = async () => (await emailsOf(t, c.id)).find((e) => e.contact_id === flaky.id);
    // While the retry waits for its backoff, the batch-mates are all SENT already.
    await until('the transient failure rescheduled alone', async () => {
      const id = (await flakyEmail())?.id;
      return id !== undefined && (await jobsOf(t.db, [id])).length === 1;
    });
    const [retry] = await jobsOf(t.db, [(await flakyEmail())?.id ?? '']);
    expect(retry).toMatchObject({ task: Tasks.sendEmail, priority: 30, attempts: 0, max_attempts: 9, payload: { priorAttempts: 1 } });
    const byContact = async () => new Map((await emailsOf(t, c.id)).map((e) => [e.contact_id, e]));
    await until('the batch-mates SENT', async () => {
      const now = await byContact();
      return mates.every((m) => now.get(m.id)?.status === 'SENT');
    });
    expect((await flakyEmail())?.status).toBe('PENDING');

    await waitForCampaign(t, c.id, ['SENT'], 30_000);
    await waitForNoEmailJobs(t, c.id);
    const done = await byContact();
    expect(done.get(refused.id)).toMatchObject({ status: 'FAILED', attempts: 1, error: expect.stringContaining('550') });
    expect(done.get(flaky.id)).toMatchObject({ status: 'SENT', attempts: 2 });
    for (const m of mates) expect(done.get(m.id)).toMatchObject({ status: 'SENT', attempts: 1 });
    expect(sink.attempts(flaky.email)).toBe(2);
    for (const x of [flaky, ...mates]) expect(sink.messagesTo(x.email)).toHaveLength(1);
    expect(sink.messagesTo(refused.email)).toHaveLength(0);
  });
});
