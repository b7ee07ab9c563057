import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, signUp, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { type FakeStripe, startFakeStripe } from '../../helpers/fake-stripe.js';

let t: TestApp;
let stripe: FakeStripe;

const BILLING_ENV = { STRIPE_SECRET_KEY: 'sk_test_billing', STRIPE_WEBHOOK_SECRET: 'whsec_test_billing_secret', STRIPE_PRICE_ID: 'price_test_pro' };

beforeAll(async () => {
  stripe = await startFakeStripe();
  t = await createTestApp({ env: { ...BILLING_ENV, STRIPE_API_URL: stripe.url } });
});
afterAll(async () => {
  await t.close();
  await stripe.close();
});

const call = (user: SignedInUser, method: 'GET' | 'POST' | 'PUT', project: TestProject, path: string, payload?: object) =>
  t.app.inject({ method, url: `/users/@me/projects/${project.id}/${path}`, headers: { cookie: user.cookie }, ...(payload !== undefined && { payload }) });

async function addMember(project: TestProject, role: 'ADMIN' | 'MEMBER'): Promise<SignedInUser> {
  const user = await signUp(t.app);
  await t.db.db.insertInto('memberships').values({ project_id: project.id, user_id: user.id, role }).execute();
  return user;
}

const billingRow = (projectId: string) => t.db.db.selectFrom('project_billing').selectAll().where('project_id', '=', projectId).executeTakeFirst();

describe('billing on', () => {
  it('GET /config says billingEnabled: true', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/config' });
    expect(res.json<{ billingEnabled: boolean }>().billingEnabled).toBe(true);
  });

  it('checkout: creates the project\'s customer once, answers the session url, subscription mode with STRIPE_PRICE_ID', async () => {
    const { user, project } = await newProject(t.app);
    const first = await call(user, 'POST', project, 'checkout');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json<{ url: string }>().url).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/);
    const customer = (await billingRow(project.id))?.stripe_customer_id;
    expect(customer).toMatch(/^cus_/);
    const session = stripe.calls.filter((c) => c.path === '/v1/checkout/sessions').at(-1);
    expect(session?.authorization).toBe('Bearer sk_test_billing');
    expect(session?.form).toMatchObject({
      mode: 'subscription',
      customer,
      client_reference_id: project.id,
      'line_items[0][price]': 'price_test_pro',
      'line_items[0][quantity]': '1',
      'subscription_data[metadata][projectId]': project.id,
    });
    expect(session?.form.success_url).toBe(`${t.config.publicUrl}/app/projects/${project.id}/billing?checkout=success`);
    const created = stripe.calls.filter((c) => c.path === '/v1/customers' && c.form['metadata[projectId]'] === project.id);
    expect(created).toHaveLength(1);
    expect(created[0]?.form.email).toBe(user.email);

    // A second checkout reuses the customer.
    expect((await call(user, 'POST', project, 'checkout')).statusCode).toBe(200);
    expect(stripe.calls.filter((c) => c.path === '/v1/customers' && c.form['metadata[projectId]'] === project.id)).toHaveLength(1);
  });

  it('checkout answers 409 ALREADY_SUBSCRIBED when the project is subscribed', async () => {
    const { user, project } = await newProject(t.app);
    await t.db.db.insertInto('project_billing').values({ project_id: project.id, stripe_customer_id: `cus_${project.id}`, stripe_subscription_id: `sub_${project.id}`, subscription_status: 'active' }).execute();
    const res = await call(user, 'POST', project, 'checkout');
    expect(res.statusCode).toBe(409);
    expect(res.json<{ error: { code: string } }>().error.code).toBe('ALREADY_SUBSCRIBED');
  });

  it('billing-portal: 409 NO_BILLING_ACCOUNT before any checkout, then the portal url for the customer', async () => {
    const { user, project } = await newProject(t.app);
    const before = await call(user, 'POST', project, 'billing-portal');
    expect(before.statusCode).toBe(409);
    expect(before.json<{ error: { code: string } }>().error.code).toBe('NO_BILLING_ACCOUNT');
    await call(user, 'POST', project, 'checkout');
    const res = await call(user, 'POST', project, 'billing-portal');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<{ url: string }>().url).toMatch(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_/);
    const portal = stripe.calls.filter((c) => c.path === '/v1/billing_portal/sessions').at(-1);
    expect(portal?.form).toEqual({ customer: (await billingRow(project.id))?.stripe_customer_id, return_url: `${t.config.publicUrl}/app/projects/${project.id}/billing` });
  });

  it('a Stripe failure is 502 BILLING_PROVIDER_ERROR and records no customer', async () => {
    const { user, project } = await newProject(t.app);
    stripe.failNext = 2; // the client retries once
    const res = await call(user, 'POST', project, 'checkout');
    expect(res.statusCode).toBe(502);
    expect(res.json<{ error: { code: string } }>().error.code).toBe('BILLING_PROVIDER_ERROR');
    expect(await billingRow(project.id)).toBeUndefined();
  });

  it('billing-limits: the free allowance and no caps by default', async () => {
    const { user, project } = await newProject(t.app);
    const res = await call(user, 'GET', project, 'billing-limits');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      plan: 'free',
      subscriptionStatus: null,
      freeAllowance: { limit: 1000, usage: 0, percentage: 0, isWarning: false, isBlocked: false },
      transactional: { limit: null, usage: 0, percentage: null, isWarning: false, isBlocked: false },
      campaign: { limit: null, usage: 0 },
      workflow: { limit: null, usage: 0 },
    });
    const now = new Date();
    expect(body.period.start).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
  });

  it('PUT billing-limits sets caps, null removes one, an omitted one is kept; usage shows percentage, warning and block', async () => {
    const { user, project } = await newProject(t.app);
    const put = await call(user, 'PUT', project, 'billing-limits', { transactional: 100, campaign: 50, workflow: 10 });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ transactional: { limit: 100 }, campaign: { limit: 50 }, workflow: { limit: 10 } });
    const period = new Date().toISOString().slice(0, 8) + '01';
    await t.db.db.insertInto('billing_usage').values({ project_id: project.id, period, transactional: 85, campaign: 50, workflow: 1 }).execute();
    const res = await call(user, 'PUT', project, 'billing-limits', { workflow: null });
    expect(res.json()).toMatchObject({
      transactional: { limit: 100, usage: 85, percentage: 85, isWarning: true, isBlocked: false },
      campaign: { limit: 50, usage: 50, percentage: 100, isWarning: true, isBlocked: true },
      workflow: { limit: null, usage: 1, percentage: null, isBlocked: false },
      freeAllowance: { limit: 1000, usage: 136, percentage: 13.6 },
    });
  });

  it('PUT billing-limits refuses bad values with 422 naming the field, and changes nothing', async () => {
    const { user, project } = await newProject(t.app);
    await call(user, 'PUT', project, 'billing-limits', { transactional: 7 });
    for (const [payload, field] of [
      [{ transactional: -1 }, 'transactional'],
      [{ campaign: 1.5 }, 'campaign'],
      [{ workflow: '100' }, 'workflow'],
      [{ transactional: 1_000_000_001 }, 'transactional'],
      [{ transactional: 5, emails: 3 }, 'emails'],
    ] as const) {
      const res = await call(user, 'PUT', project, 'billing-limits', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      const error = res.json<{ error: { code: string; errors: { field: string }[] } }>().error;
      expect(error.code).toBe('VALIDATION_ERROR');
      expect(error.errors.map((e) => e.field)).toContain(field);
    }
    const row = await billingRow(project.id);
    expect([row?.cap_transactional, row?.cap_campaign, row?.cap_workflow].map((v) => (v === null || v === undefined ? v : Number(v)))).toEqual([7, null, null]);
  });

  it('roles: ADMIN reads limits, consumption and invoices but cannot change limits, check out or open the portal; MEMBER gets 403; a stranger 404', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(project, 'ADMIN');
    const member = await addMember(project, 'MEMBER');
    const stranger = await signUp(t.app);
    for (const path of ['billing-limits', 'billing-consumption', 'billing-invoices']) {
      expect((await call(admin, 'GET', project, path)).statusCode, path).toBe(200);
      expect((await call(member, 'GET', project, path)).statusCode, path).toBe(403);
      expect((await call(stranger, 'GET', project, path)).statusCode, path).toBe(404);
    }
    const writes: ['POST' | 'PUT', string, object?][] = [['PUT', 'billing-limits', { transactional: 1 }], ['POST', 'checkout'], ['POST', 'billing-portal']];
    for (const [method, path, payload] of writes) {
      expect((await call(admin, method, project, path, payload)).statusCode, path).toBe(403);
      expect((await call(member, method, project, path, payload)).statusCode, path).toBe(403);
      expect((await call(stranger, method, project, path, payload)).statusCode, path).toBe(404);
    }
    expect(await billingRow(project.id)).toBeUndefined();
    expect((await call(owner, 'PUT', project, 'billing-limits', { transactional: 1 })).statusCode).toBe(200);
  });

  it('billing-consumption counts this month\'s email rows per category (not cancelled ones, not other projects) and previews the upcoming invoice when subscribed', async () => {
    const { user, project } = await newProject(t.app);
    const other = await newProject(t.app);
    const row = (projectId: string, source: 'SEND' | 'CAMPAIGN' | 'WORKFLOW' | 'TEST', status: 'PENDING' | 'SENT' | 'CANCELLED', createdAt = new Date()) => ({
      project_id: projectId, source, type: 'TRANSACTIONAL' as const, to_email: 'a@rcpt.example', from_email: 'x@s.example', subject: 's', html: 'h',
      message_id: `<${Math.random()}@s.example>`, status, created_at: createdAt,
    });
    const lastMonth = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1) - 1000);
    await t.db.db.insertInto('emails').values([
      row(project.id, 'SEND', 'SENT'), row(project.id, 'SEND', 'PENDING'), row(project.id, 'TEST', 'SENT'), row(project.id, 'SEND', 'CANCELLED'),
      row(project.id, 'CAMPAIGN', 'SENT'), row(project.id, 'WORKFLOW', 'SENT'), row(project.id, 'WORKFLOW', 'SENT'),
      row(project.id, 'SEND', 'SENT', lastMonth), row(other.project.id, 'SEND', 'SENT'),
    ]).execute();
    const free = await call(user, 'GET', project, 'billing-consumption');
    expect(free.statusCode, free.body).toBe(200);
    expect(free.json()).toMatchObject({ emails: { transactional: 3, campaign: 1, workflow: 2, total: 6 }, upcomingInvoice: null });

    await t.db.db.insertInto('project_billing').values({ project_id: project.id, stripe_customer_id: `cus_c${project.id}`, stripe_subscription_id: `sub_c${project.id}`, subscription_status: 'active' }).execute();
    const paid = await call(user, 'GET', project, 'billing-consumption');
    expect(paid.json()).toMatchObject({ upcomingInvoice: { amountDue: 2900, total: 2900, currency: 'usd' } });
    const preview = stripe.calls.filter((c) => c.path === '/v1/invoices/create_preview').at(-1);
    expect(preview?.form).toEqual({ customer: `cus_c${project.id}`, subscription: `sub_c${project.id}` });
  });

  it('billing-invoices: none before any checkout (no Stripe call), then the customer\'s invoices', async () => {
    const { user, project } = await newProject(t.app);
    const calls = stripe.calls.length;
    const none = await call(user, 'GET', project, 'billing-invoices');
    expect(none.json()).toEqual({ data: [], hasMore: false });
    expect(stripe.calls.length).toBe(calls);
    await call(user, 'POST', project, 'checkout');
    const customer = (await billingRow(project.id))?.stripe_customer_id ?? '';
    stripe.invoices.push(
      { id: 'in_2', customer, number: 'INV-2', status: 'open', total: 2900, amount_due: 2900, currency: 'usd', created: 1_770_000_000, period_start: 1_767_000_000, period_end: 1_770_000_000 },
      { id: 'in_1', customer, number: 'INV-1', status: 'paid', total: 2900, amount_due: 0, currency: 'usd', created: 1_767_000_000, period_start: 1_764_000_000, period_end: 1_767_000_000 },
      { id: 'in_x', customer: 'cus_someone_else', number: 'X', status: 'paid', total: 1, amount_due: 0, currency: 'usd', created: 1, period_start: 1, period_end: 1 },
    );
    const res = await call(user, 'GET', project, 'billing-invoices');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      hasMore: false,
      data: [
        { id: 'in_2', number: 'INV-2', status: 'open', total: 2900, amountDue: 2900, currency: 'usd', createdAt: new Date(1_770_000_000_000).toISOString(), periodStart: new Date(1_767_000_000_000).toISOString(), periodEnd: new Date(1_770_000_000_000).toISOString(), hostedInvoiceUrl: 'https://invoice.stripe.test/in_2', pdfUrl: 'https://pay.stripe.test/in_2.pdf' },
        expect.objectContaining({ id: 'in_1', status: 'paid', amountDue: 0 }),
      ],
    });
  });
});

describe('setup state', () => {
  it('GET /projects/:id/setup-state reports the plan and whether the free allowance is used up', async () => {
    const { user, project } = await newProject(t.app);
    const read = async () => (await t.app.inject({ method: 'GET', url: `/projects/${project.id}/setup-state`, headers: { cookie: user.cookie, 'x-project-id': project.id } })).json<{ billing: unknown }>().billing;
    expect(await read()).toEqual({ enabled: true, plan: 'free', freeAllowanceUsedUp: false });
    await t.db.db.insertInto('billing_usage').values({ project_id: project.id, period: new Date().toISOString().slice(0, 8) + '01', transactional: 600, campaign: 400 }).execute();
    expect(await read()).toEqual({ enabled: true, plan: 'free', freeAllowanceUsedUp: true });
    await t.db.db.insertInto('project_billing').values({ project_id: project.id, subscription_status: 'active' }).execute();
    expect(await read()).toEqual({ enabled: true, plan: 'subscribed', freeAllowanceUsedUp: false });
  });
});
