import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tasks } from '../../../src/jobs/index.js';
import { enqueueSendBatch } from '../../../src/modules/emails/index.js';
import { until } from '../../helpers/poll.js';
import type { SmtpSink } from '../../helpers/smtp-sink.js';
import { createSinkTestApp, jobsOf, newSender, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

/**
 * POST /v1/send's emails go out in batches (docs/sending.md "Delivery batches"): one send-batch
 * job for the emails one acceptance batch wrote. Each email's outcome stays its own.
 */

let sink: SmtpSink;
let t: SendTestApp;
let close: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ sink, t, close } = await createSinkTestApp());
});
afterAll(() => close?.());

describe('one email of a /v1/send batch fails', () => {
  it('a permanent refusal fails that email only; a transient one retries that email alone, in a job of its own, without holding its batch-mates', async () => {
    const s = await newSender(t);
    const tag = randomUUID().slice(0, 8);
    const [refused, flaky, ...mates] = Array.from({ length: 6 }, (_, i) => `b${i}-${tag}@example.com`);
    if (!refused || !flaky) throw new Error('no recipients');
    sink.reject(refused, { code: 550, message: 'No such user' });
    sink.reject(flaky, { code: 451, message: 'Try again later', times: 1 });

    const res = await send(t.app, s.project, { to: [refused, flaky, ...mates], from: s.from, subject: 'Batch', body: '<p>Hello</p>' });
    expect(res.statusCode).toBe(200);
    const ids = new Map(res.json<SendAnswer>().data.emails.map((e) => [e.contact.email, e.email]));
    const id = (address: string) => ids.get(address) ?? '';

    // While the retry waits for its backoff, the batch-mates are all SENT already.
    await until('the transient failure rescheduled alone', async () => (await jobsOf(t.db, [id(flaky)])).some((j) => j.task === Tasks.sendEmail));
    const retry = (await jobsOf(t.db, [id(flaky)])).find((j) => j.task === Tasks.sendEmail);
    expect(retry).toMatchObject({ priority: 0, attempts: 0, max_attempts: 9, payload: { emailId: id(flaky), priorAttempts: 1 } });
    await waitForStatus(t.db, mates.map(id), ['SENT']);
    expect((await t.db.db.selectFrom('emails').select('status').where('id', '=', id(flaky)).executeTakeFirst())?.status).toBe('PENDING');

    const done = new Map((await waitForStatus(t.db, [...ids.values()], ['SENT', 'FAILED'], 30_000)).map((e) => [e.to_email, e]));
    expect(done.get(refused)).toMatchObject({ status: 'FAILED', attempts: 1, error: expect.stringContaining('550') });
    expect(done.get(flaky)).toMatchObject({ status: 'SENT', attempts: 2 });
    for (const m of mates) expect(done.get(m)).toMatchObject({ status: 'SENT', attempts: 1 });
    expect(sink.attempts(flaky)).toBe(2);
    for (const m of [flaky, ...mates]) expect(sink.messagesTo(m), m).toHaveLength(1);
    await until('no job left for the batch', async () => (await jobsOf(t.db, [...ids.values()])).length === 0);
  });

  it('a batch run again (a worker that died mid-batch) delivers only what is still to deliver: nothing twice', async () => {
    const s = await newSender(t);
    const tag = randomUUID().slice(0, 8);
    const to = Array.from({ length: 4 }, (_, i) => `r${i}-${tag}@example.com`);
    const res = await send(t.app, s.project, { to, from: s.from, subject: 'Again', body: '<p>Hello</p>' });
    expect(res.statusCode).toBe(200);
    const emailIds = res.json<SendAnswer>().data.emails.map((e) => e.email);
    await waitForStatus(t.db, emailIds, ['SENT']);
    // The same batch queued once more, as graphile-worker would run it again after a crash.
    await t.db.db.transaction().execute((trx) => enqueueSendBatch(trx, s.project.id, emailIds));
    await until('the re-run batch completed', async () => (await jobsOf(t.db, emailIds)).length === 0);
    for (const address of to) expect(sink.messagesTo(address), address).toHaveLength(1);
    const rows = await waitForStatus(t.db, emailIds, ['SENT']);
    expect(rows.every((r) => r.attempts === 1)).toBe(true);
  });
});
