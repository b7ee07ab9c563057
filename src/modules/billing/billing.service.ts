import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { BillingConfig } from '../../config.js';
import type { Database, ProjectRole } from '../../db/schema.js';
import { ApiError, forbidden, notFound } from '../../lib/errors.js';
import { type BillingRow, countEmailsBySource, findMemberBilling, saveCaps, saveCustomerId } from './billing.repo.js';
import type { BillingConsumption, BillingInvoice, BillingLimits, CapUsage, PutBillingLimitsBody } from './billing.schema.js';
import { stripeFailure } from './stripe-client.js';
import { CATEGORIES, currentPeriod, readCapState, SUBSCRIBED_STATUSES } from './usage.repo.js';

/** What billing routes need: the settings, the database and the Stripe client. */
export interface BillingDeps {
  billing: BillingConfig;
  db: Kysely<Database>;
  stripe: Stripe;
  publicUrl: string;
}

/** DESIGN §4: billing is the OWNER's; ADMIN may look. */
const CAN = { read: ['OWNER', 'ADMIN'], manage: ['OWNER'] } as const satisfies Record<string, readonly ProjectRole[]>;

async function memberBilling(db: Kysely<Database>, who: { userId: string; projectId: string }, allowed: readonly ProjectRole[], action: string): Promise<BillingRow> {
  const row = await findMemberBilling(db, who.userId, who.projectId);
  if (!row) throw notFound('Project');
  if (!allowed.includes(row.role)) throw forbidden(`Only ${allowed.join(' or ')} members can ${action} (your role: ${row.role})`);
  return row;
}

const isSubscribed = (status: string | null) => status !== null && (SUBSCRIBED_STATUSES as readonly string[]).includes(status);
const WARNING_PERCENT = 80;

function capUsage(limit: number | null, usage: number, blockedElsewhere = false): CapUsage {
  const percentage = limit === null ? null : limit === 0 ? 100 : Math.round((usage / limit) * 1000) / 10;
  return {
    limit,
    usage,
    percentage,
    isWarning: percentage !== null && percentage >= WARNING_PERCENT,
    isBlocked: blockedElsewhere || (limit !== null && usage >= limit),
  };
}

/** The caps of the month with their usage (the counters every send path keeps). */
export async function getBillingLimits(deps: BillingDeps, who: { userId: string; projectId: string }): Promise<BillingLimits> {
  const row = await memberBilling(deps.db, who, CAN.read, 'read the billing limits');
  const period = currentPeriod();
  const state = await readCapState(deps.db, row.projectId, period.key);
  const total = state.usage.transactional + state.usage.campaign + state.usage.workflow;
  const free = state.subscribed ? null : capUsage(deps.billing.freeEmailsPerMonth, total);
  const of = (c: (typeof CATEGORIES)[number]) => capUsage(state.caps[c], state.usage[c], free?.isBlocked ?? false);
  return {
    plan: state.subscribed ? 'subscribed' : 'free',
    subscriptionStatus: row.status,
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
    freeAllowance: free,
    transactional: of('transactional'),
    campaign: of('campaign'),
    workflow: of('workflow'),
  };
}

/** OWNER only. Lowering a cap below this month's usage blocks the category at once. */
export async function putBillingLimits(deps: BillingDeps, who: { userId: string; projectId: string }, body: PutBillingLimitsBody): Promise<BillingLimits> {
  const row = await memberBilling(deps.db, who, CAN.manage, 'change the billing limits');
  await saveCaps(deps.db, row.projectId, body);
  return getBillingLimits(deps, who);
}

const appUrl = (deps: BillingDeps, projectId: string, query = '') => `${deps.publicUrl}/app/projects/${projectId}/billing${query}`;

/** The project's Stripe customer, created on first use (one per project; its id finds the project in webhooks). */
async function ensureCustomer(deps: BillingDeps, row: BillingRow): Promise<string> {
  if (row.customerId) return row.customerId;
  const customer = await deps.stripe.customers
    .create({ email: row.userEmail, name: row.projectName, metadata: { projectId: row.projectId } }, { idempotencyKey: `customer-${row.projectId}` })
    .catch((err: unknown) => {
      throw stripeFailure(err);
    });
  return saveCustomerId(deps.db, row.projectId, customer.id);
}

/** OWNER only: a Checkout session subscribing the project to STRIPE_PRICE_ID; 409 when it is subscribed already. */
export async function createCheckout(deps: BillingDeps, who: { userId: string; projectId: string }): Promise<{ url: string }> {
  const row = await memberBilling(deps.db, who, CAN.manage, 'subscribe');
  if (isSubscribed(row.status)) {
    throw new ApiError(409, 'ALREADY_SUBSCRIBED', 'The project has a subscription already: change or cancel it in the billing portal', {
      suggestion: `POST /users/@me/projects/${row.projectId}/billing-portal`,
    });
  }
  const customer = await ensureCustomer(deps, row);
  const session = await deps.stripe.checkout.sessions
    .create({
      mode: 'subscription',
      customer,
      client_reference_id: row.projectId,
      line_items: [{ price: deps.billing.priceId, quantity: 1 }],
      metadata: { projectId: row.projectId },
      subscription_data: { metadata: { projectId: row.projectId } },
      success_url: appUrl(deps, row.projectId, '?checkout=success'),
      cancel_url: appUrl(deps, row.projectId, '?checkout=cancelled'),
    })
    .catch((err: unknown) => {
      throw stripeFailure(err);
    });
  if (!session.url) throw stripeFailure(new Error('checkout session without url'));
  return { url: session.url };
}

/** OWNER only: Stripe's billing portal (payment method, invoices, plan, cancel); 409 before any checkout. */
export async function createPortal(deps: BillingDeps, who: { userId: string; projectId: string }): Promise<{ url: string }> {
  const row = await memberBilling(deps.db, who, CAN.manage, 'manage the billing');
  if (!row.customerId) throw noAccount(row.projectId);
  const session = await deps.stripe.billingPortal.sessions.create({ customer: row.customerId, return_url: appUrl(deps, row.projectId) }).catch((err: unknown) => {
    throw stripeFailure(err);
  });
  return { url: session.url };
}

const noAccount = (projectId: string) =>
  new ApiError(409, 'NO_BILLING_ACCOUNT', 'The project has no billing account yet: subscribe first', { suggestion: `POST /users/@me/projects/${projectId}/checkout` });

const iso = (unix: number) => new Date(unix * 1000).toISOString();

/** This month's emails from the email rows, and Stripe's preview of the next invoice when subscribed. */
export async function getConsumption(deps: BillingDeps, who: { userId: string; projectId: string }): Promise<BillingConsumption> {
  const row = await memberBilling(deps.db, who, CAN.read, 'read the billing consumption');
  const period = currentPeriod();
  const [emails, preview] = await Promise.all([
    countEmailsBySource(deps.db, row.projectId, period.start, period.end),
    row.customerId && row.subscriptionId && isSubscribed(row.status)
      ? deps.stripe.invoices.createPreview({ customer: row.customerId, subscription: row.subscriptionId }).catch((err: unknown) => {
          throw stripeFailure(err);
        })
      : undefined,
  ]);
  return {
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
    emails: { ...emails, total: emails.transactional + emails.campaign + emails.workflow },
    upcomingInvoice: preview
      ? {
          amountDue: preview.amount_due,
          total: preview.total,
          currency: preview.currency,
          periodStart: iso(preview.period_start),
          periodEnd: iso(preview.period_end),
          nextPaymentAttempt: preview.next_payment_attempt ? iso(preview.next_payment_attempt) : null,
        }
      : null,
  };
}

/** The customer's invoices, newest first (at most 24: two years of a monthly plan); none before any checkout. */
export async function listInvoices(deps: BillingDeps, who: { userId: string; projectId: string }): Promise<{ data: BillingInvoice[]; hasMore: boolean }> {
  const row = await memberBilling(deps.db, who, CAN.read, 'read the invoices');
  if (!row.customerId) return { data: [], hasMore: false };
  const page = await deps.stripe.invoices.list({ customer: row.customerId, limit: 24 }).catch((err: unknown) => {
    throw stripeFailure(err);
  });
  return {
    hasMore: page.has_more,
    data: page.data.map((i) => ({
      id: i.id ?? '',
      number: i.number,
      status: i.status,
      total: i.total,
      amountDue: i.amount_due,
      currency: i.currency,
      createdAt: iso(i.created),
      periodStart: iso(i.period_start),
      periodEnd: iso(i.period_end),
      hostedInvoiceUrl: i.hosted_invoice_url ?? null,
      pdfUrl: i.invoice_pdf ?? null,
    })),
  };
}
