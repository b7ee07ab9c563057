import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { Roles } from '../../http/context.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import {
  BillingConsumption,
  BillingInvoices,
  BillingLimits,
  BillingUrl,
  ProjectIdParams,
  PutBillingLimitsBody,
  WebhookAnswer,
} from './billing.schema.js';
import { type BillingDeps, createCheckout, createPortal, getBillingLimits, getConsumption, listInvoices, putBillingLimits } from './billing.service.js';
import { createStripeClient } from './stripe-client.js';
import { applyStripeEvent, verifyStripeEvent } from './webhook.service.js';

/** Stripe's events are small; anything larger is not one. */
const WEBHOOK_BODY_LIMIT = 512 * 1024;

const disabled = () =>
  new ApiError(404, 'BILLING_DISABLED', 'Billing is not enabled on this instance (STRIPE_SECRET_KEY is unset): sending has no caps', {
    suggestion: 'GET /config says billingEnabled',
  });

function who(request: FastifyRequest, params: { id: string }): { userId: string; projectId: string } {
  if (!request.user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Not signed in: log in with POST /auth/login');
  return { userId: request.user.id, projectId: params.id };
}

/**
 * The billing routes (docs/billing.md). With billing off (no STRIPE_SECRET_KEY) every one answers
 * 404 BILLING_DISABLED and none is listed in /openapi.json.
 */
export async function billingRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const billing = deps.config.billing;
  const b: BillingDeps | undefined = billing && { billing, db: deps.db, stripe: await createStripeClient(billing), publicUrl: deps.config.publicUrl };
  const on = (): BillingDeps => {
    if (!b) throw disabled();
    return b;
  };
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Billing'];
  const hide = !b;
  const owners = { auth: 'user', roles: Roles.owners } as const;
  const admins = { auth: 'user', roles: Roles.admins } as const;
  const base = '/users/@me/projects/:id';

  r.post(`${base}/checkout`, {
    config: owners,
    schema: { tags, hide, summary: 'Start a Stripe Checkout subscribing the project (OWNER); 409 when subscribed already', params: ProjectIdParams, response: { 200: BillingUrl } },
    handler: async (request) => createCheckout(on(), who(request, request.params)),
  });

  r.post(`${base}/billing-portal`, {
    config: owners,
    schema: { tags, hide, summary: "Open Stripe's billing portal for the project (OWNER)", params: ProjectIdParams, response: { 200: BillingUrl } },
    handler: async (request) => createPortal(on(), who(request, request.params)),
  });

  r.get(`${base}/billing-limits`, {
    config: admins,
    schema: { tags, hide, summary: 'Monthly caps per category and their usage (OWNER, ADMIN)', params: ProjectIdParams, response: { 200: BillingLimits } },
    handler: async (request) => getBillingLimits(on(), who(request, request.params)),
  });

  r.put(`${base}/billing-limits`, {
    config: owners,
    schema: { tags, hide, summary: 'Set or remove monthly caps per category (OWNER)', params: ProjectIdParams, body: PutBillingLimitsBody, response: { 200: BillingLimits } },
    handler: async (request) => putBillingLimits(on(), who(request, request.params), request.body),
  });

  r.get(`${base}/billing-consumption`, {
    config: admins,
    schema: { tags, hide, summary: "This month's emails per category and the upcoming invoice (OWNER, ADMIN)", params: ProjectIdParams, response: { 200: BillingConsumption } },
    handler: async (request) => getConsumption(on(), who(request, request.params)),
  });

  r.get(`${base}/billing-invoices`, {
    config: admins,
    schema: { tags, hide, summary: "The project's Stripe invoices, newest first (OWNER, ADMIN)", params: ProjectIdParams, response: { 200: BillingInvoices } },
    handler: async (request) => listInvoices(on(), who(request, request.params)),
  });

  // The signature covers the exact bytes: this route alone reads its JSON body raw.
  await app.register(async (raw) => {
    raw.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));
    raw.withTypeProvider<ZodTypeProvider>().post('/webhooks/incoming/payments', {
      bodyLimit: WEBHOOK_BODY_LIMIT,
      config: { auth: 'none', rateLimit: false },
      schema: { tags, hide, summary: 'Stripe webhook: verified with STRIPE_WEBHOOK_SECRET, each event applied once', response: { 200: WebhookAnswer } },
      handler: async (request) => {
        const { stripe, billing: settings, db } = on();
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const header = request.headers['stripe-signature'];
        const event = verifyStripeEvent(stripe, body, Array.isArray(header) ? header[0] : header, settings.webhookSecret);
        return applyStripeEvent(db, event);
      },
    });
  });
}
