import { sql } from 'kysely';
import { buildApp } from '../../../src/app.js';
import { createAppDeps } from '../../../src/app-deps.js';
import { memoryStore } from '../../../src/http/rate-limit.js';
import { enforceEmailCap, isBillingLimitError } from '../../../src/modules/billing/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { api, createCampaign, seedContacts, waitForCampaign } from '../campaigns/helpers.js';
import { createSendTestApp, newSender, send, type Sender, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, track, waitForExecutions, stepsOf } from '../workflows/engine-helpers.js';

/** Billing on with a free allowance of 5 emails a month; Stripe itself is not called on these paths. */
let t: SendTestApp;

beforeAll(async () => {
  t = await createSendTestApp({
    env: { STRIPE_SECRET_KEY: 'sk_test_caps', STRIPE_WEBHOOK_SECRET: 'whsec_caps', STRIPE_PRICE_ID: 'price_caps', STRIPE_API_URL: 'http://127.0.0.1:9', BILLING_FREE_EMAILS_PER_MONTH: '5' },
  });
  await t.runWorker();
});
afterAll(async () => t?.close());

const period = () => new Date().toISOString().slice(0, 8) + '01';

/** A subscribed project (as the webhooks leave it) with the given caps. */
async function subscribed(s: Sender, caps: { transactional?: number; campaign?: number; workflow?: number }): Promise<void> {
  await t.db.db
    .insertInto('project_billing')
    .values({ project_id: s.project.id, stripe_customer_id: `cus_${s.project.id}`, subscription_status: 'active', cap_transactional: caps.transactional ?? null, cap_campaign: caps.campaign ?? null, cap_workflow: caps.workflow ?? null })
    .execute();
}

const emailCount = async (projectId: string) =>
  Number((await t.db.db.selectFrom('emails').select((eb) => eb.fn.countAll().as('n')).where('project_id', '=', projectId).executeTakeFirstOrThrow()).n);

const usage = (projectId: string) => t.db.db.selectFrom('billing_usage').selectAll().where('project_id', '=', projectId).executeTakeFirst();

const to = (n: number, tag = 'r') => Array.from({ length: n }, (_, i) => `${tag}${i}-${Math.random().toString(36).slice(2, 8)}@rcpt.example`);

function expectLimit(res: { statusCode: number; json: <T>() => T }, cap: string, message: RegExp) {
  expect(res.statusCode).toBe(402);
  const error = res.json<{ error: { code: string; message: string; details: { cap: string } } }>().error;
  expect(error.code).toBe('BILLING_LIMIT_REACHED');
  expect(error.details.cap).toBe(cap);
  expect(error.message).toMatch(message);
}

describe('monthly caps', () => {
  it('/v1/send: the free allowance is exact; a request over it is 402 with nothing written (no email, no contact)', async () => {
    const s = await newSender(t);
    expect((await send(t.app, s.project, { to: to(3), subject: 's', body: 'b', from: s.from })).statusCode).toBe(200);
    const over = await send(t.app, s.project, { to: to(3, 'over'), subject: 's', body: 'b', from: s.from });
    expectLimit(over, 'freeAllowance', /free allowance of 5 emails a month is used up .*POST \/users\/@me\/projects\/.*\/checkout/);
    expect(await emailCount(s.project.id)).toBe(3);
    const contacts = await t.db.db.selectFrom('contacts').select('email').where('project_id', '=', s.project.id).where('email', 'like', 'over%').execute();
    expect(contacts).toEqual([]);
    expect((await send(t.app, s.project, { to: to(2), subject: 's', body: 'b', from: s.from })).statusCode).toBe(200);
    expect(await usage(s.project.id)).toMatchObject({ transactional: 5 });
    expectLimit(await send(t.app, s.project, { to: to(1), subject: 's', body: 'b', from: s.from }), 'freeAllowance', /free allowance/);
  });

  it('/v1/send: a subscribed project is held to its own transactional cap (the message says how to raise it), not to the free allowance', async () => {
    const s = await newSender(t);
    await subscribed(s, { transactional: 8 });
    expect((await send(t.app, s.project, { to: to(7), subject: 's', body: 'b', from: s.from })).statusCode).toBe(200);
    expectLimit(await send(t.app, s.project, { to: to(2), subject: 's', body: 'b', from: s.from }), 'transactional', /monthly transactional email cap of 8 is reached .*PUT \/users\/@me\/projects\/.*\/billing-limits/);
    expect(await emailCount(s.project.id)).toBe(7);
  });

  it('suppressed recipients are not counted (their rows are CANCELLED, never sent)', async () => {
    const s = await newSender(t);
    await t.db.db.insertInto('suppressions').values({ project_id: s.project.id, email: 'gone@rcpt.example', reason: 'MANUAL', detail: null, source_email_id: null }).execute();
    const res = await send(t.app, s.project, { to: ['gone@rcpt.example', ...to(5)], subject: 's', body: 'b', from: s.from });
    expect(res.statusCode, res.body).toBe(200);
    expect(await usage(s.project.id)).toMatchObject({ transactional: 5 });
  });

  it('racing: 60 parallel one-recipient sends through two API instances at a cap of 20 accept exactly 20', async () => {
    const s = await newSender(t);
    await subscribed(s, { transactional: 20 });
    // A second API process on the same database (its own group-commit batcher).
    const other = await buildApp(createAppDeps(t.config, t.db.db), { rateLimitStore: memoryStore() });
    await other.ready();
    const answers = await Promise.all(to(60, 'race').map((address, i) => send(i % 2 ? other : t.app, s.project, { to: address, subject: 's', body: 'b', from: s.from }))).finally(() => other.close());
    const codes = answers.map((a) => a.statusCode);
    expect(codes.filter((c) => c === 200)).toHaveLength(20);
    expect(codes.filter((c) => c === 402)).toHaveLength(40);
    expect(await emailCount(s.project.id)).toBe(20);
    expect(await usage(s.project.id)).toMatchObject({ transactional: 20 });
  });

  it('racing at the facade: 30 concurrent transactions that each count 1 and hold their lock 20 ms admit exactly the cap of 10', async () => {
    const s = await newSender(t);
    await subscribed(s, { workflow: 10 });
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, () =>
        t.db.db.transaction().execute(async (trx) => {
          await enforceEmailCap(trx, t.config.billing, { projectId: s.project.id, category: 'workflow', count: 1 });
          await sql`SELECT pg_sleep(0.02)`.execute(trx);
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    expect(results.filter((r) => r.status === 'rejected' && isBillingLimitError(r.reason))).toHaveLength(20);
    expect(await usage(s.project.id)).toMatchObject({ workflow: 10 });
  });

  it('campaign send: an audience larger than the cap is 402 and the campaign stays a DRAFT; within it, it is sent and counted', async () => {
    const s = await newSender(t);
    await subscribed(s, { campaign: 9 });
    await seedContacts(t.db, s.project.id, 10, { tag: 'cap' });
    const campaign = await createCampaign(t, s, { type: 'TRANSACTIONAL', audienceType: 'ALL' });
    expectLimit(await api(t.app, s.project, 'POST', `/campaigns/${campaign.id}/send`, {}), 'campaign', /monthly campaign email cap of 9/);
    expectLimit(await api(t.app, s.project, 'POST', `/campaigns/${campaign.id}/send`, { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() }), 'campaign', /campaign email cap/);
    expect((await t.db.db.selectFrom('campaigns').select('status').where('id', '=', campaign.id).executeTakeFirstOrThrow()).status).toBe('DRAFT');
    expect(await emailCount(s.project.id)).toBe(0);

    await t.db.db.updateTable('project_billing').set({ cap_campaign: 10 }).where('project_id', '=', s.project.id).execute();
    expect((await api(t.app, s.project, 'POST', `/campaigns/${campaign.id}/send`, {})).statusCode).toBe(200);
    // Materialised = total_recipients set, in the transaction that also counts the usage (the
    // email rows commit before it, from the fan-out's parts: docs/campaigns.md "Materialisation").
    await until('campaign materialised', async () => (await t.db.db.selectFrom('campaigns').select('total_recipients').where('id', '=', campaign.id).executeTakeFirstOrThrow()).total_recipients > 0);
    expect(await emailCount(s.project.id)).toBe(10);
    expect(await usage(s.project.id)).toMatchObject({ campaign: 10 });
  });

  it('campaign fan-out: a cap filled after the send was accepted ends the campaign CANCELLED with BILLING_LIMIT_REACHED, no email written', async () => {
    const s = await newSender(t);
    await subscribed(s, { campaign: 10 });
    await seedContacts(t.db, s.project.id, 6, { tag: 'late' });
    const campaign = await createCampaign(t, s, { type: 'TRANSACTIONAL', audienceType: 'ALL' });
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${campaign.id}/send`, {})).statusCode).toBe(200);
      await t.db.db.insertInto('billing_usage').values({ project_id: s.project.id, period: period(), campaign: 5 }).execute();
    });
    const row = await waitForCampaign(t, campaign.id, ['CANCELLED', 'SENT']);
    expect(row.status).toBe('CANCELLED');
    expect(row.status_reason).toBe('BILLING_LIMIT_REACHED');
    expect(row.status_message).toMatch(/monthly campaign email cap of 10 is reached \(5 queued this month, this needs 6\)/);
    expect(await emailCount(s.project.id)).toBe(0);
    expect(await usage(s.project.id)).toMatchObject({ campaign: 5 });
  });

  it('campaign test sends count as transactional', async () => {
    const s = await newSender(t);
    await subscribed(s, { transactional: 1 });
    const campaign = await createCampaign(t, s, { type: 'TRANSACTIONAL', audienceType: 'ALL' });
    expect((await api(t.app, s.project, 'POST', `/campaigns/${campaign.id}/test`, { email: 'me@rcpt.example' })).statusCode).toBe(200);
    expectLimit(await api(t.app, s.project, 'POST', `/campaigns/${campaign.id}/test`, { email: 'me@rcpt.example' }), 'transactional', /transactional email cap of 1/);
    expect(await emailCount(s.project.id)).toBe(1);
  });

  it('workflow SEND_EMAIL: over the workflow cap the step and its execution FAIL with the reason, and no email is queued', async () => {
    const s = await newSender(t);
    await subscribed(s, { workflow: 1 });
    const template = await t.db.db
      .insertInto('templates')
      .values({ project_id: s.project.id, name: 'Welcome', subject: 'Hi', body: '<p>Hello</p>', from_email: s.from, from_name: null, type: 'TRANSACTIONAL' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const wf = await createWorkflow(t.db, s.project.id, {
      eventName: 'signup',
      steps: [{ key: 'mail', type: 'SEND_EMAIL', config: { templateId: template.id }, templateId: template.id }],
      edges: [['trigger', 'mail']],
    });
    await track(t.app, s.project as TestProject, { email: 'first@rcpt.example', event: 'signup' });
    await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    await track(t.app, s.project as TestProject, { email: 'second@rcpt.example', event: 'signup' });
    const executions = await waitForExecutions(t.db, wf.id, 2, ['COMPLETED', 'FAILED']);
    const failed = executions.filter((e) => e.status === 'FAILED');
    expect(failed).toHaveLength(1);
    const steps = await stepsOf(t.db, failed[0]?.id ?? '');
    expect(steps.find((x) => x.key === 'mail')).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/monthly workflow email cap of 1 is reached/) });
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM emails WHERE project_id = ${s.project.id}::uuid AND source = 'WORKFLOW'`.execute(t.db.db);
    expect(rows[0]?.n).toBe(1);
  });
});
