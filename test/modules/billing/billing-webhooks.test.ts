import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { sql } from 'kysely';
import { newProject, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { type FakeStripe, signedEvent, startFakeStripe } from '../../helpers/fake-stripe.js';
import { PAYMENT_FAILED_REASON } from '../../../src/modules/billing/webhook.repo.js';

const SECRET = 'whsec_test_webhooks_secret';
let t: TestApp;
let stripe: FakeStripe;

beforeAll(async () => {
  stripe = await startFakeStripe();
  t = await createTestApp({ env: { STRIPE_SECRET_KEY: 'sk_test_hooks', STRIPE_WEBHOOK_SECRET: SECRET, STRIPE_PRICE_ID: 'price_hooks', STRIPE_API_URL: stripe.url } });
});
afterAll(async () => {
  await t.close();
  await stripe.close();
});

const post = (payload: string, header?: string) =>
  t.app.inject({ method: 'POST', url: '/webhooks/incoming/payments', headers: { 'content-type': 'application/json', ...(header !== undefined && { 'stripe-signature': header }) }, payload });

async function deliver(event: Parameters<typeof signedEvent>[1]) {
  const { payload, header } = signedEvent(SECRET, event);
  const res = await post(payload, header);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ received: true; result: string }>();
}

const billing = (projectId: string) => t.db.db.selectFrom('project_billing').selectAll().where('project_id', '=', projectId).executeTakeFirst();
const project = (id: string) => t.db.db.selectFrom('projects').select(['disabled', 'disabled_reason']).where('id', '=', id).executeTakeFirstOrThrow();

/** A project that went through checkout: it has a customer (as POST …/checkout records it). */
async function customerProject(): Promise<{ project: TestProject; customer: string; user: SignedInUser }> {
  const { project: p, user } = await newProject(t.app);
  const customer = `cus_${p.id.replace(/-/g, '')}`;
  await t.db.db.insertInto('project_billing').values({ project_id: p.id, stripe_customer_id: customer }).execute();
  return { project: p, customer, user };
}

const subscription = (customer: string, status: string, start = 1_767_225_600) => ({
  id: `sub_${customer}`, object: 'subscription', customer, status, metadata: {},
  items: { object: 'list', data: [{ id: 'si_1', object: 'subscription_item', current_period_start: start, current_period_end: start + 31 * 86400 }] },
});

describe('POST /webhooks/incoming/payments', () => {
  it('checkout.session.completed gives the project its subscription (found by client_reference_id when it has no customer yet)', async () => {
    const { project: p } = await newProject(t.app);
    const out = await deliver({ type: 'checkout.session.completed', object: { id: 'cs_1', object: 'checkout.session', customer: 'cus_new1', subscription: 'sub_new1', client_reference_id: p.id, metadata: { projectId: p.id } } });
    expect(out).toEqual({ received: true, result: 'applied' });
    expect(await billing(p.id)).toMatchObject({ stripe_customer_id: 'cus_new1', stripe_subscription_id: 'sub_new1', subscription_status: 'active' });
    const limits = await t.db.db.selectFrom('billing_events').selectAll().where('project_id', '=', p.id).execute();
    expect(limits.map((e) => e.type)).toEqual(['checkout.session.completed']);
  });

  it('customer.subscription.updated stores the status and period; an older event does not overwrite a newer one', async () => {
    const { project: p, customer } = await customerProject();
    const now = Math.floor(Date.now() / 1000);
    await deliver({ type: 'customer.subscription.updated', created: now, object: subscription(customer, 'active') });
    expect(await billing(p.id)).toMatchObject({ subscription_status: 'active', stripe_subscription_id: `sub_${customer}`, current_period_start: new Date(1_767_225_600_000) });
    await deliver({ type: 'customer.subscription.updated', created: now - 60, object: subscription(customer, 'incomplete') });
    expect((await billing(p.id))?.subscription_status).toBe('active');
  });

  it('customer.subscription.deleted puts the project back on the free allowance', async () => {
    const { project: p, customer, user } = await customerProject();
    await deliver({ type: 'customer.subscription.updated', object: subscription(customer, 'active') });
    await deliver({ type: 'customer.subscription.deleted', object: subscription(customer, 'canceled') });
    expect((await billing(p.id))?.subscription_status).toBe('canceled');
    const res = await t.app.inject({ method: 'GET', url: `/users/@me/projects/${p.id}/billing-limits`, headers: { cookie: user.cookie } });
    expect(res.json<{ plan: string }>().plan).toBe('free');
  });

  it('invoice.payment_failed disables the project (renewal) but not on the first invoice; paying again re-enables it', async () => {
    const { project: p, customer } = await customerProject();
    await deliver({ type: 'invoice.payment_failed', object: { id: 'in_first', object: 'invoice', customer, billing_reason: 'subscription_create' } });
    expect(await project(p.id)).toEqual({ disabled: false, disabled_reason: null });

    await deliver({ type: 'invoice.payment_failed', object: { id: 'in_renew', object: 'invoice', customer, billing_reason: 'subscription_cycle' } });
    expect(await project(p.id)).toEqual({ disabled: true, disabled_reason: PAYMENT_FAILED_REASON });
    const send = await t.app.inject({ method: 'POST', url: '/v1/send', headers: { authorization: `Bearer ${p.secret}` }, payload: { to: 'a@rcpt.example', subject: 's', body: 'b', from: 'x@y.example' } });
    expect(send.statusCode).toBe(403);
    expect(send.json<{ error: { code: string } }>().error.code).toBe('PROJECT_DISABLED');
    // Its queued mail and workflows are cancelled like at every disabling (keyed jobs queued in the same transaction).
    const { rows: jobs } = await sql<{ key: string }>`SELECT key FROM graphile_worker._private_jobs WHERE key IN (${`workflow-cancel-project:${p.id}`}, ${`project-mail-cancel:${p.id}`}) ORDER BY key`.execute(t.db.db);
    expect(jobs.map((j) => j.key)).toEqual([`project-mail-cancel:${p.id}`, `workflow-cancel-project:${p.id}`]);

    const suspensions = () => t.db.db.selectFrom('project_suspensions').select(['source', 'reason', 'lifted_by']).where('project_id', '=', p.id).execute();
    expect(await suspensions()).toEqual([{ source: 'BILLING', reason: PAYMENT_FAILED_REASON, lifted_by: null }]);
    // Its OWNERs and ADMINs are told (the instance's own mail).
    expect(await t.db.db.selectFrom('emails').select('system_kind').where('system_project_id', '=', p.id).execute()).toEqual([{ system_kind: 'project-disabled' }]);

    await deliver({ type: 'customer.subscription.updated', object: subscription(customer, 'active') });
    expect(await project(p.id)).toEqual({ disabled: false, disabled_reason: null });
    expect(await suspensions()).toEqual([{ source: 'BILLING', reason: PAYMENT_FAILED_REASON, lifted_by: 'billing: the subscription is active again' }]);
  });

  it('a project disabled for another reason is not re-enabled by a payment', async () => {
    const { project: p, customer } = await customerProject();
    await t.db.db.updateTable('projects').set({ disabled: true, disabled_reason: 'disabled by an operator' }).where('id', '=', p.id).execute();
    await deliver({ type: 'invoice.payment_failed', object: { id: 'in_x', object: 'invoice', customer, billing_reason: 'subscription_cycle' } });
    await deliver({ type: 'customer.subscription.updated', object: subscription(customer, 'active') });
    expect(await project(p.id)).toEqual({ disabled: true, disabled_reason: 'disabled by an operator' });
  });

  it('refuses an unsigned, a wrongly signed, a tampered (twice) and a stale payload with 400 INVALID_SIGNATURE, changing nothing', async () => {
    const { project: p, customer } = await customerProject();
    const event = { type: 'invoice.payment_failed', object: { id: 'in_evil', object: 'invoice', customer, billing_reason: 'subscription_cycle' } };
    const good = signedEvent(SECRET, event);
    const wrong = signedEvent('whsec_not_the_secret', event);
    const stale = signedEvent(SECRET, event, { timestamp: Math.floor(Date.now() / 1000) - 3600 });
    const fresh = Stripe.webhooks.generateTestHeaderString({ payload: good.payload, secret: SECRET });
    for (const [payload, header] of [
      [good.payload, undefined],
      [wrong.payload, wrong.header],
      [good.payload.replace('subscription_cycle', 'subscription_create'), good.header],
      [stale.payload, stale.header],
      [good.payload + ' ', fresh],
    ] as const) {
      const res = await post(payload, header);
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('INVALID_SIGNATURE');
    }
    expect(await project(p.id)).toEqual({ disabled: false, disabled_reason: null });
    expect(await t.db.db.selectFrom('billing_events').select('id').where('type', '=', 'invoice.payment_failed').where('project_id', '=', p.id).execute()).toEqual([]);
  });

  it('a replayed event (same id) changes nothing: re-enabled by hand, the replayed payment failure does not disable again', async () => {
    const { project: p, customer } = await customerProject();
    const { payload, header } = signedEvent(SECRET, { id: `evt_replay_${p.id}`, type: 'invoice.payment_failed', object: { id: 'in_r', object: 'invoice', customer, billing_reason: 'subscription_cycle' } });
    expect((await post(payload, header)).json()).toEqual({ received: true, result: 'applied' });
    expect((await project(p.id)).disabled).toBe(true);
    await t.db.db.updateTable('projects').set({ disabled: false, disabled_reason: null }).where('id', '=', p.id).execute();
    const again = await post(payload, header);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ received: true, result: 'replay' });
    expect((await project(p.id)).disabled).toBe(false);
  });

  it('events of other types, or of customers that are not ours, are acknowledged and ignored', async () => {
    expect(await deliver({ type: 'charge.succeeded', object: { id: 'ch_1', object: 'charge' } })).toEqual({ received: true, result: 'ignored' });
    expect(await deliver({ type: 'invoice.payment_failed', object: { id: 'in_z', object: 'invoice', customer: 'cus_unknown', billing_reason: 'subscription_cycle' } })).toEqual({ received: true, result: 'ignored' });
  });
});
