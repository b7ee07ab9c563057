import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { signedEvent } from '../../helpers/fake-stripe.js';
import { addVerifiedDomain } from '../emails/helpers.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

describe('billing off (no STRIPE_SECRET_KEY)', () => {
  it('GET /config says billingEnabled: false', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/config' });
    expect(res.json<{ billingEnabled: boolean }>().billingEnabled).toBe(false);
  });

  it('every billing route answers 404 BILLING_DISABLED (to the OWNER too) and writes nothing', async () => {
    const { user, project } = await newProject(t.app);
    const base = `/users/@me/projects/${project.id}`;
    const routes: ['GET' | 'POST' | 'PUT', string, object?][] = [
      ['POST', `${base}/checkout`],
      ['POST', `${base}/billing-portal`],
      ['GET', `${base}/billing-limits`],
      ['PUT', `${base}/billing-limits`, { transactional: 10 }],
      ['GET', `${base}/billing-consumption`],
      ['GET', `${base}/billing-invoices`],
    ];
    for (const [method, url, payload] of routes) {
      const res = await t.app.inject({ method, url, headers: { cookie: user.cookie }, ...(payload && { payload }) });
      expect(res.statusCode, url).toBe(404);
      expect(res.json<{ error: { code: string } }>().error.code, url).toBe('BILLING_DISABLED');
    }
    const { payload, header } = signedEvent('whsec_any', { type: 'invoice.payment_failed', object: { id: 'in_1', object: 'invoice' } });
    const hook = await t.app.inject({ method: 'POST', url: '/webhooks/incoming/payments', headers: { 'content-type': 'application/json', 'stripe-signature': header }, payload });
    expect(hook.statusCode).toBe(404);
    expect(hook.json<{ error: { code: string } }>().error.code).toBe('BILLING_DISABLED');
    expect(await t.db.db.selectFrom('project_billing').select('project_id').where('project_id', '=', project.id).execute()).toEqual([]);
  });

  it('/openapi.json lists no billing route', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, unknown> }>();
    expect(Object.keys(doc.paths).filter((p) => /billing|checkout|payments/.test(p))).toEqual([]);
  });

  it('sending has no cap and keeps no counter', async () => {
    const { project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: bearer(project.secret), payload: { to: Array.from({ length: 3 }, (_, i) => `r${i}@rcpt.example`), subject: 's', body: 'b', from: `x@${domain}` } });
    expect(res.statusCode, res.body).toBe(200);
    expect(await t.db.db.selectFrom('billing_usage').select('project_id').where('project_id', '=', project.id).execute()).toEqual([]);
  });
});
