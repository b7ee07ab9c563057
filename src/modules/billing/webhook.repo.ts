import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';

/**
 * Why billing suspends a project (projects.disabled_reason). Only a project disabled with this
 * reason is enabled again by billing: an operator's or the reputation check's stays disabled.
 */
export const PAYMENT_FAILED_REASON = 'billing: a subscription payment failed (update the payment method in the billing portal)';

/** Records the event id; false when it was applied before (a replay: change nothing). */
export async function claimEvent(trx: Transaction<Database>, id: string, type: string): Promise<boolean> {
  const row = await trx.insertInto('billing_events').values({ id, type }).onConflict((oc) => oc.column('id').doNothing()).returning('id').executeTakeFirst();
  return row !== undefined;
}

export async function noteEventProject(trx: Transaction<Database>, id: string, projectId: string): Promise<void> {
  await trx.updateTable('billing_events').set({ project_id: projectId }).where('id', '=', id).execute();
}

/** The project a Stripe customer (or, failing that, our own metadata/client reference) belongs to. */
export async function findProjectForStripe(trx: Transaction<Database>, ref: { customerId?: string | null; projectId?: string | null }): Promise<string | undefined> {
  if (ref.customerId) {
    const row = await trx.selectFrom('project_billing').select('project_id').where('stripe_customer_id', '=', ref.customerId).executeTakeFirst();
    if (row) return row.project_id;
  }
  if (ref.projectId && isUuid(ref.projectId)) {
    const row = await trx.selectFrom('projects').select('id').where('id', '=', ref.projectId).executeTakeFirst();
    return row?.id;
  }
  return undefined;
}

export interface SubscriptionState {
  customerId: string | null;
  subscriptionId: string;
  status: string;
  periodStart: Date | null;
  periodEnd: Date | null;
  /** The event's `created`: a state older than the one stored is ignored (Stripe does not order deliveries). */
  at: Date;
}

/** Stores the subscription's state unless a newer event already did; true when stored. */
export async function saveSubscription(trx: Transaction<Database>, projectId: string, s: SubscriptionState): Promise<boolean> {
  const { rows } = await sql`
    INSERT INTO project_billing AS b (project_id, stripe_customer_id, stripe_subscription_id, subscription_status, current_period_start, current_period_end, stripe_state_at)
    VALUES (${projectId}::uuid, ${s.customerId}, ${s.subscriptionId}, ${s.status}, ${s.periodStart}, ${s.periodEnd}, ${s.at})
    ON CONFLICT (project_id) DO UPDATE SET
      stripe_customer_id = COALESCE(EXCLUDED.stripe_customer_id, b.stripe_customer_id),
      stripe_subscription_id = EXCLUDED.stripe_subscription_id, subscription_status = EXCLUDED.subscription_status,
      current_period_start = COALESCE(EXCLUDED.current_period_start, b.current_period_start),
      current_period_end = COALESCE(EXCLUDED.current_period_end, b.current_period_end),
      stripe_state_at = EXCLUDED.stripe_state_at, updated_at = now()
    WHERE b.stripe_state_at IS NULL OR b.stripe_state_at <= EXCLUDED.stripe_state_at
    RETURNING 1`.execute(trx);
  return rows.length > 0;
}

/** Whether the project is disabled, and by billing (an operator's or the reputation check's disabling is not billing's to lift). */
export async function isDisabledForPayment(trx: Transaction<Database>, projectId: string): Promise<boolean> {
  const row = await trx.selectFrom('projects').select(['disabled', 'disabled_reason']).where('id', '=', projectId).executeTakeFirst();
  return row?.disabled === true && row.disabled_reason === PAYMENT_FAILED_REASON;
}
