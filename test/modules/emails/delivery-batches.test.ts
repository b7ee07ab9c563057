import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeliveryBatches } from '../../../src/modules/emails/delivery/batches.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { addVerifiedDomain, createSendTestApp, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

/**
 * Deliveries running at once share their statements (src/modules/emails/delivery/batches.ts):
 * what one email does must never fail, delay or retry its batch-mates.
 */
let sink: SmtpSink;
let dns: TestDnsServer;
let t: SendTestApp;
beforeAll(async () => {
  [sink, dns] = await Promise.all([startSmtpSink(), startDnsServer()]);
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([sink?.close(), dns?.close()]);
});

async function sender(): Promise<{ project: TestProject; from: string }> {
  const { project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id, { dns });
  return { project, from: `hello@${domain}` };
}

const idsOf = (res: { json<T>(): T }) => res.json<SendAnswer>().data.emails.map((e) => e.email);

// No worker runs until the last test: the first ones drive the statements by hand.
describe('batched delivery statements', () => {
  it('records SENT for the rest of a batch when one email’s statement fails', async () => {
    const { project, from } = await sender();
    const [a = '', b = '', c = ''] = idsOf(await send(t.app, project, { to: ['s1@example.com', 's2@example.com', 's3@example.com'], from, subject: 's', body: 'b' }));
    const batches = createDeliveryBatches(t.db.db);
    // Submitted in one turn of the event loop: one statement, which PostgreSQL refuses for b's subject.
    const outcomes = await Promise.allSettled([
      batches.sent({ emailId: a, messageId: '<a@x>' }),
      batches.sent({ emailId: b, messageId: '<b@x>', subject: 'nul \u0000 byte' }),
      batches.sent({ emailId: c, messageId: '<c@x>' }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const rows = await t.db.db.selectFrom('emails').select(['id', 'status']).where('id', 'in', [a, b, c]).orderBy('id').execute();
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({ [a]: 'SENT', [b]: expect.not.stringMatching('SENT'), [c]: 'SENT' });
  });

  it('gives an attempt to one of two deliveries of the same email in a batch, never to both', async () => {
    const { project, from } = await sender();
    const [id = ''] = idsOf(await send(t.app, project, { to: 'twice@example.com', from, subject: 's', body: 'b' }));
    const batches = createDeliveryBatches(t.db.db);
    const attempts = await Promise.all([batches.sending(id), batches.sending(id)]);
    expect(attempts.filter((a) => a !== undefined)).toEqual([1]);
    expect(await Promise.all([batches.endOfData(id, 1), batches.endOfData(id, 1)])).toEqual([true, false]);
  });
  it("gives the end-of-data mark to the email's current attempt, not to a run still holding the one it replaced", async () => {
    const { project, from } = await sender();
    const [id = ''] = idsOf(await send(t.app, project, { to: 'replaced@example.com', from, subject: 's', body: 'b' }));
    const batches = createDeliveryBatches(t.db.db);
    expect(await batches.sending(id)).toBe(1);
    // Another run read it SENDING without an end of data, restarted it and took attempt 2
    // (delivery.ts: an interrupted attempt is sent again); the first run still holds attempt 1.
    await t.db.db.updateTable('emails').set({ attempts: 2 }).where('id', '=', id).execute();
    // Both reach their final dot in one statement, the stale attempt first.
    expect(await Promise.all([batches.endOfData(id, 1), batches.endOfData(id, 2)])).toEqual([false, true]);
  });

  it('retries only the email whose relay answered 4xx; its batch-mates are sent once, at their first attempt', async () => {
    const { project, from } = await sender();
    const to = Array.from({ length: 24 }, (_, i) => `batch-${i}@example.com`);
    sink.reject('batch-7@example.com', { code: 451, message: '4.7.1 Try again later', times: 1 });
    const ids = idsOf(await send(t.app, project, { to, from, subject: 's', body: '<p>b</p>' }));
    await t.startWorker({ concurrency: 16 });
    const rows = await waitForStatus(t.db, ids, ['SENT'], 30_000);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const retried = ids[7] ?? '';
    expect(byId.get(retried)).toMatchObject({ attempts: 2, error: null });
    expect(ids.filter((id) => id !== retried).map((id) => byId.get(id)?.attempts)).toEqual(Array(23).fill(1));
    for (const address of to) expect(sink.messagesTo(address)).toHaveLength(1);
    expect(sink.attempts('batch-7@example.com')).toBe(2);
    // The worker ran them on its pool of generic-plan connections (src/worker.ts deliveryPool).
    const { rows: pool } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'mailplatform-delivery'`.execute(t.db.db);
    expect(pool[0]?.n).toBeGreaterThan(0);
  });
});
