import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_RETRY_MS, JITTER } from '../../../src/modules/webhook-endpoints/backoff.js';
import { ENDPOINT_CONCURRENCY, PAUSE_MS } from '../../../src/modules/webhook-endpoints/deliver.js';
import { wakeStrandedEndpoints } from '../../../src/modules/webhook-endpoints/index.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { seedContacts } from '../campaigns/helpers.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { addMember } from '../members/helpers.js';
import { deliveriesOf, expectSigned, type Receiver, registerEndpoint, startReceiver, waitForCalls } from './helpers.js';

/**
 * Retries, give-up and auto-disable against a real failing receiver. Time is moved in the
 * database (created_at, next_attempt_at, failing_since), never slept through; the sweep
 * (`wakeStrandedEndpoints`, the `webhook-sweep` cron job) wakes the endpoint whose delivery was made due.
 */

let sink: SmtpSink;
let r: Receiver;
let t: SendTestApp;
beforeAll(async () => {
  [sink, r] = await Promise.all([startSmtpSink(), startReceiver()]);
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, WEBHOOK_ALLOW_PRIVATE: 'true' } });
  await t.runWorker();
});
afterAll(async () => {
  await t?.close();
  await Promise.all([sink?.close(), r?.close()]);
});

const path = () => `/hook/${randomUUID()}`;
const api = (p: TestProject, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(p.secret), ...(payload && { payload }) });

/** `n` contact.unsubscribed events of the project, in one statement. */
async function unsubscribeEvents(projectId: string, n = 1): Promise<void> {
  const contacts = await seedContacts(t.db, projectId, n, { tag: randomUUID().slice(0, 8) });
  await t.db.db.updateTable('contacts').set({ subscribed: false }).where('id', 'in', contacts.map((c) => c.id)).execute();
}

/** Makes the endpoint's PENDING deliveries due (a minute ago) and wakes it as the sweep does. */
async function makeDueAndWake(endpointId: string, extra: { createdAt?: string } = {}): Promise<void> {
  await sql`
    UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 minute'
      ${extra.createdAt ? sql`, created_at = ${sql.raw(extra.createdAt)}` : sql``}
    WHERE endpoint_id = ${endpointId} AND status = 'PENDING'`.execute(t.db.db);
  await sql`UPDATE webhook_endpoints SET lease_until = NULL WHERE id = ${endpointId}`.execute(t.db.db);
  expect(await wakeStrandedEndpoints(t.db.db)).toBeGreaterThanOrEqual(1);
}

const waitForDelivery = (endpointId: string, what: string, check: (d: Awaited<ReturnType<typeof deliveriesOf>>) => boolean) =>
  until(what, async () => check(await deliveriesOf(t.db, endpointId)), { why: async () => JSON.stringify(await deliveriesOf(t.db, endpointId)) });

const endpointRow = (id: string) => t.db.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('retries', () => {
  it('retries a failed call on the backoff schedule with the same X-Webhook-Id and body, then records the success', async () => {
    const { project } = await newProject(t.app);
    const p = path();
    r.answer(p, (n) => (n === 1 ? { status: 503, body: 'try later' } : { status: 200, body: 'ok' }));
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['contact.unsubscribed']);
    await unsubscribeEvents(project.id);
    await waitForDelivery(e.id, 'the first attempt recorded', (d) => d[0]?.attempts === 1);
    const [first] = await deliveriesOf(t.db, e.id);
    expect(first).toMatchObject({ status: 'PENDING', status_code: 503, response_excerpt: 'try later', error: 'HTTP 503', finished_at: null });
    const wait = (first?.next_attempt_at?.getTime() ?? 0) - (first?.last_attempt_at?.getTime() ?? 0);
    expect(wait).toBeGreaterThanOrEqual(FIRST_RETRY_MS * (1 - JITTER) - 1000);
    expect(wait).toBeLessThanOrEqual(FIRST_RETRY_MS * (1 + JITTER) + 1000);
    expect((await endpointRow(e.id)).failing_since).toBeInstanceOf(Date);
    const log = (await api(project, 'GET', `/webhook-endpoints/${e.id}/deliveries`)).json();
    expect(log.data[0]).toMatchObject({ status: 'PENDING', attempts: 1, statusCode: 503, responseExcerpt: 'try later', nextAttemptAt: first?.next_attempt_at?.toISOString() });

    await makeDueAndWake(e.id);
    const calls = await waitForCalls(r, p, 2);
    expect(calls[1]?.headers['x-webhook-id']).toBe(calls[0]?.headers['x-webhook-id']);
    expect(calls[1]?.body).toBe(calls[0]?.body);
    for (const c of calls) if (c) expectSigned(c, e.secret);
    await waitForDelivery(e.id, 'DELIVERED', (d) => d[0]?.status === 'DELIVERED');
    expect((await deliveriesOf(t.db, e.id))[0]).toMatchObject({ attempts: 2, status_code: 200, next_attempt_at: null, finished_at: expect.any(Date) });
    expect((await endpointRow(e.id)).failing_since).toBeNull();
  });

  it('gives a delivery up once it failed 24 hours after its event', async () => {
    const { project } = await newProject(t.app);
    const p = path();
    r.answer(p, { status: 500, body: 'down' });
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['contact.unsubscribed']);
    await unsubscribeEvents(project.id);
    await waitForDelivery(e.id, 'the first attempt', (d) => d[0]?.attempts === 1);
    await makeDueAndWake(e.id, { createdAt: "now() - interval '24 hours 1 minute'" });
    await waitForDelivery(e.id, 'FAILED', (d) => d[0]?.status === 'FAILED');
    expect((await deliveriesOf(t.db, e.id))[0]).toMatchObject({ attempts: 2, next_attempt_at: null, finished_at: expect.any(Date), error: 'HTTP 500' });
    const log = (await api(project, 'GET', `/webhook-endpoints/${e.id}/deliveries?status=FAILED`)).json();
    expect(log.data[0]).toMatchObject({ status: 'FAILED', attempts: 2, nextAttemptAt: null, finishedAt: expect.any(String) });
    // Failing for minutes only: the endpoint stays enabled.
    expect((await endpointRow(e.id)).enabled).toBe(true);
  });

  it(`rests an endpoint whose first ${ENDPOINT_CONCURRENCY} calls all fail: the rest of the batch waits, untried, for the pause`, async () => {
    const { project } = await newProject(t.app);
    const p = path();
    r.answer(p, { status: 500 });
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['contact.unsubscribed']);
    await unsubscribeEvents(project.id, ENDPOINT_CONCURRENCY + 5);
    await waitForDelivery(e.id, 'the first batch recorded', (d) => d.filter((x) => x.attempts === 1).length === ENDPOINT_CONCURRENCY);
    const rows = await deliveriesOf(t.db, e.id);
    const untried = rows.filter((d) => d.attempts === 0);
    expect(untried).toHaveLength(5);
    for (const d of untried) expect(d.next_attempt_at?.getTime()).toBeGreaterThan(Date.now() + PAUSE_MS - 10_000);
    expect(r.callsTo(p)).toHaveLength(ENDPOINT_CONCURRENCY);
    expect((await endpointRow(e.id)).lease_until?.getTime()).toBeGreaterThan(Date.now() + PAUSE_MS - 10_000);
  });
});

describe('auto-disable after a day of failures', () => {
  it('disables the endpoint, gives up its waiting deliveries, records the reason and emails its OWNERs and ADMINs; PATCH enabled re-enables it', async () => {
    const { user, project } = await newProject(t.app);
    const admin = await addMember(t.app, user, project.id, 'ADMIN');
    const member = await addMember(t.app, user, project.id, 'MEMBER');
    const p = path();
    r.answer(p, { status: 502, body: 'bad gateway' });
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['contact.unsubscribed']);
    await unsubscribeEvents(project.id, 2);
    await waitForDelivery(e.id, 'two attempts', (d) => d.filter((x) => x.attempts === 1).length === 2);
    const [one, two] = await deliveriesOf(t.db, e.id);
    // Failing since 25 hours; one delivery due now, the other waiting for a later retry.
    // (The failed batch rested the endpoint: the lease is cleared as if the pause were over.)
    await sql`UPDATE webhook_endpoints SET failing_since = now() - interval '25 hours', lease_until = NULL WHERE id = ${e.id}`.execute(t.db.db);
    await sql`UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE id = ${two?.id ?? ''}`.execute(t.db.db);
    await sql`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 minute' WHERE id = ${one?.id ?? ''}`.execute(t.db.db);
    expect(await wakeStrandedEndpoints(t.db.db)).toBeGreaterThanOrEqual(1);
    await until('the endpoint disabled', async () => !(await endpointRow(e.id)).enabled);

    const row = await endpointRow(e.id);
    expect(row.disabled_reason).toMatch(/^No delivery succeeded for 24 hours \(failing since .+\); last error: HTTP 502$/);
    expect(row.disabled_at).toBeInstanceOf(Date);
    const after = await deliveriesOf(t.db, e.id);
    expect(after.find((d) => d.id === one?.id)).toMatchObject({ status: 'FAILED', attempts: 2, status_code: 502 });
    expect(after.find((d) => d.id === two?.id)).toMatchObject({ status: 'FAILED', attempts: 1, error: expect.stringContaining('disabled') });
    const got = (await api(project, 'GET', `/webhook-endpoints/${e.id}`)).json();
    expect(got).toMatchObject({ enabled: false, disabledReason: row.disabled_reason, failingSince: expect.any(String) });

    // (With SMTP_URL set, sign-up sent each user a verification email first.)
    const notices = async (to: string) => {
      const mails = await Promise.all(sink.messagesTo(to).map((m) => simpleParser(m.raw)));
      return mails.filter((m) => m.subject === 'Webhook endpoint disabled in "Test project"');
    };
    for (const to of [user.email, admin.email]) {
      await until(`the notice to ${to}`, async () => (await notices(to)).length === 1);
      const [mail] = await notices(to);
      expect(mail?.text).toContain(`Endpoint: ${r.url}${p} (${e.id})`);
      expect(mail?.text).toContain(`Reason: ${row.disabled_reason ?? ''}`);
    }
    expect(await notices(member.email)).toEqual([]);

    // Disabled: nothing more is captured.
    await unsubscribeEvents(project.id);
    expect(await deliveriesOf(t.db, e.id)).toHaveLength(2);

    r.answer(p, { status: 200, body: 'back' });
    const res = await api(project, 'PATCH', `/webhook-endpoints/${e.id}`, { enabled: true });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
    await unsubscribeEvents(project.id);
    await waitForDelivery(e.id, 'a new delivery after re-enabling', (d) => d.some((x) => x.status === 'DELIVERED'));
  });

  it('keeps an endpoint enabled when a call succeeds, however long it failed before', async () => {
    const { project } = await newProject(t.app);
    const p = path();
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['contact.unsubscribed']);
    await sql`UPDATE webhook_endpoints SET failing_since = now() - interval '3 days' WHERE id = ${e.id}`.execute(t.db.db);
    await unsubscribeEvents(project.id);
    await waitForDelivery(e.id, 'DELIVERED', (d) => d[0]?.status === 'DELIVERED');
    expect(await endpointRow(e.id)).toMatchObject({ enabled: true, failing_since: null, disabled_reason: null });
  });
});
