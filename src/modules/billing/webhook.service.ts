import type { Kysely, Transaction } from 'kysely';
import type Stripe from 'stripe';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../lib/errors.js';
import { liftProjectSuspension, suspendProject } from '../security/index.js';
import {
  claimEvent,
  findProjectForStripe,
  isDisabledForPayment,
  noteEventProject,
  PAYMENT_FAILED_REASON,
  saveSubscription,
  type SubscriptionState,
} from './webhook.repo.js';

/** What a payment webhook did (the answer's body, and the tests' view). */
export interface WebhookOutcome {
  received: true;
  /** 'replay': the event id was applied before; 'ignored': a type or a customer we do not handle. */
  result: 'applied' | 'replay' | 'ignored';
}

/**
 * Verifies the Stripe-Signature of the raw body (HMAC with STRIPE_WEBHOOK_SECRET, 5 minutes of
 * tolerance): 400 INVALID_SIGNATURE otherwise, before anything is read or written.
 */
export function verifyStripeEvent(stripe: Stripe, raw: Buffer, signature: string | undefined, secret: string): Stripe.Event {
  if (!signature) throw new ApiError(400, 'INVALID_SIGNATURE', 'Missing Stripe-Signature header');
  try {
    return stripe.webhooks.constructEvent(raw, signature, secret);
  } catch (err) {
    throw new ApiError(400, 'INVALID_SIGNATURE', 'The Stripe-Signature does not match this payload (or is too old)', { cause: err });
  }
}

const idOf = (v: string | { id: string } | null | undefined): string | null => (typeof v === 'string' ? v : (v?.id ?? null));
const time = (unix: number | null | undefined): Date | null => (typeof unix === 'number' ? new Date(unix * 1000) : null);

function subscriptionState(sub: Stripe.Subscription, at: Date, status = sub.status): SubscriptionState {
  const item = sub.items?.data?.[0];
  return {
    customerId: idOf(sub.customer),
    subscriptionId: sub.id,
    status,
    periodStart: time(item?.current_period_start),
    periodEnd: time(item?.current_period_end),
    at,
  };
}

/**
 * Applies one verified event in one transaction, exactly once: the event id is recorded first
 * (a replay finds it and changes nothing). Handled: checkout.session.completed (the project gets
 * its customer and subscription), customer.subscription.updated (status and period; back to
 * active lifts the suspension of a project billing disabled), customer.subscription.deleted (the
 * project falls back to the free allowance), invoice.payment_failed (suspends the project, except
 * for the subscription's first invoice: a checkout whose card fails never became a subscription).
 */
export async function applyStripeEvent(db: Kysely<Database>, event: Stripe.Event): Promise<WebhookOutcome> {
  const applied = await db.transaction().execute(async (trx) => {
    if (!(await claimEvent(trx, event.id, event.type))) return 'replay' as const;
    const at = new Date(event.created * 1000);
    const outcome = await handle(trx, event, at);
    if (outcome) await noteEventProject(trx, event.id, outcome.projectId);
    return outcome ?? ('ignored' as const);
  });
  if (typeof applied === 'string') return { received: true, result: applied };
  // A paid subscription lifts the suspension billing made (the security module's lift records
  // it): after the commit, as the lift runs its own transaction.
  if (applied.lift) await liftProjectSuspension(db, { projectId: applied.projectId, by: 'billing: the subscription is active again' });
  return { received: true, result: 'applied' };
}

interface Handled {
  projectId: string;
  /** The project is disabled for a failed payment and the subscription is active again. */
  lift: boolean;
}

/** The project the event changed, or undefined when it concerns none of ours. */
async function handle(trx: Transaction<Database>, event: Stripe.Event, at: Date): Promise<Handled | undefined> {
  switch (event.type) {
    case 'checkout.session.completed': {
      const session = event.data.object;
      const subscriptionId = idOf(session.subscription);
      const projectId = await findProjectForStripe(trx, { customerId: idOf(session.customer), projectId: session.client_reference_id ?? session.metadata?.projectId });
      if (!projectId || !subscriptionId) return undefined;
      // The subscription object follows in customer.subscription.* events; until then it is active.
      await saveSubscription(trx, projectId, { customerId: idOf(session.customer), subscriptionId, status: 'active', periodStart: null, periodEnd: null, at });
      return { projectId, lift: await isDisabledForPayment(trx, projectId) };
    }
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const sub = event.data.object;
      const projectId = await findProjectForStripe(trx, { customerId: idOf(sub.customer), projectId: sub.metadata?.projectId });
      if (!projectId) return undefined;
      const status = event.type === 'customer.subscription.deleted' ? 'canceled' : sub.status;
      const stored = await saveSubscription(trx, projectId, subscriptionState(sub, at, status));
      const active = stored && (status === 'active' || status === 'trialing');
      return { projectId, lift: active && (await isDisabledForPayment(trx, projectId)) };
    }
    case 'invoice.payment_failed': {
      const invoice = event.data.object;
      const projectId = await findProjectForStripe(trx, { customerId: idOf(invoice.customer), projectId: invoice.parent?.subscription_details?.metadata?.projectId });
      if (!projectId) return undefined;
      if (invoice.billing_reason !== 'subscription_create') {
        // The one way a project is disabled: recorded as a BILLING suspension, its queued mail and
        // workflows cancelled, its OWNERs and ADMINs emailed (nothing when it is disabled already).
        await suspendProject(trx, { projectId, source: 'BILLING', reason: PAYMENT_FAILED_REASON, metrics: { invoice: invoice.id ?? null } });
      }
      return { projectId, lift: false };
    }
    default:
      return undefined;
  }
}
