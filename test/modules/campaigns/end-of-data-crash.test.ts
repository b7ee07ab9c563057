import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Campaign, CampaignStats } from '../../../src/modules/campaigns/campaigns.schema.js';
import type { Email } from '../../../src/modules/emails/emails.schema.js';
import { UNCONFIRMED_NOTE } from '../../../src/modules/emails/index.js';
import { SMTP_POOL_DEFAULTS } from '../../../src/mail/transports/smtp.js';
import { cleanupServers, type ServerProcess, sleep } from '../../helpers/process.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { api, createCampaign, emailsOf, seedContacts, sender, waitForNoEmailJobs } from './helpers.js';
import { killHard, releaseKilledWorker, startReadyWorker, waitForCampaignSent } from './worker-process.js';

/**
 * Power loss mid-delivery (docs/sending.md "Exactly once"): real ROLE=worker processes
 * SIGKILLed while their SMTP transactions stall at a chosen stage. An email cut before its end
 * of data is sent again and arrives once; one cut after its final dot, before the relay's reply
 * was recorded, is not sent again and is counted unconfirmed, apart from the sent ones.
 */

let t: SendTestApp;
let sink: SmtpSink;
// Two slow relays: each worker of the SIGKILL-twice test has one of its own while it can be killed.
let slowSinks: SmtpSink[] = [];

beforeAll(async () => {
  sink = await startSmtpSink({ keepRaw: false });
  // Every transaction spends ~half its time before its final dot and ~half waiting for the reply.
  slowSinks = await Promise.all([1, 2].map(() => startSmtpSink({ keepRaw: false, delays: { rcptMs: 15, replyMs: 15 } })));
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
});
afterEach(() => cleanupServers());
afterAll(async () => {
  await cleanupServers({ removeTemp: true });
  await t?.close();
  await sink?.close();
  await Promise.all(slowSinks.map((x) => x.close()));
});

async function diagnose(campaignId: string): Promise<string> {
  const { rows } = await sql<{ status: string; unconfirmed: boolean; stage: boolean; n: number }>`
    SELECT status, unconfirmed, end_of_data_at IS NOT NULL AS stage, count(*)::int AS n FROM emails
    WHERE campaign_id = ${campaignId} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`.execute(t.db.db);
  return `emails: ${JSON.stringify(rows)}`;
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const statsOf = async (s: Awaited<ReturnType<typeof sender>>, id: string) => (await api(t.app, s.project, 'GET', `/campaigns/${id}/stats`)).json<CampaignStats>();

describe('a worker SIGKILLed inside SMTP transactions', () => {
  it('resends the email cut before its end of data (it arrives once); leaves the one cut after its final dot unconfirmed, counted apart', { timeout: 60_000 }, async () => {
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, 6, { tag: `stage${Date.now()}-` });
    const [before, after, ...rest] = contacts.map((c) => c.email);
    if (!before || !after) throw new Error('no contacts');
    // `before` stalls at RCPT TO (inside the transaction, no data yet); `after` once its final
    // dot arrived, waiting for the 250.
    sink.hold(before, 'rcpt');
    sink.hold(after, 'reply');
    const c = await createCampaign(t, s);
    const worker = await startReadyWorker(t, sink.url);
    expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`)).statusCode).toBe(200);
    const rows = async () => new Map((await emailsOf(t, c.id)).map((e) => [e.to_email, e]));
    // The others recorded SENT too: a kill between a relay's 250 and its SENT commit would (rightly) leave one unconfirmed.
    await waitFor('both stalls and the other deliveries', async () => {
      const held = sink.held();
      if (!(held.rcpt.includes(before) && held.reply.includes(after) && rest.every((a) => sink.messagesTo(a).length === 1))) return false;
      const now = await rows();
      return rest.every((a) => now.get(a)?.status === 'SENT');
    });
    const stalled = await rows();
    expect(stalled.get(before)).toMatchObject({ status: 'SENDING', end_of_data_at: null, attempts: 1 });
    expect(stalled.get(after)).toMatchObject({ status: 'SENDING', end_of_data_at: expect.any(Date), attempts: 1 });
    expect(sink.messagesTo(after)).toHaveLength(1);

    await killHard(worker);
    sink.release();
    await releaseKilledWorker(t, worker);
    await startReadyWorker(t, sink.url);
    await waitForCampaignSent(t, c.id, 30_000, () => diagnose(c.id));
    await waitForNoEmailJobs(t, c.id); // a late resend would still be counted

    // Cut before the end of data: the relay never had it; sent again, received once.
    expect(sink.messagesTo(before)).toHaveLength(1);
    expect(sink.attempts(before)).toBe(2);
    // Cut after the final dot: not sent again (the relay had it: one message, one RCPT).
    expect(sink.messagesTo(after)).toHaveLength(1);
    expect(sink.attempts(after)).toBe(1);
    for (const a of rest) expect(sink.messagesTo(a)).toHaveLength(1);

    const done = await rows();
    expect(done.get(before)).toMatchObject({ status: 'SENT', unconfirmed: false, error: null, attempts: 2 });
    expect(done.get(after)).toMatchObject({ status: 'SENT', unconfirmed: true, error: UNCONFIRMED_NOTE, attempts: 1 });
    expect([...done.values()].filter((e) => e.unconfirmed).map((e) => e.to_email)).toEqual([after]);

    const afterId = done.get(after)?.id ?? '';
    const visible = (await api(t.app, s.project, 'GET', `/emails/${afterId}`)).json<Email>();
    expect(visible).toMatchObject({ status: 'SENT', unconfirmed: true, error: UNCONFIRMED_NOTE });
    expect(await statsOf(s, c.id)).toMatchObject({ total: 6, pending: 0, sent: 5, unconfirmed: 1, failed: 0, cancelled: 0 });
    const campaign = (await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>();
    expect(campaign).toMatchObject({ status: 'SENT', totalRecipients: 6, sentCount: 5, unconfirmedCount: 1 });
  });

  it('a campaign whose delivering worker is SIGKILLed twice: every recipient gets it exactly once except those counted unconfirmed; stats add up', { timeout: 60_000 }, async () => {
    const N = 300;
    const s = await sender(t);
    const contacts = await seedContacts(t.db, s.project.id, N, { tag: `twice${Date.now()}-` });
    const addresses = new Set(contacts.map((x) => x.email));
    const received = () => {
      const n = new Map<string, number>();
      for (const m of slowSinks.flatMap((x) => x.messages)) for (const to of m.to) if (addresses.has(to)) n.set(to, (n.get(to) ?? 0) + 1);
      return n;
    };
    const total = () => [...received().values()].reduce((a, b) => a + b, 0);
    const c = await createCampaign(t, s);

    // Two workers, each delivering to a relay of its own, so that a kill can be aimed at the one
    // delivering (a campaign's batches run one at a time). The replacement of the first killed
    // starts while the other runs on (a worker takes seconds to start).
    const workers = new Map<SmtpSink, Promise<ServerProcess>>(slowSinks.map((r) => [r, startReadyWorker(t, r.url)]));
    await Promise.all(workers.values());
    expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`)).statusCode).toBe(200);
    // Each kill must cut a transaction before its final dot, or it may only ever cut replies (a
    // batch's deliveries move in step: their statements are shared). The next RCPT TO of every
    // recipient not served yet stalls; the worker whose relay holds one is killed while its other
    // transactions run on.
    const killDelivering = async (): Promise<SmtpSink> => {
      const got = received();
      const relays = [...workers.keys()];
      for (const relay of relays) for (const a of addresses) if (!got.has(a)) relay.hold(a, 'rcpt');
      const stalled = () => relays.find((r) => r.held().rcpt.length > 0);
      await waitFor('a transaction stalled before its final dot', () => stalled() !== undefined);
      const relay = stalled() as SmtpSink;
      const worker = await (workers.get(relay) as Promise<ServerProcess>);
      await killHard(worker);
      for (const r of relays) r.release();
      await releaseKilledWorker(t, worker);
      return relay;
    };
    await waitFor('60 messages', () => total() >= 60);
    const freed = await killDelivering();
    workers.set(freed, startReadyWorker(t, freed.url));
    await waitFor('150 messages', () => total() >= 150);
    await killDelivering();
    expect(total(), 'the second kill landed after the campaign had finished').toBeLessThan(N);
    await Promise.all(workers.values());
    await waitForCampaignSent(t, c.id, 40_000, () => diagnose(c.id));
    await waitForNoEmailJobs(t, c.id); // a late resend would still be counted

    const emails = await emailsOf(t, c.id);
    const got = received();
    expect([...got].filter(([, n]) => n > 1), 'recipients who got the campaign twice').toEqual([]);
    const unconfirmed = emails.filter((e) => e.unconfirmed);
    const confirmed = emails.filter((e) => !e.unconfirmed);
    // Every email the service reports sent arrived exactly once; only unconfirmed ones may be missing.
    expect(confirmed.filter((e) => got.get(e.to_email) !== 1).map((e) => `${e.to_email}=${e.status}`), 'sent but not received once').toEqual([]);
    expect(confirmed.every((e) => e.status === 'SENT' && e.error === null)).toBe(true);
    expect(unconfirmed.every((e) => e.status === 'SENT' && e.error === UNCONFIRMED_NOTE)).toBe(true);
    // Only a transaction past its final dot at a kill is unconfirmed: at most a pool's worth per kill.
    expect(unconfirmed.length).toBeLessThanOrEqual(2 * SMTP_POOL_DEFAULTS.maxConnections);
    // The kills cut transactions before their end of data too: those were sent again, once.
    const resent = confirmed.filter((e) => e.attempts > 1);
    expect(resent.length, await diagnose(c.id)).toBeGreaterThan(0);

    const stats = await statsOf(s, c.id);
    expect(stats).toMatchObject({ total: N, pending: 0, unconfirmed: unconfirmed.length, failed: 0, cancelled: 0 });
    expect(stats.sent + stats.unconfirmed + stats.failed + stats.cancelled).toBe(stats.total);
    const campaign = (await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>();
    expect(campaign).toMatchObject({ totalRecipients: N, sentCount: N - unconfirmed.length, unconfirmedCount: unconfirmed.length });
  });
});
