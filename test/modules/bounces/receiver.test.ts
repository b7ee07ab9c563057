import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVerp, type InboundReceiver, startInboundReceiver } from '../../../src/modules/bounces/index.js';
import { TEST_SECRET } from '../../helpers/app.js';
import { until } from '../../helpers/poll.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, newSender, type Sender, type SendTestApp } from '../emails/helpers.js';
import { selfSignedCertificate } from '../webhooks/sns-signer.js';
import { type Delivered, deliver, eventsOf, fixture, smtpSend, startTestReceiver } from './helpers.js';

const DOMAIN = 'bounces.test';
const verp = createVerp(TEST_SECRET, DOMAIN);
const silent = pino({ level: 'silent' });
const MAX_SIZE = 256 * 1024;

let sink: SmtpSink;
let t: SendTestApp;
let receiver: InboundReceiver;
let sender: Sender;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, BOUNCE_DOMAIN: DOMAIN } });
  await t.runWorker();
  receiver = await startTestReceiver(t.db.db, verp, { maxSizeBytes: MAX_SIZE });
  sender = await newSender(t);
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await t?.close();
  await sink?.close();
});

const rcpt = () => `r${randomUUID().slice(0, 8)}@recipient.example`;
const emailRow = (id: string) => t.db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const contactRow = (id: string) => t.db.db.selectFrom('contacts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const suppression = (projectId: string, email: string) =>
  t.db.db.selectFrom('suppressions').selectAll().where('project_id', '=', projectId).where('email', '=', email).executeTakeFirst();
const feedbackRows = async (emailId: string) =>
  (await sql<{ kind: string; outcome: string; raw: Buffer; raw_size: number; project_id: string | null; rcpt_to: string; result: Record<string, unknown> }>`
    SELECT kind, outcome, raw, raw_size, project_id, rcpt_to, result FROM inbound_feedback WHERE email_id = ${emailId} ORDER BY received_at, id`.execute(t.db.db)).rows;
const softBounces = async (emailId: string) =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM soft_bounces WHERE email_id = ${emailId}`.execute(t.db.db)).rows[0]?.n ?? 0;
const bouncedCount = async (projectId: string) =>
  (await sql<{ b: number; c: number }>`SELECT coalesce(sum(bounced), 0)::int AS b, coalesce(sum(complained), 0)::int AS c FROM project_email_stats WHERE project_id = ${projectId}`.execute(t.db.db)).rows[0] ?? { b: 0, c: 0 };

/** Delivers one email to a fresh address and sends the fixture about it to its VERP address. */
async function bounce(name: string, to = rcpt(), opts: { reportId?: string } = {}): Promise<{ d: Delivered; raw: Buffer; answer: Awaited<ReturnType<typeof smtpSend>> }> {
  const d = await deliver(t, sink, sender, to);
  const raw = fixture(name, { verp: d.returnPath, recipient: to, messageId: d.messageId, reportId: opts.reportId });
  const answer = await smtpSend(receiver.port, d.returnPath, raw);
  return { d, raw, answer };
}

describe('VERP return path', () => {
  it('is the envelope sender the relay receives: signed, naming the email; the From header stays the sender', async () => {
    const to = rcpt();
    const d = await deliver(t, sink, sender, to);
    expect(d.returnPath).toMatch(/^b-[a-z2-7]{26}-[a-z2-7]{16}@bounces\.test$/);
    expect(verp.emailIdOf(d.returnPath)).toBe(d.emailId);
    const raw = sink.messagesTo(to).at(-1)?.raw.toString() ?? '';
    expect(raw).toMatch(new RegExp(`^From: ${sender.from.replace('.', '\\.')}`, 'm'));
    expect(raw).not.toContain('bounces.test');
  });
});

describe('hard bounces from the major receivers, over SMTP', () => {
  it.each([
    ['rfc3464.eml', 'rfc3464', '5.1.1'],
    ['postfix.eml', 'rfc3464', '5.1.1'],
    ['gmail.eml', 'gmail', '5.1.1'],
    ['outlook.eml', 'microsoft', '5.1.10'],
    ['yahoo-hard.eml', 'yahoo', '5.0.0'],
    ['exim.eml', 'exim', '5.1.1'],
    ['qmail.eml', 'qmail', '5.1.1'],
  ])('%s: BOUNCED, email.bounce, suppressed, contact unsubscribed, counted in the security metrics, stored', async (name, format, status) => {
    const before = await bouncedCount(sender.project.id);
    const { d, raw, answer } = await bounce(name);
    expect(answer, answer.response).toMatchObject({ ok: true });
    expect((await emailRow(d.emailId)).status).toBe('BOUNCED');
    const events = await eventsOf(t.db, d.contactId, 'email.bounce');
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ emailId: d.emailId, bounceType: 'Permanent', status, format, source: 'inbound-smtp' });
    expect(await suppression(sender.project.id, d.to)).toMatchObject({ reason: 'HARD_BOUNCE', source_email_id: d.emailId });
    expect((await contactRow(d.contactId)).subscribed).toBe(false);
    expect(await eventsOf(t.db, d.contactId, 'contact.unsubscribed')).toHaveLength(1);
    expect((await bouncedCount(sender.project.id)).b).toBe(before.b + 1);
    const [stored] = await feedbackRows(d.emailId);
    expect(stored).toMatchObject({ kind: 'hard-bounce', outcome: 'recorded', project_id: sender.project.id, rcpt_to: d.returnPath, raw_size: raw.length });
    expect(Buffer.compare(stored?.raw ?? Buffer.alloc(0), raw)).toBe(0);
  });

  it('a replayed DSN changes nothing: one event, one suppression, one unsubscribe; stored as a duplicate', async () => {
    const { d, raw } = await bounce('rfc3464.eml');
    const before = await bouncedCount(sender.project.id);
    expect(await smtpSend(receiver.port, d.returnPath, raw)).toMatchObject({ ok: true });
    expect(await eventsOf(t.db, d.contactId, 'email.bounce')).toHaveLength(1);
    expect(await eventsOf(t.db, d.contactId, 'contact.unsubscribed')).toHaveLength(1);
    expect(await bouncedCount(sender.project.id)).toEqual(before);
    expect((await feedbackRows(d.emailId)).map((r) => r.outcome)).toEqual(['recorded', 'duplicate']);
  });
});

describe('complaints and auto-replies', () => {
  it('an ARF abuse report: COMPLAINED, email.complaint, suppressed, unsubscribed, counted', async () => {
    const before = await bouncedCount(sender.project.id);
    const { d, answer } = await bounce('arf-abuse.eml');
    expect(answer.ok, answer.response).toBe(true);
    expect((await emailRow(d.emailId)).status).toBe('COMPLAINED');
    const events = await eventsOf(t.db, d.contactId, 'email.complaint');
    expect(events.map((e) => e.data)).toEqual([expect.objectContaining({ complaintFeedbackType: 'abuse', format: 'arf' })]);
    expect(await suppression(sender.project.id, d.to)).toMatchObject({ reason: 'COMPLAINT' });
    expect((await contactRow(d.contactId)).subscribed).toBe(false);
    expect((await bouncedCount(sender.project.id)).c).toBe(before.c + 1);
  });

  it('an out-of-office reply (with a code in its text) is stored and ignored: no bounce, no suppression', async () => {
    const { d, answer } = await bounce('out-of-office.eml');
    expect(answer.ok, answer.response).toBe(true);
    expect(await feedbackRows(d.emailId)).toEqual([expect.objectContaining({ kind: 'auto-reply', outcome: 'ignored' })]);
    const email = await emailRow(d.emailId);
    expect(email).toMatchObject({ status: 'SENT', bounced_at: null, error: null });
    expect(await suppression(sender.project.id, d.to)).toBeUndefined();
    expect((await contactRow(d.contactId)).subscribed).toBe(true);
    expect(await softBounces(d.emailId)).toBe(0);
  });

  it('a delayed DSN notes the delay on the email and counts no soft bounce', async () => {
    const { d } = await bounce('rfc3464-delayed.eml');
    await until('the delay noted', async () => (await feedbackRows(d.emailId)).length === 1);
    expect(await emailRow(d.emailId)).toMatchObject({ status: 'SENT', error: expect.stringContaining('Delivery delayed') });
    expect(await softBounces(d.emailId)).toBe(0);
    expect(await suppression(sender.project.id, d.to)).toBeUndefined();
  });
});

describe('soft bounces', () => {
  it('are counted per email, not suppressing; a replay counts once', async () => {
    const { d, raw, answer } = await bounce('yahoo-soft.eml');
    expect(answer.ok, answer.response).toBe(true);
    expect(await emailRow(d.emailId)).toMatchObject({ status: 'SENT', error: expect.stringContaining('Soft bounce: Transient: MailboxFull') });
    expect(await softBounces(d.emailId)).toBe(1);
    expect(await suppression(sender.project.id, d.to)).toBeUndefined();
    expect((await contactRow(d.contactId)).subscribed).toBe(true);
    expect(await smtpSend(receiver.port, d.returnPath, raw)).toMatchObject({ ok: true });
    expect(await softBounces(d.emailId)).toBe(1);
    expect((await feedbackRows(d.emailId)).map((r) => r.outcome)).toEqual(['soft-bounce', 'duplicate']);
  });

  it('an address that soft-bounced 3 times over 3 days or more is treated as hard; within less time it is not', async () => {
    const to = rcpt();
    const first = await bounce('yahoo-soft.eml', to);
    const second = await bounce('yahoo-soft.eml', to);
    const third = await bounce('yahoo-soft.eml', to);
    // Three emails, all within minutes: still soft.
    expect((await emailRow(third.d.emailId)).status).toBe('SENT');
    expect(await suppression(sender.project.id, to)).toBeUndefined();
    // The first two happened days ago.
    await sql`UPDATE soft_bounces SET bounced_at = now() - interval '4 days' WHERE email_id = ${first.d.emailId}`.execute(t.db.db);
    await sql`UPDATE soft_bounces SET bounced_at = now() - interval '2 days' WHERE email_id = ${second.d.emailId}`.execute(t.db.db);
    const fourth = await bounce('yahoo-soft.eml', to);
    expect((await emailRow(fourth.d.emailId)).status).toBe('BOUNCED');
    expect((await feedbackRows(fourth.d.emailId))[0]?.outcome).toBe('hard-after-soft-bounces');
    const events = await eventsOf(t.db, fourth.d.contactId, 'email.bounce');
    expect(events.map((e) => e.data)).toEqual([expect.objectContaining({ emailId: fourth.d.emailId, bounceType: 'Permanent', bounceSubType: 'RepeatedSoftBounces', softBounces: 4 })]);
    expect(await suppression(sender.project.id, to)).toMatchObject({ reason: 'HARD_BOUNCE', source_email_id: fourth.d.emailId });
    expect((await contactRow(fourth.d.contactId)).subscribed).toBe(false);
  });

  it('a sign of life (an open) between soft bounces starts the count again', async () => {
    const to = rcpt();
    const first = await bounce('yahoo-soft.eml', to);
    const second = await bounce('yahoo-soft.eml', to);
    await sql`UPDATE soft_bounces SET bounced_at = now() - interval '5 days' WHERE email_id = ${first.d.emailId}`.execute(t.db.db);
    await sql`UPDATE soft_bounces SET bounced_at = now() - interval '4 days' WHERE email_id = ${second.d.emailId}`.execute(t.db.db);
    // Another email to the address was opened after those bounces.
    const opened = await deliver(t, sink, sender, to);
    await sql`UPDATE emails SET opened_at = now() - interval '3 days' WHERE id = ${opened.emailId}`.execute(t.db.db);
    const third = await bounce('yahoo-soft.eml', to);
    expect((await feedbackRows(third.d.emailId))[0]?.outcome).toBe('soft-bounce');
    expect(await suppression(sender.project.id, to)).toBeUndefined();
  });
});

describe('no open relay', () => {
  async function refused(address: string) {
    const d = await deliver(t, sink, sender, rcpt());
    const answer = await smtpSend(receiver.port, address, fixture('rfc3464.eml', { verp: address, recipient: d.to, messageId: d.messageId }));
    expect(answer.ok).toBe(false);
    expect(answer.code, answer.response).toBe(550);
    expect(await feedbackRows(d.emailId)).toEqual([]);
    expect((await emailRow(d.emailId)).status).toBe('SENT');
    return { d, answer };
  }

  it('refuses a forged VERP signature at RCPT TO (550)', async () => {
    const d = await deliver(t, sink, sender, rcpt());
    const [local = '', domain] = d.returnPath.split('@');
    const forged = `${local.slice(0, -1)}${local.endsWith('a') ? 'b' : 'a'}@${domain}`;
    const answer = await smtpSend(receiver.port, forged, fixture('rfc3464.eml', { verp: forged, recipient: d.to, messageId: d.messageId }));
    expect(answer).toMatchObject({ ok: false, code: 550 });
    expect(answer.response).toContain('No such bounce address');
    expect((await emailRow(d.emailId)).status).toBe('SENT');
    expect(await feedbackRows(d.emailId)).toEqual([]);
  });

  it('refuses an address signed with another secret, or for another bounce domain (550)', async () => {
    const id = randomUUID();
    await refusedAddress(createVerp('another-secret-0123456789abcdefghijklmnop', DOMAIN).address(id));
    // Signed for another bounce domain: refused at that domain (relay) and with our domain swapped in.
    const other = createVerp(TEST_SECRET, 'bounces.other.test').address(id);
    expect((await refusedAddress(other)).response).toContain('Relaying denied');
    await refusedAddress(other.replace('bounces.other.test', DOMAIN));
  });

  it('refuses foreign domains (550: relaying denied), before any data', async () => {
    const { answer } = await refused('someone@gmail.com');
    expect(answer.response).toContain('Relaying denied');
    await refused(`postmaster@${DOMAIN}`);
  });

  it('accepts a VERP address in any case', async () => {
    const { d } = await bounce('rfc3464.eml').then(async () => ({ d: await deliver(t, sink, sender, rcpt()) }));
    const upper = d.returnPath.toUpperCase();
    const answer = await smtpSend(receiver.port, upper, fixture('rfc3464.eml', { verp: upper, recipient: d.to, messageId: d.messageId }));
    expect(answer.ok, answer.response).toBe(true);
    expect((await emailRow(d.emailId)).status).toBe('BOUNCED');
  });
});

async function refusedAddress(address: string) {
  const answer = await smtpSend(receiver.port, address, Buffer.from('Subject: x\r\n\r\nx\r\n'));
  expect(answer.ok).toBe(false);
  expect(answer.code, answer.response).toBe(550);
  return answer;
}

describe('limits', () => {
  it('refuses a message over the size limit (552) and records nothing', async () => {
    const d = await deliver(t, sink, sender, rcpt());
    const padding = `X-Padding: ${'x'.repeat(200)}\r\n`.repeat(Math.ceil((MAX_SIZE + 10_000) / 214));
    const raw = Buffer.concat([Buffer.from(padding), fixture('rfc3464.eml', { verp: d.returnPath, recipient: d.to, messageId: d.messageId })]);
    const answer = await smtpSend(receiver.port, d.returnPath, raw);
    expect(answer.ok).toBe(false);
    expect(answer.code, answer.response).toBe(552);
    expect(await feedbackRows(d.emailId)).toEqual([]);
    expect((await emailRow(d.emailId)).status).toBe('SENT');
  });

  it('a large report (the original returned in full) is read from its start; its first 256 KB are stored, its size recorded', async () => {
    const big = await startInboundReceiver({
      db: t.db.db, verp, log: silent, port: 0, host: '127.0.0.1', maxSizeBytes: 4 * 1024 * 1024, messagesPerMinute: 100, connectionsPerMinute: 100, autoDisable: true,
    });
    try {
      const d = await deliver(t, sink, sender, rcpt());
      const report = fixture('rfc3464.eml', { verp: d.returnPath, recipient: d.to, messageId: d.messageId }).toString();
      // The returned message, 1.5 MB of it, as a fourth part before the closing boundary.
      const original = `--RFC3464-BOUNDARY\r\nContent-Type: message/rfc822\r\n\r\nSubject: Welcome\r\n\r\n${'A'.repeat(998)}\r\n`.padEnd(1_500_000, `${'B'.repeat(998)}\r\n`);
      const raw = Buffer.from(report.replace('--RFC3464-BOUNDARY--', `${original}\r\n--RFC3464-BOUNDARY--`));
      expect(raw.length).toBeGreaterThan(1_500_000);
      const answer = await smtpSend(big.port, d.returnPath, raw);
      expect(answer.ok, answer.response).toBe(true);
      expect((await emailRow(d.emailId)).status).toBe('BOUNCED');
      const [stored] = (await sql<{ raw: Buffer; raw_size: number; raw_truncated: boolean }>`
        SELECT raw, raw_size, raw_truncated FROM inbound_feedback WHERE email_id = ${d.emailId}`.execute(t.db.db)).rows;
      expect(stored).toMatchObject({ raw_size: raw.length, raw_truncated: true });
      expect(Buffer.compare(stored?.raw ?? Buffer.alloc(0), raw.subarray(0, 256 * 1024))).toBe(0);
    } finally {
      await big.close();
    }
  });

  it('limits messages and connections per remote address per minute', async () => {
    const limited = await startInboundReceiver({
      db: t.db.db, verp, log: silent, port: 0, host: '127.0.0.1', maxSizeBytes: MAX_SIZE, messagesPerMinute: 2, connectionsPerMinute: 4, autoDisable: true,
    });
    try {
      const d = await deliver(t, sink, sender, rcpt());
      const raw = fixture('out-of-office.eml', { verp: d.returnPath, recipient: d.to, messageId: d.messageId });
      expect((await smtpSend(limited.port, d.returnPath, raw)).ok).toBe(true);
      expect((await smtpSend(limited.port, d.returnPath, raw)).ok).toBe(true);
      const third = await smtpSend(limited.port, d.returnPath, raw);
      expect(third.code, third.response).toBe(450);
      await smtpSend(limited.port, d.returnPath, raw);
      // A fifth connection in the same minute is refused at once.
      const fifth = await smtpSend(limited.port, d.returnPath, raw);
      expect(fifth.ok).toBe(false);
      expect(fifth.response).toMatch(/421|Too many connections/);
      expect((await feedbackRows(d.emailId)).length).toBe(2);
    } finally {
      await limited.close();
    }
  });

  it('offers STARTTLS with a configured certificate', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const cert = selfSignedCertificate(publicKey, privateKey, { from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 86_400_000) });
    const tls = await startInboundReceiver({
      db: t.db.db, verp, log: silent, port: 0, host: '127.0.0.1', maxSizeBytes: MAX_SIZE, messagesPerMinute: 100, connectionsPerMinute: 100, autoDisable: true,
      tls: { cert: Buffer.from(cert), key: Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' })) },
    });
    try {
      const d = await deliver(t, sink, sender, rcpt());
      const answer = await smtpSend(tls.port, d.returnPath, fixture('gmail.eml', { verp: d.returnPath, recipient: d.to, messageId: d.messageId }), { tls: true });
      expect(answer.ok, answer.response).toBe(true);
      expect((await emailRow(d.emailId)).status).toBe('BOUNCED');
      // Without a certificate the receiver does not offer it: a client that requires TLS gives up.
      expect((await smtpSend(receiver.port, d.returnPath, Buffer.from('Subject: x\r\n\r\nx\r\n'), { tls: true })).ok).toBe(false);
    } finally {
      await tls.close();
    }
  });
});
