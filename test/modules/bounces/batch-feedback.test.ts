import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyFeedbackBatchIn,
  applyFeedbackIn,
  type FeedbackEvent,
  type FeedbackItem,
  type Outcome,
  SOFT_BOUNCE_SPAN_HOURS,
} from '../../../src/modules/bounces/feedback.service.js';
import { type FeedbackEmail, findEmailsByIds, recordMilestones } from '../../../src/modules/emails/index.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, newSender, send, type SendAnswer, type Sender, type SendTestApp, waitForStatus } from '../emails/helpers.js';

/**
 * The batch form of the feedback path (applyFeedbackBatchIn, recordMilestones): a batch of
 * reports ends exactly as the same reports applied one by one (docs/bounces.md "Throughput").
 */
const silent = pino({ level: 'silent' });
let sink: SmtpSink;
let t: SendTestApp;
let a: Sender;
let b: Sender;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
  await t.runWorker();
  [a, b] = [await newSender(t), await newSender(t)];
}, 60_000);
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

/** Sends one email to each address (fresh contacts, subscribed) and waits until they are SENT. */
async function sent(sender: Sender, to: string[]): Promise<FeedbackEmail[]> {
  const res = await send(t.app, sender.project, { to, from: sender.from, subject: 'Hi', body: '<p>Hi</p>', subscribed: true });
  expect(res.statusCode).toBe(200);
  const ids = res.json<SendAnswer>().data.emails.map((e) => e.email);
  await waitForStatus(t.db, ids, ['SENT']);
  const byId = await t.db.db.transaction().execute((trx) => findEmailsByIds(trx, ids));
  return ids.map((id) => {
    const email = byId.get(id);
    if (!email) throw new Error(`email ${id} not found`);
    return email;
  });
}

const addr = () => `u${randomUUID().slice(0, 8)}@recipient.example`;
const hard = (key = randomUUID()): FeedbackEvent => ({ kind: 'bounce', permanent: true, reportKey: key, data: { bounceType: 'Permanent', bounceSubType: 'General', diagnosticCode: 'smtp; 550 5.1.1 no such user' } });
const soft = (key = randomUUID()): FeedbackEvent => ({ kind: 'bounce', permanent: false, reportKey: key, data: { bounceType: 'Transient', bounceSubType: 'MailboxFull' } });
const complaint = (): FeedbackEvent => ({ kind: 'complaint', data: { complaintFeedbackType: 'abuse' } });
const delivery = (): FeedbackEvent => ({ kind: 'delivery', data: { smtpResponse: '250 ok' } });

const batch = (items: FeedbackItem[], deferReputation?: Set<string>) =>
  t.db.db.transaction().execute((trx) => applyFeedbackBatchIn(trx, items, silent, { autoDisable: false, deferReputation }));
const oneByOne = (items: FeedbackItem[]) =>
  t.db.db.transaction().execute(async (trx) => {
    const out: Outcome[] = [];
    for (const item of items) out.push(await applyFeedbackIn(trx, { email: item.email }, item.event, silent, { autoDisable: false }));
    return out;
  });

/** What a batch leaves on these emails, comparable between two sets of emails (ids replaced by their position). */
async function state(emails: FeedbackEmail[]) {
  const ids = emails.map((e) => e.id);
  const pos = (id: unknown) => ids.indexOf(String(id));
  const rows = await t.db.db.selectFrom('emails').selectAll().where('id', 'in', ids).execute();
  const contacts = await t.db.db.selectFrom('contacts').select(['id', 'subscribed']).where('id', 'in', emails.flatMap((e) => (e.contact_id ? [e.contact_id] : []))).execute();
  const events = (
    await sql<{ contact_id: string; name: string; data: Record<string, unknown> }>`
      SELECT contact_id, name, data FROM events WHERE contact_id = ANY(${emails.map((e) => e.contact_id)}::uuid[]) AND name NOT IN ('contact.subscribed', 'email.sent')`.execute(t.db.db)
  ).rows;
  const suppressions = await t.db.db.selectFrom('suppressions').select(['email', 'reason', 'source_email_id']).where('email', 'in', emails.map((e) => e.to_email)).execute();
  const softRows = (await sql<{ email_id: string }>`SELECT email_id FROM soft_bounces WHERE email_id = ANY(${ids}::uuid[])`.execute(t.db.db)).rows;
  return {
    emails: emails.map((e) => {
      const r = rows.find((x) => x.id === e.id);
      return { status: r?.status, bounced: r?.bounced_at !== null, complained: r?.complained_at !== null, delivered: r?.delivered_at !== null, error: r?.error };
    }),
    subscribed: emails.map((e) => contacts.find((c) => c.id === e.contact_id)?.subscribed),
    // Per contact, as a set: the events of one transaction share their created_at (their order is not kept, nor was it one by one).
    events: emails.map((e) =>
      events
        .filter((ev) => ev.contact_id === e.contact_id)
        .map((ev) => JSON.stringify({ name: ev.name, email: pos(ev.data.emailId), data: { ...ev.data, emailId: undefined } }))
        .sort(),
    ),
    suppressions: emails.map((e) => suppressions.filter((s) => s.email === e.to_email).map((s) => ({ reason: s.reason, source: pos(s.source_email_id) }))),
    softBounces: emails.map((e) => softRows.filter((s) => s.email_id === e.id).length),
  };
}

const counters = async (projectId: string) =>
  (await sql<{ b: number; c: number }>`SELECT coalesce(sum(bounced), 0)::int AS b, coalesce(sum(complained), 0)::int AS c FROM project_email_stats WHERE project_id = ${projectId}`.execute(t.db.db)).rows[0] ?? { b: 0, c: 0 };

describe('applyFeedbackBatchIn', () => {
  it('ends as report-by-report: duplicates, mixed projects, a complaint after a bounce, soft bounces, deliveries, an email gone', { timeout: 60_000 }, async () => {
    // The same scenario twice, on two sets of emails: once as one batch, once report by report.
    const scenario = async () => {
      const [a1, a2, a3] = await sent(a, [addr(), addr(), addr()]);
      const [b1, b2] = await sent(b, [addr(), addr()]);
      if (!a1 || !a2 || !a3 || !b1 || !b2) throw new Error('emails missing');
      const key = randomUUID();
      const items: FeedbackItem[] = [
        { email: a1, event: hard() },
        { email: b1, event: complaint() },
        { email: a1, event: hard() }, // the same email bounced again (another report): a duplicate
        { email: a2, event: delivery() },
        { email: a2, event: complaint() }, // a complaint after a delivery
        { email: a3, event: soft(key) },
        { email: a3, event: soft(key) }, // the same soft report again: counted once
        { email: b2, event: hard() },
        { email: b2, event: complaint() }, // a complaint after a bounce, in the same batch
        { email: undefined, event: hard() }, // not a project email
        { email: b1, event: delivery() }, // a delivery after a complaint: the status stays
      ];
      return { emails: [a1, a2, a3, b1, b2], items };
    };
    const x = await scenario();
    const y = await scenario();
    const before = { a: await counters(a.project.id), b: await counters(b.project.id) };
    const reputation = new Set<string>();
    const batched = await batch(x.items, reputation);
    const afterBatch = { a: await counters(a.project.id), b: await counters(b.project.id) };
    const single = await oneByOne(y.items);
    const afterSingle = { a: await counters(a.project.id), b: await counters(b.project.id) };

    expect(batched).toEqual(['recorded', 'recorded', 'duplicate', 'recorded', 'recorded', 'soft-bounce', 'duplicate', 'recorded', 'recorded', 'unknown-email', 'recorded']);
    expect(batched).toEqual(single);
    expect(await state(x.emails)).toEqual(await state(y.emails));
    // Each project's reputation is left to the caller, once.
    expect([...reputation].sort()).toEqual([a.project.id, b.project.id].sort());

    const s = await state(x.emails);
    expect(s.emails.map((e) => e.status)).toEqual(['BOUNCED', 'COMPLAINED', 'SENT', 'COMPLAINED', 'COMPLAINED']);
    expect(s.emails[4]).toMatchObject({ bounced: true, complained: true });
    const names = (i: number) => s.events[i]?.map((e) => (JSON.parse(e) as { name: string }).name).sort();
    expect(names(4)).toEqual(['contact.unsubscribed', 'email.bounce', 'email.complaint']);
    expect(names(0)).toEqual(['contact.unsubscribed', 'email.bounce']);
    expect(names(2)).toEqual([]);
    expect(s.subscribed).toEqual([false, false, true, false, false]);
    // The first report about an address names its suppression: the bounce, not the complaint after it.
    expect(s.suppressions[4]).toEqual([{ reason: 'HARD_BOUNCE', source: 4 }]);
    expect(s.softBounces).toEqual([0, 0, 1, 0, 0]);
    // Counters once per milestone, same as one by one: a: 1 bounce + 1 complaint; b: 1 bounce + 2 complaints.
    expect({ b: afterBatch.a.b - before.a.b, c: afterBatch.a.c - before.a.c }).toEqual({ b: 1, c: 1 });
    expect({ b: afterBatch.b.b - before.b.b, c: afterBatch.b.c - before.b.c }).toEqual({ b: 1, c: 2 });
    expect({ b: afterSingle.b.b - afterBatch.b.b, c: afterSingle.b.c - afterBatch.b.c }).toEqual({ b: 1, c: 2 });
  });

  it('replays change nothing: already-bounced and complained emails are duplicates, no event, no second suppression', async () => {
    const [e1, e2] = await sent(a, [addr(), addr()]);
    if (!e1 || !e2) throw new Error('emails missing');
    expect(await batch([{ email: e1, event: hard() }, { email: e2, event: complaint() }])).toEqual(['recorded', 'recorded']);
    const first = await state([e1, e2]);
    expect(await batch([{ email: e2, event: complaint() }, { email: e1, event: hard() }, { email: e1, event: hard() }])).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(await state([e1, e2])).toEqual(first);
    // A delivery notification after the bounce is recorded (its time, its event) but the status stays.
    expect(await batch([{ email: e1, event: delivery() }])).toEqual(['recorded']);
    expect((await state([e1])).emails[0]).toMatchObject({ status: 'BOUNCED', delivered: true });
  });

  it('a FAILED email is not trackable and keeps its status', async () => {
    const [e1, e2] = await sent(a, [addr(), addr()]);
    if (!e1 || !e2) throw new Error('emails missing');
    await t.db.db.updateTable('emails').set({ status: 'FAILED' }).where('id', '=', e1.id).execute();
    expect(await batch([{ email: e1, event: hard() }, { email: e2, event: hard() }])).toEqual(['not-trackable', 'recorded']);
    const s = await state([e1, e2]);
    expect(s.emails.map((e) => [e.status, e.bounced])).toEqual([['FAILED', false], ['BOUNCED', true]]);
    expect(s.events[0]).toEqual([]);
    expect(s.suppressions[0]).toEqual([]);
  });

  it('a soft bounce sees a delivery to its address earlier in the batch (a sign of life resets its streak)', { timeout: 30_000 }, async () => {
    // Two earlier emails to one address soft-bounced four days ago; a third soft bounce now would
    // complete the repeated-soft-bounce rule — unless the address showed life in between.
    const run = async (items: (emails: FeedbackEmail[]) => FeedbackItem[]) => {
      const to = addr();
      const emails: FeedbackEmail[] = [];
      for (let i = 0; i < 4; i++) emails.push(...(await sent(a, [to])));
      const [o1, o2] = emails;
      if (!o1 || !o2) throw new Error('emails missing');
      await batch([{ email: o1, event: soft() }, { email: o2, event: soft() }]);
      await sql`UPDATE soft_bounces SET bounced_at = now() - make_interval(hours => ${SOFT_BOUNCE_SPAN_HOURS + 24}) WHERE email_id IN (${o1.id}, ${o2.id})`.execute(t.db.db);
      return batch(items(emails));
    };
    // Without a delivery the third soft bounce is the address's hard bounce…
    expect(await run(([, , e3]) => [{ email: e3, event: soft() }])).toEqual(['hard-after-soft-bounces']);
    // …with a delivery of another email to it first in the same batch, it is a soft bounce, as one by one.
    expect(await run(([, , e3, e4]) => [{ email: e4, event: delivery() }, { email: e3, event: soft() }])).toEqual(['recorded', 'soft-bounce']);
  });
});

describe('recordMilestones', () => {
  it('answers per input: first once per (email, status), undefined for unknown emails; the status never moves back', async () => {
    const [e1, e2] = await sent(b, [addr(), addr()]);
    if (!e1 || !e2) throw new Error('emails missing');
    const gone = randomUUID();
    const changes = await t.db.db.transaction().execute((trx) =>
      recordMilestones(trx, [
        { emailId: e1.id, status: 'COMPLAINED' },
        { emailId: e1.id, status: 'BOUNCED' },
        { emailId: gone, status: 'BOUNCED' },
        { emailId: e1.id, status: 'COMPLAINED' },
        { emailId: e2.id, status: 'DELIVERED', data: { smtpResponse: '250' } },
      ]),
    );
    expect(changes.map((c) => c?.first)).toEqual([true, true, undefined, false, true]);
    expect(changes[0]).toEqual({ first: true, contactId: e1.contact_id, projectId: b.project.id });
    const rows = await t.db.db.selectFrom('emails').select(['id', 'status', 'bounced_at', 'complained_at']).where('id', 'in', [e1.id, e2.id]).orderBy('status').execute();
    // A bounce after a complaint keeps COMPLAINED, with both times set.
    expect(rows.find((r) => r.id === e1.id)).toMatchObject({ status: 'COMPLAINED', bounced_at: expect.any(Date), complained_at: expect.any(Date) });
    expect(rows.find((r) => r.id === e2.id)?.status).toBe('DELIVERED');
    const events = await t.db.db
      .selectFrom('events')
      .select(['name', 'data'])
      .where('contact_id', 'in', [e1.contact_id ?? '', e2.contact_id ?? ''])
      .where('name', 'in', ['email.complaint', 'email.bounce', 'email.delivery'])
      .orderBy('name')
      .execute();
    expect(events).toEqual([
      { name: 'email.bounce', data: { emailId: e1.id } },
      { name: 'email.complaint', data: { emailId: e1.id } },
      { name: 'email.delivery', data: { emailId: e2.id, smtpResponse: '250' } },
    ]);
  });
});
