import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivery, NO_REPLY_NOTE, UNCONFIRMED_NOTE } from '../../../src/modules/emails/index.js';
import { markSent } from '../../../src/modules/emails/emails.repo.js';
import { createMailTransport } from '../../../src/mail/transports/index.js';
import { createSmtpTransport, SmtpError } from '../../../src/mail/transports/smtp.js';
import { dkimSecretBox } from '../../../src/modules/domains/dkim-keys.js';
import { newProject } from '../../helpers/accounts.js';
import { sleep } from '../../helpers/process.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { addVerifiedDomain, createSendTestApp, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

/**
 * The end-of-data stage (docs/sending.md "Exactly once"): the transport awaits
 * `beforeEndOfData` once the relay has the message but its final dot, and a rejection aborts
 * the transaction without the dot. Real SMTP on loopback (test/helpers/smtp-sink.ts).
 */

let sink: SmtpSink;
let t: SendTestApp;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

const envelope = (to: string) => ({ from: 'a@sender.example', to });
/** A message of `kb` KiB: larger than the streams' buffers, so the gate also holds back real data. */
const message = (to: string, marker: string, kb = 1) =>
  Buffer.from(`From: a@sender.example\r\nTo: ${to}\r\nSubject: ${marker}\r\nMessage-ID: <${marker}@x>\r\n\r\n${`${marker} line\r\n`.repeat(kb * 64)}`);

async function until(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('SMTP transport: beforeEndOfData', () => {
  // A small message fits the streams' buffers whole (read before DATA starts), a large one does not.
  it.each([1, 256])('is awaited only once DATA is under way, and the final dot waits for it (%i KiB)', async (kb) => {
    const smtp = createSmtpTransport(sink.url);
    try {
      const to = `gate${kb}@example.com`;
      sink.hold(to, 'rcpt');
      const calls: number[] = [];
      const sent = smtp.send(message(to, 'gate', kb), envelope(to), {
        beforeEndOfData: async () => {
          calls.push(sink.messagesTo(to).length);
          // The dot must not go out while this runs. Absence cannot be polled for: 200 ms is
          // far more than a loopback dot and reply take (under 1 ms), so a dot sent early would show.
          // Too short a pause (a stalled machine) can only let this pass wrongly, never fail.
          await sleep(200);
          calls.push(sink.messagesTo(to).length);
        },
      });
      await until('the RCPT stall', () => sink.held().rcpt.includes(to));
      expect(calls, 'called before the relay answered RCPT TO (no DATA yet)').toEqual([]);
      sink.release();
      const accepted = await sent;
      expect(accepted.response).toMatch(/^250/);
      expect(calls).toEqual([0, 0]);
      expect(sink.messagesTo(to)).toHaveLength(1);
      expect(sink.messagesTo(to)[0]?.raw.toString()).toContain('gate line\r\ngate line\r\n');
    } finally {
      await smtp.close();
    }
  });

  it('a rejection aborts the transaction without the dot: nothing delivered, the next message goes through alone', async () => {
    const smtp = createSmtpTransport(`${sink.url}?maxConnections=1`);
    try {
      const to = 'abort@example.com';
      const err = await smtp
        .send(message(to, 'aborted', 64), envelope(to), { beforeEndOfData: () => Promise.reject(new Error('database gone')) })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SmtpError);
      expect(err).toMatchObject({ endOfDataSent: false, permanent: false, responseCode: undefined });
      expect(String((err as Error).message)).toMatch(/database gone/);
      // The same (single) pool slot: the aborted connection was closed, not reused mid-DATA.
      await smtp.send(message(to, 'second'), envelope(to));
      await smtp.close();
      // Every connection closed at the sink: it has read all the client wrote, so the aborted
      // message can no longer arrive late.
      await until('no connection open at the sink', () => sink.openConnections() === 0);
      expect(sink.messagesTo(to)).toHaveLength(1);
      const raw = sink.messagesTo(to)[0]?.raw.toString() ?? '';
      expect(raw).toContain('Subject: second');
      expect(raw).not.toContain('aborted');
    } finally {
      await smtp.close();
    }
  });

  it('is not called when the relay refuses the recipient', async () => {
    const smtp = createSmtpTransport(sink.url);
    try {
      const to = 'refused@example.com';
      sink.reject(to, { code: 550, message: 'no such user', times: 1 });
      let called = false;
      const err = await smtp
        .send(message(to, 'refused'), envelope(to), { beforeEndOfData: async () => void (called = true) })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ permanent: true, endOfDataSent: false });
      // The envelope error path still drains the message stream into a PassThrough. Once the send
      // settled, the gate's `settled` check stops any call by construction; this pause only gives
      // a gate without its DATA check the chance to be called by that in-memory drain (a few
      // nextTick/setImmediate steps, well under 1 ms). No state to poll for: a stalled machine
      // can only make this pass wrongly, never fail.
      await sleep(50);
      expect(called).toBe(false);
    } finally {
      await smtp.close();
    }
  });
});

describe('delivery: the stage on the email row', () => {
  const deliveryWith = (smtpUrl: string) => {
    const mail = createMailTransport(smtpUrl);
    return { mail, delivery: createDelivery({ db: t.db.db, tokens: t.deps.tokens, publicUrl: t.config.publicUrl, mail, dkimBox: dkimSecretBox(t.config.secret) }) };
  };
  async function pendingEmail(to: string): Promise<string> {
    const { project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    const res = await send(t.app, project, { to, from: `hi@${domain}`, subject: 's', body: '<p>b</p>' });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<SendAnswer>().data.emails[0]?.email ?? '';
  }

  it('commits end_of_data_at before the dot; a reply lost after the dot is SENT unconfirmed, not retried', async () => {
    // No worker runs in this file: each email is delivered by hand, once.
    const { mail, delivery } = deliveryWith(`${sink.url}?socketTimeout=400`);
    try {
      const to = 'lost-reply@example.com';
      const id = await pendingEmail(to);
      sink.hold(to, 'reply');
      const outcome = delivery.deliver({ emailId: id, attempt: 1, maxAttempts: 10 });
      await until('the reply stall', () => sink.held().reply.includes(to));
      const [stage] = await waitForStatus(t.db, [id], ['SENDING']);
      expect(stage?.end_of_data_at).toBeInstanceOf(Date);
      expect(await outcome).toMatchObject({ kind: 'unconfirmed', note: expect.stringContaining(NO_REPLY_NOTE) });
      sink.release();
      const [row] = await waitForStatus(t.db, [id], ['SENT']);
      expect(row).toMatchObject({ unconfirmed: true, attempts: 1, error: expect.stringContaining(NO_REPLY_NOTE) });
      expect(sink.messagesTo(to)).toHaveLength(1);
    } finally {
      await mail.close();
    }
  });

  it('gives up on an email an error left SENDING by its stage: FAILED before the end of data, unconfirmed after it', async () => {
    const { mail, delivery } = deliveryWith(sink.url);
    try {
      const [before, after] = [await pendingEmail('giveup-before@example.com'), await pendingEmail('giveup-after@example.com')];
      await t.db.db.updateTable('emails').set({ status: 'SENDING', attempts: 10 }).where('id', 'in', [before, after]).execute();
      await t.db.db.updateTable('emails').set({ end_of_data_at: new Date() }).where('id', '=', after).execute();
      for (const id of [before, after]) await delivery.giveUp(id, 10, new Error('connection terminated'));
      const [failed] = await waitForStatus(t.db, [before], ['FAILED']);
      expect(failed).toMatchObject({ unconfirmed: false, error: 'Gave up after 10 attempts: connection terminated' });
      const [maybe] = await waitForStatus(t.db, [after], ['SENT']);
      expect(maybe).toMatchObject({ unconfirmed: true, error: UNCONFIRMED_NOTE });
    } finally {
      await mail.close();
    }
  });

  it('an email past its end of data found by two runs (a re-run batch and a job of its own) stays unconfirmed: the second mark changes nothing', async () => {
    const { mail, delivery } = deliveryWith(sink.url);
    try {
      const id = await pendingEmail('twice-unconfirmed@example.com');
      await t.db.db.updateTable('emails').set({ status: 'SENDING', attempts: 1, end_of_data_at: new Date() }).where('id', '=', id).execute();
      expect(await delivery.deliver({ emailId: id, attempt: 1, maxAttempts: 10 })).toMatchObject({ kind: 'unconfirmed' });
      const first = await t.db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      expect(first).toMatchObject({ status: 'SENT', unconfirmed: true, error: UNCONFIRMED_NOTE });
      // The other run read the row before that mark (SENDING past its end of data) and marks it the same way after it.
      expect(await markSent(t.db.db, [{ emailId: id, messageId: first.message_id, note: UNCONFIRMED_NOTE, unconfirmed: true }])).toEqual(new Set([id]));
      const second = await t.db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      expect(second).toMatchObject({ status: 'SENT', unconfirmed: true, error: UNCONFIRMED_NOTE, sent_at: first.sent_at });
    } finally {
      await mail.close();
    }
  });

  it("a stale unconfirmed mark after the relay's 250 was recorded changes nothing: the email stays confirmed", async () => {
    const id = await pendingEmail('stale-after-250@example.com');
    await t.db.db.updateTable('emails').set({ status: 'SENDING', attempts: 1, end_of_data_at: new Date(), error: 'an earlier attempt failed' }).where('id', '=', id).execute();
    const { message_id: messageId } = await t.db.db.selectFrom('emails').select('message_id').where('id', '=', id).executeTakeFirstOrThrow();
    // The run that got the 250 clears the earlier reason; another, which read the row SENDING past its end of data, marks it after.
    expect(await markSent(t.db.db, [{ emailId: id, messageId, note: null }])).toEqual(new Set([id]));
    expect(await markSent(t.db.db, [{ emailId: id, messageId, note: UNCONFIRMED_NOTE, unconfirmed: true }])).toEqual(new Set([id]));
    const row = await t.db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'SENT', unconfirmed: false, error: null });
  });

  it("a recorded 250 after another run's unconfirmed mark confirms the email: flag and note cleared together", async () => {
    const id = await pendingEmail('confirmed-after-mark@example.com');
    await t.db.db.updateTable('emails').set({ status: 'SENDING', attempts: 1, end_of_data_at: new Date() }).where('id', '=', id).execute();
    const { message_id: messageId } = await t.db.db.selectFrom('emails').select('message_id').where('id', '=', id).executeTakeFirstOrThrow();
    // Another run read the row SENDING past its end of data and marks it first; the run that got
    // the 250 read it with no error, so its mark sets no note of its own.
    expect(await markSent(t.db.db, [{ emailId: id, messageId, note: UNCONFIRMED_NOTE, unconfirmed: true }])).toEqual(new Set([id]));
    expect(await markSent(t.db.db, [{ emailId: id, messageId }])).toEqual(new Set([id]));
    const row = await t.db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'SENT', unconfirmed: false, error: null });
  });

  it('withholds the dot when the email is no longer in this attempt (another run took it over)', async () => {
    const { mail, delivery } = deliveryWith(sink.url);
    try {
      const to = 'fenced@example.com';
      const id = await pendingEmail(to);
      sink.hold(to, 'rcpt');
      const outcome = delivery.deliver({ emailId: id, attempt: 1, maxAttempts: 10 });
      await until('the RCPT stall', () => sink.held().rcpt.includes(to));
      // What a second run does to an attempt it found interrupted: a new attempt number.
      await t.db.db.updateTable('emails').set({ attempts: 2 }).where('id', '=', id).execute();
      sink.release();
      expect(await outcome).toMatchObject({ kind: 'skipped' });
      await mail.close();
      // Every connection closed at the sink: a dot sent despite the fence would have been read.
      await until('no connection open at the sink', () => sink.openConnections() === 0);
      expect(sink.messagesTo(to)).toEqual([]);
      const row = await t.db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'SENDING', end_of_data_at: null });
    } finally {
      await mail.close();
    }
  });
});
